"""What the server and its clients agree on: cards, deals, each game's rules, the wire messages.

Importing the package imports each game's rules, which register themselves with
:mod:`protocol.game` (it imports none of them).
"""

from . import helena, spider  # noqa: F401  (each registers its game)
