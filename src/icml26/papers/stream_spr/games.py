"""MinAtar game names (no gymnasium import, so configs can be validated without the extra)."""

from __future__ import annotations

__all__ = ["MINATAR_GAMES"]

#: MinAtar games by their snake-case name and gymnasium id (v1: minimal action sets).
MINATAR_GAMES = {
    "asterix": "MinAtar/Asterix-v1",
    "breakout": "MinAtar/Breakout-v1",
    "freeway": "MinAtar/Freeway-v1",
    "seaquest": "MinAtar/Seaquest-v1",
    "space_invaders": "MinAtar/SpaceInvaders-v1",
}
