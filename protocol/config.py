"""Which game is played, with which options and which deal numbering (docs/rules.md).

A :class:`GameConfig` is validated when it is made, so everything downstream (deals, rules,
server rooms) can trust it.  Every error is a :class:`ConfigError` with a sentence a person can act on.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SPIDER = "spider"
ST_HELENA = "st-helena"
LOUIS = "louis"
GAMES = (SPIDER, ST_HELENA, LOUIS)

PYSOLFC = "pysolfc"
XPAT2 = "xpat2"

MAX_PYSOLFC_NUMBER = 10**20
"""PySolFC's own limit for game numbers."""
MAX_XPAT2_NUMBER = 999_999_999
RANDOM_RANGE = (10**16, 10**20)
"""PySolFC's range for random games: ``low <= n < high`` (docs/rules.md)."""

# For each game: option name -> (allowed values, default).  The first value is the default.
OPTIONS: dict[str, dict[str, tuple[Any, ...]]] = {
    SPIDER: {"suits": (4, 2, 1), "relaxed": (0, 1, 2)},
    ST_HELENA: {"build": ("suit", "any"), "spaces": ("none", "any")},
    LOUIS: {"build": ("suit", "any")},
}
NUMBERINGS: dict[str, tuple[str, ...]] = {
    SPIDER: (PYSOLFC, XPAT2),
    ST_HELENA: (PYSOLFC,),
    LOUIS: (PYSOLFC,),
}
TITLES = {SPIDER: "Spider", ST_HELENA: "St. Helena", LOUIS: "Louis"}


class ConfigError(ValueError):
    """A game, option, numbering or deal number that does not exist."""


def config_or_none(game: str, options: Mapping[str, Any], numbering: str) -> GameConfig | None:
    """That game, or None if it is no game (what a room or a record says it played, compared
    with what a reveal says: a claim that is not even a game matches nothing)."""
    try:
        return GameConfig(game, options, numbering)
    except ConfigError:
        return None


def _digits(text: str) -> bool:
    """``text`` is a whole number written in ASCII digits, short enough to read (``str.isdigit``
    alone takes ``²`` and Arabic-Indic digits, which ``int`` refuses or reads)."""
    return 0 < len(text) <= 40 and text.isascii() and text.isdigit()


@dataclass(frozen=True, slots=True)
class GameConfig:
    """A game with every option given a value, and a numbering."""

    game: str
    options: Mapping[str, Any] = field(default_factory=dict)
    numbering: str = PYSOLFC

    def __post_init__(self) -> None:
        if self.game not in OPTIONS:
            raise ConfigError(f"unknown game {self.game!r}: choose one of {', '.join(GAMES)}")
        known = OPTIONS[self.game]
        full: dict[str, Any] = {}
        for key, value in self.options.items():
            if key not in known:
                raise ConfigError(
                    f"{self.game} has no option {key!r}; its options are {', '.join(known)}"
                )
            allowed = known[key]
            if isinstance(allowed[0], int) and isinstance(value, str) and _digits(value.strip()):
                value = int(value)
            if isinstance(value, bool) or value not in allowed:
                raise ConfigError(
                    f"{self.game} option {key} cannot be {value!r}: "
                    f"choose one of {', '.join(str(a) for a in allowed)}"
                )
            full[key] = value
        for key, allowed in known.items():
            full.setdefault(key, allowed[0])
        object.__setattr__(self, "options", {k: full[k] for k in known})
        if self.numbering not in NUMBERINGS[self.game]:
            raise ConfigError(
                f"{self.game} has no numbering {self.numbering!r}: "
                f"choose {' or '.join(NUMBERINGS[self.game])}"
            )

    def __hash__(self) -> int:
        return hash((self.game, tuple(self.options.items()), self.numbering))

    def option(self, key: str) -> Any:
        return self.options[key]

    @property
    def title(self) -> str:
        """``Spider (2 suits)``, ``St. Helena (build any, spaces any)``."""
        extras = []
        for key, value in self.options.items():
            if key == "suits":
                extras.append(f"{value} suit{'s' if value != 1 else ''}")
            elif value != OPTIONS[self.game][key][0]:
                extras.append(f"{key} {value}")
        if self.numbering != PYSOLFC:
            extras.append(f"{self.numbering} numbering")
        return TITLES[self.game] + (f" ({', '.join(extras)})" if extras else "")

    def shown_options(self) -> dict[str, Any]:
        """The options as the deal vectors write them: Spider's suits always, others when not default."""
        return {
            k: v for k, v in self.options.items() if k == "suits" or v != OPTIONS[self.game][k][0]
        }

    def check_number(self, number: object) -> int:
        """``number`` as a deal number of this numbering, or a :class:`ConfigError` saying why not."""
        if isinstance(number, str):
            text = number.strip().replace("_", "")
            if text.startswith("#"):
                text = text[1:]
            if not _digits(text.removeprefix("-")):
                raise ConfigError(f"deal number {number[:40]!r} is not a whole number")
            number = int(text)
        if isinstance(number, bool) or not isinstance(number, int):
            raise ConfigError(f"deal number {number!r} is not a whole number")
        if self.numbering == XPAT2:
            if not 0 <= number <= MAX_XPAT2_NUMBER:
                raise ConfigError(
                    f"xpat2 deal numbers go from 0 to {MAX_XPAT2_NUMBER}, not {number}"
                )
        elif not 1 <= number <= MAX_PYSOLFC_NUMBER:
            raise ConfigError(
                f"deal numbers go from 1 to {MAX_PYSOLFC_NUMBER} (PySolFC's range), not {number}"
            )
        return number

    def to_json(self) -> dict[str, Any]:
        return {"game": self.game, "options": dict(self.options), "numbering": self.numbering}


def random_number(config: GameConfig) -> int:
    """A secret deal number in PySolFC's range for random games (xpat2: its whole range)."""
    if config.numbering == XPAT2:
        return secrets.randbelow(10**9)
    low, high = RANDOM_RANGE
    return low + secrets.randbelow(high - low)
