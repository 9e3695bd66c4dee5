"""The help (``?``): every key, how cards and piles are drawn, and the screen's own keys first."""

from __future__ import annotations

CARDS_HELP = """Cards: rank (A 2-9 T J Q K) then suit (C S H D): TC is the ten of clubs
  (hearts and diamonds red). ▒5: five cards face down; __: an empty
  pile; +3: the pile's three oldest face-up cards not shown; …3: three
  cards of a run folded (its first and last shown); a picked run is
  drawn reversed."""
"""How a card and a pile are drawn (the race's help and practice's): colour tells red from black
only, and the marks were nowhere said (an appearance trial)."""

HELP = (
    """Keys  (the rules of each game: docs/rules.md)
Race: pick a pile with its key, then the target pile
  1-9 0 - =   piles 1 to 12 (0 is pile 10, - 11, = 12)
  ↑ / ↓       Spider: more / fewer cards of the picked run
              (or the same pile key again: one card fewer; past
              one card, the whole run again; a lone card, or
              escape, puts it down)
  f           the picked pile home;  k / a: to its king / ace foundation
  d           deal (Spider: a card on each pile; Louis: the stock)
  r r         redeal (St. Helena, Louis)
  u           undo
  o           Spider: full suits go home by themselves (on/off)
  h           no hints in a race (patience-race practice has them)
  x x         resign      escape  drop the picked pile
  mouse       click a card: pick the run from it; click a pile: drop
              there; click a foundation: home; click the stock: deal;
              click a key on the bottom line (rr redeal, u undo...);
              a right click puts the picked run down
  q q         quit (on a server your seat waits: join again to resume;
              play's own server ends with it)
  ctrl+z      to the shell; fg comes back (a race goes on meanwhile:
              your seat waits as for a dropped connection; not in play,
              whose server would stop with it)
"""
    + CARDS_HELP
    + """
Spider's score is xpat2's (0-1000); aisleriot's (0-96) is in brackets.
St. Helena, Louis: kings above the aces in the middle; every pile's top
card lies next to them, underlined (a small screen: one row a pile, top
card on the right). A redeal gathers piles 12..1, deals from pile 1.
Lobby: r ready / not ready (n: ready);  the host: s ready and start,
  g game, o/v options, m mode, t time, u undo, +/- seats, p private,
  w winnable, k remove someone (a change stops a countdown).
  q leave (q q in the countdown, or with other people here)
Results: n rematch (watching: n follows the room once it has moved
  on; in its lobby, r or n: ready), the host: s to the lobby at once;
  q leave (q q with others here)
Watching: everyone's progress live (the boards stay private);
  n follows the room to its next race once it has moved on; in the
  lobby, r takes a free seat to race;
  q leave (q q during a race)
?  this help: ↑↓ j k space scroll it, any other key goes back."""
)


def help_text(phase: str, undo: bool = True) -> str:
    """:data:`HELP` with the keys of the screen it is asked from first: in the lobby and the
    results, their lines came after two pages of the race's (a trial).  With ``undo`` false (a
    room with undo off), the race's undo key is not listed (the footer left it out, the help
    did not: a rules trial)."""
    text = HELP
    if not undo:
        text = text.replace(
            "\n  u           undo\n", "\n  u           (undo is off in this room)\n"
        )
        text = text.replace("(rr redeal, u undo...)", "(rr redeal, x x resign...)")
    lines = text.splitlines()
    start = {
        "lobby": "Lobby:",
        "countdown": "Lobby:",
        "results": "Results:",
        "watching": "Watching:",
    }.get(phase)
    if start is None:
        return text
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    first = [lines[0], *lines[at:end]]
    rest = [*lines[1:at], *lines[end:]]
    if phase == "watching":  # a watcher has no board: the race's keys do nothing (a trial)
        race = next(i for i, line in enumerate(rest) if line.startswith("Race:"))
        score = next(i for i, line in enumerate(rest) if line.startswith("Spider's score"))
        lobby = next(i for i, line in enumerate(rest) if line.startswith("Lobby:"))
        rest = [*rest[:race], rest[score], *rest[lobby:]]  # the scores they see, not the board
    return "\n".join(first + rest)
