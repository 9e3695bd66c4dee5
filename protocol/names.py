"""Display names: what a name may hold, its one written form, and when two names look the same.

A name is shown to everyone in a room, in other people's terminals, so it is checked as the
hostile text it may be:

- it is NFKC-normalized (fullwidth ``Ａnn`` becomes ``Ann``, mathematical letters plain ones) and
  its runs of white space become one space;
- it holds at least one letter or digit, no parenthesis or star (the screens' marks:
  ``Ann (host)``, ``Bob (you)``), no comma, colon or semicolon (what the screens' lists and
  messages are joined with: ``Cat, 1 Troll`` read as two people in the host's list to remove
  one from), and it is not ``you`` (how the screens speak of their viewer);
  no control, format, private-use or unassigned
  character, nothing that draws as blank (Hangul fillers, the braille blank, invisible joiners),
  and at most :data:`MAX_MARKS_IN_A_ROW` combining marks on one character;
- each word's letters, and the marks of a script on them, are of one script (Japanese and
  Korean mixes count as one), so that a letter or mark of another that looks like one of them
  (Cyrillic ``п`` in ``Anп``, a Thai tone mark on ``Ann``) cannot pass;
- it holds none of the pictures whose width terminals disagree on (:data:`WIDTH_UNSETTLED`);
- two names clash when their *skeletons* are equal: the name case-folded, with every character
  replaced by the one it is easily mistaken for, from Unicode's confusables table (UTS #39),
  accents and punctuation dropped, so Cyrillic ``Аnn``, ``Ánn`` and ``Ann.`` clash with ``Ann``
  and ``BOB`` with ``b0b``.

Pure and free of I/O but for reading the confusables and script tables shipped with the
``confusable_homoglyphs`` package, once.
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from importlib import resources

from confusable_homoglyphs import categories

from .messages import MAX_NAME

MAX_MARKS_IN_A_ROW = 2
"""Combining marks on one base character: enough for Vietnamese and Indic scripts, not for the
towers of marks that draw over the lines around a name.  (No cap on the marks of a whole name:
one of 8 refused ``Phạm Nhật Vượng Trường``, a protocol trial.)"""

RESERVED = frozenset("()*")
"""What the screens put after a name to say who someone is (``Ann (host)``, ``Bot (bot)``,
``Bob (away)``, ``Ann (you)`` in the race panel): a name holding them could pass for another
player with a role (checked after NFKC, so fullwidth and superscript forms count too, and with
every bracket, star and look-alike of them: :func:`_marks_a_role`)."""

_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_MARKS = frozenset({"Mn", "Mc", "Me"})

_BLANK_RANGES: tuple[tuple[int, int], ...] = (
    # Unicode's Default_Ignorable_Code_Point (drawn as nothing) ...
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
    # ... and visible characters that draw as a blank cell
    (0x2800, 0x2800),  # braille pattern blank
    (0x3000, 0x3000),  # ideographic space (NFKC makes it a space; kept here for clarity)
    (0x2422, 0x2423),  # blank symbol, open box
    (0x1D159, 0x1D159),  # musical symbol null notehead
)


class BadName(ValueError):
    """A name that cannot be used; the message says why, for the person who typed it."""


def _is_blank(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _BLANK_RANGES)


PRESENTATION = "\ufe0e\ufe0f"
"""The variation selectors that say a picture is drawn as text or as an emoji: an emoji picker
adds U+FE0F to ``❤`` or ``♠``.  Taken right after a picture, and nowhere else (invisible)."""


SKIN_TONES = (0x1F3FB, 0x1F3FF)
"""The emoji skin tone modifiers (``👍🏽``): taken right after a picture."""
JOINER = "\u200d"
"""The zero-width joiner of emoji sequences (``👨‍👩‍👧``, ``🏳️‍🌈``): taken between two pictures."""


def without_presentation(name: str) -> str:
    """``name`` less what only shapes the picture before it: the variation selectors and skin
    tones right after a picture (a symbol), and the joiners between two pictures."""
    out: list[str] = []
    for i, ch in enumerate(name):
        after_picture = bool(out) and unicodedata.category(out[-1]) == "So"
        if after_picture and (ch in PRESENTATION or SKIN_TONES[0] <= ord(ch) <= SKIN_TONES[1]):
            continue
        between = after_picture and i + 1 < len(name) and unicodedata.category(name[i + 1]) == "So"
        if ch == JOINER and between:
            continue
        out.append(ch)
    return "".join(out)


def normalize(name: str) -> str:
    """``name`` in its one written form, or :class:`BadName` saying why it cannot be used."""
    full = " ".join(unicodedata.normalize("NFKC", name).split())
    if not full:
        raise BadName("a name needs at least one visible character")
    if len(full) > MAX_NAME:
        raise BadName(f"a name has at most {MAX_NAME} characters")
    name = without_presentation(full)  # what is checked; the selectors stay in the name
    for ch in name:
        if unicodedata.category(ch) in _BAD_CATEGORIES or _is_blank(ch) or ch in "\t\n\r":
            raise BadName(
                "a name may hold only visible characters (no control, invisible or blank ones)"
            )
    in_a_row = 0
    decomposed = unicodedata.normalize("NFD", name)  # marks counted whether precomposed or not
    for i, ch in enumerate(decomposed):
        if unicodedata.category(ch) in _MARKS:
            in_a_row += 1
            if i == 0 or decomposed[i - 1] == " ":
                raise BadName("a name cannot start a word with a combining mark")
            if in_a_row > MAX_MARKS_IN_A_ROW:
                raise BadName("too many accents or marks on one letter")
        else:
            in_a_row = 0
    if not any(unicodedata.category(ch)[0] in "LN" for ch in name):
        raise BadName("a name needs at least one letter or digit")
    if any(_marks_a_role(ch) or _separates(ch) for ch in name):
        raise BadName(
            "a name holds letters, digits, spaces, - _ . ' ! ? # @ & % / \" and emoji: "
            "no brackets, stars or other symbols (the screens mark the host, bots and you with "
            "them), nor , : ; (the screens' lists are written with them)"
        )
    if any(lo <= ord(ch) <= hi for ch in name for lo, hi in WIDTH_UNSETTLED):
        raise BadName("a name cannot hold the trigram and digram signs (terminals draw them apart)")
    for word in name.split():
        scripts = {_script(ch) for ch in unicodedata.normalize("NFD", word) if _lettered(ch)}
        if len(scripts - {"COMMON", "INHERITED"}) > 1:
            raise BadName(
                "a word of a name holds the letters of one alphabet, and its marks (a letter or "
                "mark of another that looks like one of them could pass for someone else's name)"
            )
    if skeleton(full) in _SPOKEN:
        raise BadName(f"{full!r} is how the screens speak of their viewer: choose another name")
    return full


SEPARATORS = frozenset(",:;\u3001\u02cc\u02ce\u02cf")
"""What the screens' lists and messages are joined with, the ideographic comma, and the
modifier letters drawn low like a comma (``Amyˏ Bob``: a verification trial)."""


def _separates(ch: str) -> bool:
    """``ch`` is, or could pass for, a separator of the screens' lists: the Lisu tone letters
    and the modifier letter colons look like ``,`` and ``:`` (``ꓚꓮꓔꓹ 1ꓽ ꓔꓣꓳꓡꓡ`` read as two in
    the host's list to remove one from: a review).  Not the Indic visarga, a vowel sign that
    the confusables' table maps to ``:`` (``दुःख``)."""
    if ch in SEPARATORS:
        return True
    return _prototypes().get(ch, ch) in SEPARATORS and unicodedata.category(ch) != "Mc"


def _lettered(ch: str) -> bool:
    """A letter or a combining mark: what has a script of its own in a word."""
    return unicodedata.category(ch)[0] in "LM"


WIDTH_UNSETTLED = ((0x2630, 0x2637), (0x268A, 0x268F))
"""Pictures that Unicode 16 made wide (two cells): the client's Rich counts two, most terminals
still draw one, so a name of them pushed the race panel's scores out of their column (a text
trial)."""


_SCRIPT_GROUPS = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HAN": "CJK", "HANGUL": "CJK"}
"""Scripts written together in one word (Japanese kana and kanji, Korean hangul and hanja)."""


def _script(ch: str) -> str:
    """The script of a letter (Unicode's, from the confusables' data), or its group."""
    script = categories.alias(ch)
    return _SCRIPT_GROUPS.get(script, script)


PUNCTUATION = frozenset(".'!?#@&%/\"¡¿·")
"""The punctuation a name may hold (Unicode's "other punctuation" holds stars and asterisks:
``⁎``, ``⁕``, ``٭``); dashes, connectors (``_``) and CJK punctuation are taken too."""

PICTURES = ((0x2600, 0x27BF), (0x1F0A0, 0x1F0FF), (0x1F1E6, 0x1F1FF), (0x1F300, 0x1F5FF),
            (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF), (0x1FA70, 0x1FAFF))  # fmt: skip
"""The blocks of emoji and pictures (miscellaneous symbols and dingbats: ``☕ ⚽ ❤ ♠``, playing
cards: ``🃏 🂡``, the flags' letters, the emoji blocks): the only symbols a name may hold, less
the stars, asterisks and sparkles among them (:data:`NOT_PICTURES`).  The other symbol blocks
are full of stars, asterisks and bracket pieces: ``⭑``, ``🞶``, ``⎛``."""
NOT_PICTURES = ("STAR", "ASTERISK", "ASTERISM", "SPARKLE", "FLORETTE", "SNOWFLAKE", "PROPELLER",
                "SEXTILE", "SUN WITH RAYS", "PENTAGRAM", "CRESCENT", "QUARTER MOON")  # fmt: skip
"""Words in the Unicode names of the pictures that could pass for a screen's ``*`` (stars,
asterisks) or its brackets (``☾host☽``, the quarter moons)."""


def _marks_a_role(ch: str) -> bool:
    """``ch`` is, or could pass for, one of the screens' marks (:data:`RESERVED`): a name holds
    letters, marks, digits, spaces, dashes, ``_``, a little punctuation and emoji, and no
    character the confusables' table reads as ``(``, ``)`` or ``*`` (brackets of every shape,
    stars and asterisks being symbols or punctuation of other kinds)."""
    if ch in RESERVED or _prototypes().get(ch, ch) in RESERVED:
        return True
    category = unicodedata.category(ch)
    if category[0] in "LMN" or category in ("Zs", "Pd", "Pc"):
        return False
    if category == "Po":
        return not (ch in PUNCTUATION or 0x3000 <= ord(ch) <= 0x303F)
    if category == "So":
        if not any(lo <= ord(ch) <= hi for lo, hi in PICTURES):
            return True
        return any(word in unicodedata.name(ch, "STAR") for word in NOT_PICTURES)
    return category != "Sc"  # currency signs are harmless; every other symbol is not taken


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype: of the characters it is listed as confusable
    with (and itself), the one confusable with the most others, so that a whole class of
    look-alikes maps to one character."""
    table = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    )
    size = {ch: len(entries) for ch, entries in table.items()}

    def rank(ch: str) -> tuple[int, int, int]:
        return (-size.get(ch, 0), 0 if ch.isascii() else 1, ord(ch))

    proto: dict[str, str] = {}
    for ch, entries in table.items():
        if len(ch) != 1:
            continue
        group = [ch] + [e["c"] for e in entries if len(e["c"]) == 1]
        best = min(group, key=rank)
        if best != ch:
            proto[ch] = best
    # follow chains to their end, so that a -> b -> c maps a straight to c
    for ch in list(proto):
        seen = {ch}
        target = proto[ch]
        while target in proto and target not in seen:
            seen.add(target)
            target = proto[target]
        proto[ch] = target
    return proto


def skeleton(name: str) -> str:
    """What ``name`` looks like: two names with the same skeleton clash.  Look-alike letters
    are one (the confusables' prototypes), case is folded, and invisible characters, accents
    (:data:`ACCENTS`) and punctuation count for nothing: ``Ánn``, ``Anṅ``, ``Ann.`` and
    ``Ann'`` beside an ``Ann`` passed for her in a small font or one without the accent
    (fairness trial).  Spaces count: ``Ann B`` is not ``AnnB``."""
    proto = _prototypes()
    text = unicodedata.normalize("NFKC", " ".join(name.split()))
    for _ in range(2):  # prototypes may be capitals: map, fold, map again
        text = "".join(proto.get(ch, ch) for ch in unicodedata.normalize("NFD", text))
        text = unicodedata.normalize("NFKC", text).casefold()
    text = unicodedata.normalize("NFD", text)
    return "".join(
        ch
        for ch in text
        if not _is_blank(ch)
        and unicodedata.category(ch)[0] != "P"
        and not any(lo <= ord(ch) <= hi for lo, hi in ACCENTS)
        and not (_is_generic_mark(ch))
    )


KANA_VOICING = frozenset("\u3099\u309a")
"""The kana's voicing marks: a script's own (``ダン`` is not ``タン``), though Unicode lists them
with the marks of every script."""


def _is_generic_mark(ch: str) -> bool:
    """A combining mark of no script of its own (Unicode's "inherited": the accents, a
    Devanagari stress sign, the CJK tone marks), which draws as a speck on any letter: ``Ann॑``
    beside an ``Ann`` passed for her (a text trial).  A script's own marks (Indic and Thai vowel
    signs) tell names apart and stay."""
    return (
        unicodedata.category(ch) in ("Mn", "Me")
        and ch not in KANA_VOICING
        and _script(ch) == "INHERITED"
    )


ACCENTS = ((0x0300, 0x036F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF),
           (0xFE20, 0xFE2F))  # fmt: skip
"""The combining diacritical marks: accents, which a small font or one without them hides
(the vowel signs of Indic scripts and Thai, or the kana's voicing marks, are letters' own and
tell names apart: ``राम`` and ``रमा``, ``ダン`` and ``タン``)."""


_SPOKEN = frozenset({"you"})
"""The skeletons of the words the screens speak of their viewer with ("waiting for you", "Won
by you"): a player named ``you`` spoke for everyone on everyone else's screen (a text trial)."""


def clashes(name: str, others: list[str]) -> str | None:
    """The first of ``others`` that looks the same as ``name``, or None."""
    mine = skeleton(name)
    return next((o for o in others if skeleton(o) == mine), None)
