"""Self-predictive representations for streaming RL, with orthogonal gradients (orth, orth²).

Nilaksh, Clavaud, Reymond, Rivest & Chandar, *Squeezing more from the stream: learning
representation online for streaming reinforcement learning*, ICML 2026 (arXiv 2602.09396),
on the streaming substrate of Elsayed, Vasan & Mahmood 2024 (arXiv 2410.14606).

Public API:

* optimizers: :class:`ObGD`, :class:`AdaptiveObGD`, :class:`TraceSGD` (``step(td_error, reset)``);
* networks: :func:`sparse_init_`, :func:`init_streaming_`, :class:`LayerNorm`, :func:`build_network`;
* normalizers: :class:`WelfordStats`, :class:`RewardScaler`, and the gymnasium wrappers
  :class:`RunningNorm`, :class:`ScaleReward`, :func:`stream_wrappers`, :func:`make_minatar`
  (imported on first use; they need ``pip install "icml26[rl]"``), and :func:`make_atari`,
  :func:`atari_games` for real Atari games (``pip install "icml26[atari]"``);
* agents: :class:`StreamQ`, :class:`StreamSarsa`, :class:`StreamAC` (the baselines) and
  :class:`StreamQSPR` (the method), each with ``step()`` and ``learn(total_steps)``;
* SPR: :class:`SPRHead`, :func:`spr_loss`, :class:`SPRWindow`, :class:`TransitionModel`;
* gradient transforms for any model: :class:`OrthogonalMomentum` (orth), :func:`project_out` (orth²);
* :func:`effective_rank` (srank and erank).

``METHOD`` is :class:`StreamQSPR`; ``BASELINES`` holds the streaming agents it is compared
with, each built as ``Agent(env, **options)`` (naive SPR is ``StreamQSPR(env, orth=False,
orth2=False)``).
"""

from __future__ import annotations

import importlib
from typing import Any

from .agents import LearnLog, StepInfo, StreamAC, StreamQ, StreamSarsa, q_lambda_update
from .atari import ATARI_GAMES, atari_games, make_atari
from .games import MINATAR_GAMES
from .networks import ARCHITECTURE_WIDTH, LayerNorm, StreamNetwork, build_network, init_streaming_, sparse_init_
from .normalization import RewardScaler, WelfordStats
from .optim import AdaptiveObGD, ObGD, ObGDStep, TraceSGD
from .orth import OrthogonalMomentum, cosine, project_out
from .rank import EffectiveRank, effective_rank, erank, srank
from .spr import SPRHead, SPROutput, SPRWindow, TransitionModel, spr_loss
from .spr_agent import LR_PRESETS, LearningRates, StreamQSPR

# METHOD is an alias of a name already in __all__, so it is not listed there itself.
METHOD = StreamQSPR
"""The method: Stream Q(λ) with SPR, orth and orth²."""
BASELINES = {"stream_q": StreamQ, "stream_sarsa": StreamSarsa, "stream_ac": StreamAC}
"""Drop-in alternatives to :data:`METHOD`: streaming agents taking ``(env, **options)``."""

_WRAPPERS = ("RunningNorm", "ScaleReward", "find_wrapper", "make_minatar", "stream_wrappers")

__all__ = [
    "ARCHITECTURE_WIDTH",
    "ATARI_GAMES",
    "BASELINES",
    "AdaptiveObGD",
    "EffectiveRank",
    "LR_PRESETS",
    "MINATAR_GAMES",
    "LayerNorm",
    "LearnLog",
    "LearningRates",
    "ObGD",
    "ObGDStep",
    "OrthogonalMomentum",
    "RewardScaler",
    "SPRHead",
    "SPROutput",
    "SPRWindow",
    "StepInfo",
    "StreamAC",
    "StreamNetwork",
    "StreamQ",
    "StreamQSPR",
    "StreamSarsa",
    "TraceSGD",
    "TransitionModel",
    "WelfordStats",
    "atari_games",
    "build_network",
    "cosine",
    "effective_rank",
    "erank",
    "init_streaming_",
    "make_atari",
    "project_out",
    "q_lambda_update",
    "sparse_init_",
    "spr_loss",
    "srank",
    *_WRAPPERS,
]


def __getattr__(name: str) -> Any:
    # The gymnasium wrappers need the ``rl`` extra; import them only when asked for.
    if name in _WRAPPERS:
        return getattr(importlib.import_module(f"{__name__}.wrappers"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
