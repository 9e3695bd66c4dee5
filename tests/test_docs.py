"""The documentation stays inside the repository and the rule book stays up to date.

Every Markdown link in README.md and docs/*.md must point at a file of the repository (no ``../``
out of it, no absolute paths) or at a public web site; docs/rules.md must name every game, option,
option value and numbering that ``protocol.config`` offers.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import get_args
from urllib.parse import unquote, urlsplit

import pytest

from protocol.config import NUMBERINGS, OPTIONS, TITLES
from protocol.messages import PROTOCOL_VERSION, Mode, UndoPolicy

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules.md"

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`+[^`]*`+")
# [text](target) and ![alt](target); the target may be followed by a "title"
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
_AUTOLINK = re.compile(r"<((?:https?|file|ftp)://[^>\s]+)>")
_PRIVATE_SUFFIXES = (".local", ".localhost", ".internal", ".lan", ".home", ".test", ".invalid")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def links(text: str) -> list[tuple[int, str]]:
    """Every link target in Markdown ``text`` with its line number, code excluded."""
    out: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = _INLINE_CODE.sub("", line)
        for pattern in (_INLINE_LINK, _AUTOLINK):
            out.extend((number, m.group(1)) for m in pattern.finditer(line))
        m = _REFERENCE.match(line)
        if m:
            out.append((number, m.group(1)))
    return out


def link_problem(doc: Path, target: str, root: Path = ROOT) -> str | None:
    """Why ``target``, linked from ``doc``, does not belong in the repository's docs (None: fine)."""
    if not target:
        return "an empty link"
    parts = urlsplit(target)
    if parts.scheme in ("http", "https"):
        host = (parts.hostname or "").lower()
        if not host:
            return "a web link without a host"
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            if host == "localhost" or "." not in host or host.endswith(_PRIVATE_SUFFIXES):
                return f"a link to {host}, which is not a public site"
        else:
            if not ip.is_global:
                return f"a link to {host}, which is not a public address"
        if "/work/" in target or re.search(r"(^|/)shared/(RULES\.md|seeds|vectors)", parts.path):
            return "a link into the project's private shared folder"
        return None
    if parts.scheme or parts.netloc:
        # mailto:, file:, //host/... and Windows drive letters (c:\...) alike
        return f"a {parts.scheme or 'network'} link: only repository files and public web sites"
    path = unquote(parts.path)
    if not path:
        return _anchor_problem(doc, parts.fragment)
    if path.startswith(("/", "~", "\\")):
        return "an absolute path: link to repository files relatively"
    resolved = (doc.parent / path).resolve()
    if not resolved.is_relative_to(root.resolve()):
        return "a path outside the repository"
    if not resolved.exists():
        return f"{path} does not exist"
    if parts.fragment and resolved.suffix == ".md":
        return _anchor_problem(resolved, parts.fragment)
    return None


def anchors(text: str) -> set[str]:
    """The anchors GitHub makes for the headings of Markdown ``text``."""
    out = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower().replace("`", ""))
            out.add(slug.replace(" ", "-"))
    return out


def _anchor_problem(doc: Path, fragment: str) -> str | None:
    if not fragment or fragment in anchors(doc.read_text(encoding="utf-8")):
        return None
    return f"#{fragment}, which is no heading of {doc.name}"


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_points_inside_the_repository(doc: Path) -> None:
    problems = [
        f"{doc.relative_to(ROOT)}:{line}: ({target}) is {problem}"
        for line, target in links(doc.read_text(encoding="utf-8"))
        if (problem := link_problem(doc, target)) is not None
    ]
    assert not problems, "\n".join(problems)


def test_the_readme_and_the_docs_link_the_rule_book() -> None:
    readme = [t for _, t in links((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert "docs/rules.md" in readme


@pytest.mark.parametrize(
    ("target", "bad"),
    [
        ("../shared/RULES.md", True),
        ("../../work/shared/RULES.md", True),
        ("/work/shared/RULES.md", True),
        ("file:///work/shared/RULES.md", True),
        ("http://127.0.0.1:8765/healthz", True),
        ("http://localhost/x", True),
        ("https://10.0.0.5/rules", True),
        ("https://intranet/rules", True),
        ("https://github.com/someone/shared/RULES.md", True),
        ("docs/nothing-here.md", True),
        ("docs/rules.md", False),
        ("docs/records.md#move-notation", False),
        ("#fair-play", False),
        ("#no-such-heading", True),
        ("docs/rules.md#fair-play", False),
        ("docs/rules.md#no-such-heading", True),
        ("https://pysolfc.sourceforge.io/", False),
    ],
)
def test_the_link_check_tells_good_links_from_bad(target: str, bad: bool) -> None:
    assert (link_problem(ROOT / "README.md", target) is not None) is bad


def test_links_are_found_outside_code_only() -> None:
    text = "\n".join(
        [
            'See [a](a.md), ![pic](img/p.png "title") and <https://example.org/x>.',
            "[ref]: ../outside.md",
            "`[not](a-link.md)`",
            "```",
            "[not](inside-a-fence.md)",
            "```",
        ]
    )
    assert [t for _, t in links(text)] == [
        "a.md",
        "img/p.png",
        "https://example.org/x",
        "../outside.md",
    ]


def _sections(text: str) -> dict[str, str]:
    """The text under each second-level heading, by heading."""
    out: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            out[current] = ""
        elif current:
            out[current] += line + "\n"
    return out


@pytest.mark.parametrize("game", list(OPTIONS))
def test_the_rule_book_names_every_game_and_option(game: str) -> None:
    sections = _sections(RULES.read_text(encoding="utf-8"))
    title = TITLES[game]
    assert title in sections, f"docs/rules.md has no '## {title}' section"
    body = sections[title]
    missing = [f"`{game}`"] if f"`{game}`" not in body else []
    for option, values in OPTIONS[game].items():
        missing += [f"`{w}`" for w in (option, *map(str, values)) if f"`{w}`" not in body]
    if len(NUMBERINGS[game]) > 1:
        missing += [f"`{n}`" for n in NUMBERINGS[game] if f"`{n}`" not in body]
    assert not missing, f"the {title} section of docs/rules.md does not name {', '.join(missing)}"


def test_the_rule_book_names_every_mode_and_undo_policy() -> None:
    body = _sections(RULES.read_text(encoding="utf-8"))
    races = body.get("Races", "")
    undo = body.get("Undo", "")
    assert all(f"`{m}`" in races for m in get_args(Mode)), "a race mode is missing under Races"
    assert all(f"`{u}`" in undo for u in get_args(UndoPolicy)), "an undo policy is missing"


def _reference_deals() -> dict[str, object]:
    """The reference code of docs/deals.md, run."""
    text = (ROOT / "docs" / "deals.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 1, "docs/deals.md should hold one Python block, the reference code"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "docs/deals.md", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    ("game", "suits", "numbering"),
    [
        ("spider", 4, "pysolfc"),
        ("spider", 2, "pysolfc"),
        ("spider", 1, "pysolfc"),
        ("spider", 4, "xpat2"),
        ("spider", 1, "xpat2"),
        ("st-helena", 4, "pysolfc"),
        ("louis", 4, "pysolfc"),
    ],
)
def test_the_deal_page_makes_the_engines_deals(game: str, suits: int, numbering: str) -> None:
    """docs/deals.md says how a deal is made, for anyone who checks a race without this program:
    its reference code must make exactly the engine's deals, on both generators of PySolFC
    numbering (below and from 32000) and xpat2's."""
    from protocol.config import GameConfig
    from protocol.deals import deal

    cards = _reference_deals()["cards"]
    assert callable(cards)
    numbers = [1, 2, 617, 31999, 32000, 12345678, 10**16 + 7, 10**20 - 1]
    if numbering == "xpat2":
        numbers = [0, 1, 617, 31999, 32000, 123456789, 999_999_999]
    options = {"suits": suits} if game == "spider" else {}
    for n in numbers:
        want = deal(GameConfig(game, options, numbering), n).to_json()
        piles, down, stock, foundations = cards(game, n, suits, numbering)
        assert piles == want["tableau"], (n, "tableau")
        assert down == want["face_down"], (n, "face down")
        assert stock == want["stock"], (n, "stock")
        assert foundations == want["foundations"], (n, "foundations")


def test_the_game_record_example_replays() -> None:
    """docs/records.md's example game record is a real one: every move legal (the undo takes
    back a move that turned no card), and the result it gives is the one the replay reaches."""
    import json

    from protocol.record import load, replay

    text = (ROOT / "docs" / "records.md").read_text(encoding="utf-8")
    examples = [
        json.loads(block)
        for block in re.findall(r"^```json\n(.*?)^```", text, re.S | re.M)
        if '"patience-race-record"' in block
    ]
    assert examples, "docs/records.md shows no game record"
    for data in examples:
        state = replay(load(data))
        result = data["result"]
        assert (state.score(), state.score2()) == (result["score"], result["score2"])
        assert (state.moves, state.undos) == (result["moves"], result["undos"])


def test_the_protocol_page_speaks_the_protocol_of_the_code() -> None:
    """Its title, its ``hello`` row and its example exchange said 1.2 while the server spoke 1.3
    (a client copying the example would send a version the page itself called old)."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    title = text.splitlines()[0]
    assert title.endswith(f"version {PROTOCOL_VERSION}"), title
    said = re.findall(r'"version": "([^"]*)"', text) + re.findall(r'`version` \("([^"]*)"\)', text)
    assert said and set(said) == {PROTOCOL_VERSION}, said
    assert f"this page: {PROTOCOL_VERSION}" in text
