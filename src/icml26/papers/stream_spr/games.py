"""MinAtar game names (no gymnasium import, so configs can be validated without the extra)."""

from __future__ import annotations

__all__ = ["MINATAR_GAMES", "game_stream_index"]

#: MinAtar games by their snake-case name and gymnasium id (v1: minimal action sets).
MINATAR_GAMES = {
    "asterix": "MinAtar/Asterix-v1",
    "breakout": "MinAtar/Breakout-v1",
    "freeway": "MinAtar/Freeway-v1",
    "seaquest": "MinAtar/Seaquest-v1",
    "space_invaders": "MinAtar/SpaceInvaders-v1",
}

#: The order that fixes each game's random-stream index: the full mode's three games in their default
#: order (so every run made with that order, or with Breakout alone, keeps its draws), then the rest.
_STREAM_ORDER = ("breakout", "space_invaders", "freeway", "asterix", "seaquest")


def game_stream_index(game: str) -> int:
    """The index a game's probe and agent seeds are drawn at, the same whichever games a run holds,
    so that a run of one game equals that game's part of a run of several (same master seed)."""
    if game not in MINATAR_GAMES:
        raise ValueError(f"game={game!r} must be one of {', '.join(MINATAR_GAMES)}")
    return _STREAM_ORDER.index(game)
