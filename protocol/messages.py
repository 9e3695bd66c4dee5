"""The wire protocol: every client command and server event (docs/protocol.md).

Each frame is one msgpack map with a ``type`` field naming the message.  Every model is strict
and forbids unknown fields.  :data:`WIRE` is the one module-level ``TypeAdapter`` over both
directions; :func:`protocol.codec.decode` uses it, and the server refuses a server event sent
as a command (and the client the reverse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    StringConstraints,
    TypeAdapter,
    WithJsonSchema,
    model_serializer,
)

from .moves import Kind, Move
from .view import BoardView, CardName

PROTOCOL_VERSION = "1.4"
"""``major.minor``: a client of another major version is refused; minors only add optional fields."""

Seq = Annotated[int, Field(ge=0, le=2**53)]
MAX_NAME = 24
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME)]
"""Display names: 1 to 24 characters; the server normalizes and checks the rest
(``protocol.names``: NFKC, a letter or digit, nothing blank-looking, no look-alike of another
member's name)."""
MAX_CODE = 16
MAX_TIME_LIMIT = 24 * 3600
"""The longest time limit a room takes, in seconds."""
RoomCode = Annotated[str, StringConstraints(min_length=4, max_length=MAX_CODE)]
Token = Annotated[str, StringConstraints(min_length=16, max_length=128)]
PileIndex = Annotated[int, Field(ge=-1, le=15)]


def _decimal(value: object) -> object:
    """A deal number sent as a decimal string (msgpack integers stop at 2**64) read as an int."""
    # (at most 21 digits, as the schema says: 10**20 has 21; 23 zero-padded ones were taken)
    if isinstance(value, str) and 0 < len(value) <= 21 and value.isascii() and value.isdigit():
        return int(value)
    return value


def _json_number(value: int) -> int | str:
    """In JSON (a record over HTTP, an export) a number past 2**53 - 1 is its decimal string:
    JavaScript's JSON.parse rounds a larger integer, and the commitment check fails."""
    return value if value <= 2**53 - 1 else str(value)


DealNumber = Annotated[
    int,
    BeforeValidator(_decimal),
    PlainSerializer(_json_number, when_used="json"),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]{1,21}$"}],
            "description": "a deal number; one past 2**64 - 1 is sent as its decimal string "
            "(in JSON, one past 2**53 - 1)",
        }
    ),
]
"""Deal numbers reach 10**20, beyond msgpack's 64-bit integers: the codec sends one that does
not fit as its decimal string, and every reader takes either form."""

GameId = Literal["spider", "st-helena", "louis"]
Mode = Literal["first", "score"]
UndoPolicy = Literal["off", "safe"]
MoveKind = Literal["tableau", "foundation", "deal", "redeal", "undo", "resign"]
RoomState = Literal["lobby", "countdown", "racing", "results"]
Role = Literal["player", "spectator"]
EndReason = Literal["all_done", "time_up", "aborted"]
"""Why a race ended: everyone done, the time limit, or aborted (its room closed)."""
PlayerStatus = Literal["waiting", "playing", "won", "resigned", "stuck", "disconnected", "left"]

ErrorCode = Literal[
    "bad_frame",
    "bad_message",
    "unknown_type",
    "version_mismatch",
    "hello_first",
    "rate_limited",
    "server_busy",
    "shutting_down",
    "too_many_rooms",
    "room_not_found",
    "room_full",
    "already_in_room",
    "not_in_room",
    "not_host",
    "bad_name",
    "name_taken",
    "bad_settings",
    "bad_token",
    "wrong_state",
    "not_a_player",
    "not_ready",
    "race_not_running",
    "player_done",
    "illegal_move",
    "undo_off",
    "race_not_found",
    "record_too_large",
]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# -- shared pieces -------------------------------------------------------------------------


class Settings(Model):
    """A room's settings, as the host sends them."""

    game: GameId = "spider"
    options: dict[str, int | str] = Field(default_factory=dict, max_length=8)
    numbering: Literal["pysolfc", "xpat2"] = "pysolfc"
    mode: Mode = "first"
    time_limit: Annotated[int, Field(ge=0, le=MAX_TIME_LIMIT)] = 0
    """Seconds; 0 is no limit (mode ``first`` only: mode ``score`` needs one)."""
    undo: UndoPolicy = "safe"
    seats: Annotated[int, Field(ge=2, le=16)] = 8
    private: bool = False
    deal_number: Annotated[DealNumber, Field(ge=0, le=10**20)] | None = None
    """A fixed deal (for a known deal or a club night); None draws a secret random one."""
    winnable: bool = False
    """Draw the secret random deal from those the server's solver has won (not with a fixed
    deal): the reveal carries the solution, and its length is the race's par."""


class PublicSettings(Model):
    """The settings as every member sees them: a fixed deal's number is never shown."""

    game: GameId
    options: dict[str, int | str]
    numbering: Literal["pysolfc", "xpat2"]
    mode: Mode
    time_limit: int
    undo: UndoPolicy
    seats: int
    private: bool
    fixed_deal: bool
    title: str
    """``Spider (2 suits)``: the game and options for people."""
    winnable: bool = False


class Member(Model):
    id: int
    """Stable within the room: players and spectators alike."""
    name: str
    role: Role
    ready: bool
    connected: bool
    host: bool
    bot: bool = False
    """The member joined as a bot (``join_room`` with ``bot``)."""
    rematch: bool = False
    """After the results: this player asked for a rematch."""
    to_race: bool = False
    """A spectator who joined to play, seated at the next race if a seat is free (1.2)."""


def display_code(code: str) -> str:
    """A room's code as people write it (``K7QM-X2PF``); on the wire it has no dash."""
    return f"{code[:4]}-{code[4:]}"


class RoomInfo(Model):
    code: str
    state: RoomState
    settings: PublicSettings
    members: list[Member]
    race_id: str | None
    commitment: str | None
    """sha256 of the race's game, options, numbering, deal number and salt, from the countdown on."""


class RoomSummary(Model):
    code: str
    state: RoomState
    title: str
    mode: Mode
    players: int
    seats: int
    spectators: int
    time_limit: int = 0
    """The race's time limit in seconds, 0 for none (1.4: 0 from an older server)."""


class WireMove(Model):
    kind: MoveKind
    src: PileIndex = -1
    """A pile, from 0."""
    dst: PileIndex = -1
    """A pile, or a foundation (from 0) for ``foundation``; -1 lets the server choose."""
    count: Annotated[int, Field(ge=0, le=104)] = 0
    """Cards moved; 0 asks for the unit chosen as the notation's ``3>7`` would."""


WIRE_KINDS: dict[MoveKind, Kind] = {
    "tableau": Kind.TABLEAU,
    "foundation": Kind.FOUNDATION,
    "deal": Kind.DEAL,
    "redeal": Kind.REDEAL,
    "undo": Kind.UNDO,
    "resign": Kind.RESIGN,
}
_KIND_NAMES: dict[Kind, MoveKind] = {v: k for k, v in WIRE_KINDS.items()}


def to_wire(move: Move) -> WireMove:
    """An engine move as it travels."""
    return WireMove(kind=_KIND_NAMES[move.kind], src=move.src, dst=move.dst, count=move.count)


def from_wire(move: WireMove) -> Move:
    """A move off the wire, for the engine: a deal, redeal, undo or resign takes no pile or
    count, and any sent are dropped (``resign`` with ``src`` 3 was echoed back as applied so: a
    docs-only client trial)."""
    kind = WIRE_KINDS[move.kind]
    if kind in (Kind.TABLEAU, Kind.FOUNDATION):
        return Move(kind, move.src, move.dst, move.count)
    return Move(kind)


class Shown(Model):
    """A card that became visible to you: pile and position (from 0, from the bottom)."""

    pile: int
    index: int
    card: CardName


class Progress(Model):
    id: int
    name: str
    status: PlayerStatus
    score: int
    score2: int | None
    turned: int
    """Face-down cards turned so far (Louis: stock cards shown)."""
    suits: int
    """Spider: complete suits (foundations and tableau); St. Helena/Louis: full foundations."""
    foundation_cards: int
    moves: int
    undos: int
    connected: bool
    finish_ms: int | None
    """Server time from the start when the player won, resigned, got stuck or left."""
    score_ms: int
    """Server time from the start when the current score was reached."""


def place_key(
    mode: str, status: str, finish_ms: int | None, score: int, score_ms: int, player_id: int
) -> tuple[int, int, int, int]:
    """Where a player stands in a race: in a race to finish first the winners by their finishing
    time, then everyone by score, the earlier to reach it first.  The server ranks the results so
    (:class:`Standing`), and the client its race panel while the race goes on."""
    if mode == "first" and status == "won":
        return (0, finish_ms or 0, 0, player_id)
    return (1, -score, score_ms, player_id)


class Standing(Model):
    rank: int
    id: int
    name: str
    status: PlayerStatus
    score: int
    score2: int | None
    finish_ms: int | None
    score_ms: int
    moves: int
    undos: int


class Reveal(Model):
    game: GameId
    options: dict[str, int | str]
    numbering: Literal["pysolfc", "xpat2"]
    number: DealNumber
    salt: str
    commitment: str
    solution: list[str] | None = None
    """A deal certified winnable: the solver's solution (committed with the deal); its length
    is the race's par."""


class PlayerRecord(Model):
    id: int
    name: str
    moves: list[str]
    """Every move in notation (docs/records.md), undos and a resignation included."""
    times_ms: list[int]
    """Server time of each move from the start."""
    board: BoardView
    """The final board, face-down cards still counted only (the deal is in ``reveal``)."""


class RaceRecord(Model):
    race_id: str
    room: str | None
    """The room's code; None for a private room (its code is never published)."""
    settings: PublicSettings
    started_at: float
    """Unix time."""
    ended_at: float | None
    reveal: Reveal
    standings: list[Standing]
    players: list[PlayerRecord]


# -- client commands ------------------------------------------------------------------------


class Command(Model):
    if TYPE_CHECKING:
        type: str  # every command's own ``type: Literal[...]`` (as :class:`Event`'s)
    seq: Seq


class Hello(Command):
    type: Literal["hello"] = "hello"
    version: Annotated[str, StringConstraints(max_length=16)]
    client: Annotated[str, StringConstraints(max_length=64)] = ""


class CreateRoom(Command):
    type: Literal["create_room"] = "create_room"
    name: Name
    settings: Settings


class JoinRoom(Command):
    type: Literal["join_room"] = "join_room"
    code: RoomCode
    name: Name
    spectate: bool = False
    bot: bool = False
    """A program playing: everyone sees it, and a room left with only bots closes."""


class Resume(Command):
    type: Literal["resume"] = "resume"
    code: RoomCode
    token: Token


class ListRooms(Command):
    type: Literal["list_rooms"] = "list_rooms"


class Leave(Command):
    type: Literal["leave"] = "leave"


class UpdateSettings(Command):
    type: Literal["update_settings"] = "update_settings"
    settings: Settings
    keep_deal: bool = False
    """Keep the room's fixed deal (its number is never shown to anyone, so no client can send it
    back): with ``settings.deal_number`` nil, the room's stays (1.2)."""

    @model_serializer(mode="wrap")
    def _without_default(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # (left out when false: a 1.1 server, strict about fields, still takes the command)
        data: dict[str, object] = handler(self)
        if not self.keep_deal:
            data.pop("keep_deal", None)
        return data


class Kick(Command):
    type: Literal["kick"] = "kick"
    id: int


class Ready(Command):
    type: Literal["ready"] = "ready"
    ready: bool = True


class Start(Command):
    type: Literal["start"] = "start"


class MoveCmd(Command):
    type: Literal["move"] = "move"
    move: WireMove


class Rematch(Command):
    type: Literal["rematch"] = "rematch"


class GetRace(Command):
    type: Literal["get_race"] = "get_race"
    race_id: Annotated[str, StringConstraints(max_length=64)]


# -- server events --------------------------------------------------------------------------


class Event(Model):
    if TYPE_CHECKING:
        # every event's own ``type: Literal[...]`` (not a field of this base: pydantic never
        # sees it)
        type: str


class Welcome(Event):
    type: Literal["welcome"] = "welcome"
    seq: int
    version: str
    server: str
    max_frame: int
    rate: float
    """Commands per second allowed on average."""
    burst: int
    grace_ms: int | None = None
    """How long a seat in a race waits for its player after a drop (1.2)."""


class Ack(Event):
    type: Literal["ack"] = "ack"
    seq: int


class Error(Event):
    type: Literal["error"] = "error"
    seq: int | None
    code: ErrorCode
    message: str


class Joined(Event):
    """You are in a room: keep ``token`` to resume your seat."""

    type: Literal["joined"] = "joined"
    seq: int
    you: int
    role: Role
    token: str
    room: RoomInfo


class RoomList(Event):
    type: Literal["room_list"] = "room_list"
    seq: int
    rooms: list[RoomSummary]


class RoomUpdate(Event):
    type: Literal["room"] = "room"
    room: RoomInfo


class Countdown(Event):
    type: Literal["countdown"] = "countdown"
    race_id: str
    ms: int
    """Milliseconds until the start."""
    commitment: str


class RaceStart(Event):
    type: Literal["race_start"] = "race_start"
    race_id: str
    commitment: str
    time_limit_ms: int | None
    board: BoardView | None
    """Your own board (None for a spectator)."""


class Moved(Event):
    """Your move was applied: ``shown`` is every card it showed you."""

    type: Literal["moved"] = "moved"
    seq: int
    move: WireMove
    """The move as applied (count and target settled; for an undo, kind ``undo``)."""
    undone: WireMove | None
    shown: list[Shown]
    score: int
    score2: int | None
    won: bool
    stuck: bool
    can_undo: bool


class ProgressUpdate(Event):
    type: Literal["progress"] = "progress"
    elapsed_ms: int
    players: list[Progress]


class RaceOver(Event):
    type: Literal["race_over"] = "race_over"
    race_id: str
    reason: EndReason
    standings: list[Standing]
    reveal: Reveal


class Snapshot(Event):
    """Everything you need to redraw: sent on resume."""

    type: Literal["snapshot"] = "snapshot"
    seq: int
    next_seq: int
    """The lowest sequence number your seat's next command may carry (commands go on from the
    seat's highest number answered, whatever connection sent it)."""
    you: int
    role: Role
    room: RoomInfo
    board: BoardView | None
    elapsed_ms: int | None
    time_limit_ms: int | None
    countdown_ms: int | None
    progress: list[Progress]
    standings: list[Standing] | None
    reveal: Reveal | None


class RaceRecordMsg(Event):
    type: Literal["race_record"] = "race_record"
    seq: int
    record: RaceRecord


class Kicked(Event):
    type: Literal["kicked"] = "kicked"
    message: str


class MemberRemoved(Event):
    """The host removed member ``id`` (1.3): to everyone else in the room, before the room
    update that no longer holds them, so that it is said as a removal, not as a leave."""

    type: Literal["member_removed"] = "member_removed"
    id: int


class Notice(Event):
    """The server is going away: come back (resume) after ``retry_ms``."""

    type: Literal["notice"] = "notice"
    code: Literal["shutdown"]
    message: str
    retry_ms: int


class Redirect(Event):
    """The room is held by another node of this cluster: connect to ``url`` (a path on the
    same host, like ``/n/node-3/``, or a whole ``ws://``/``wss://`` URL) and send the same
    command again there."""

    type: Literal["redirect"] = "redirect"
    seq: int
    code: str
    node: str
    url: str


ClientMessage = Annotated[
    Hello
    | CreateRoom
    | JoinRoom
    | Resume
    | ListRooms
    | Leave
    | UpdateSettings
    | Kick
    | Ready
    | Start
    | MoveCmd
    | Rematch
    | GetRace,
    Field(discriminator="type"),
]
ServerMessage = Annotated[
    Welcome
    | Ack
    | Error
    | Joined
    | RoomList
    | RoomUpdate
    | Countdown
    | RaceStart
    | Moved
    | ProgressUpdate
    | RaceOver
    | Snapshot
    | RaceRecordMsg
    | Kicked
    | MemberRemoved
    | Notice
    | Redirect,
    Field(discriminator="type"),
]
Message = Annotated[ClientMessage | ServerMessage, Field(discriminator="type")]

WIRE: TypeAdapter[Command | Event] = TypeAdapter(Message)
"""The one adapter that reads and checks every message, in both directions."""


def json_schemas() -> dict[str, object]:
    """The JSON Schema of each direction (``patience-race-server --schema``)."""
    return {
        "protocol_version": PROTOCOL_VERSION,
        "client_to_server": TypeAdapter(ClientMessage).json_schema(),
        "server_to_client": TypeAdapter(ServerMessage).json_schema(),
    }
