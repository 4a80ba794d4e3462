"""robust_ntp: robustifying next-token predictors for adversarial online decisions.

"Next-Token Prediction and Regret Minimization" (Mohri, Sanford, Schneider, Vodrahalli,
Wu; ICML 2026, arXiv 2603.28499). A decision maker smoothed-best-responds to a
next-token model of its opponent; the robustified model follows the original until the
induced learner's regret crosses a threshold, then predicts the empirical frequency
(whose smoothed best response is Hedge), so it is exponentially close in total
variation to the original and has sublinear adversarial regret.

Usage::

    from icml26.papers.robust_ntp import Robustified, Greedy, play, rock_paper_scissors_loss
    robust = Robustified(my_model, rock_paper_scissors_loss(), beta=32.0, threshold=64.0)
    result = play(robust, Greedy(), horizon=1024, loss=rock_paper_scissors_loss(), beta=32.0)

``METHOD`` is :class:`Robustified`; ``BASELINES`` are drop-in alternatives with its signature
``(model, loss, beta, threshold)``: the unchanged model and the bounded-context robustification.
"""

from typing import Callable

from icml26.papers.robust_ntp.adversaries import (
    Adversary,
    Cycling,
    EpsilonGreedy,
    Greedy,
    ImitateThenSwitch,
    PlayResult,
    RandomTokens,
    per_position_tv,
    play,
    tv_distance_mc,
)
from icml26.papers.robust_ntp.baselines import unrobustified, windowed_robustified
from icml26.papers.robust_ntp.distill import DistillConfig, TinyCausalTransformer, distill, training_histories
from icml26.papers.robust_ntp.learner import hedge_weights, regret, rock_paper_scissors_loss, smoothed_best_response
from icml26.papers.robust_ntp.models import (
    IIDModel,
    MarkovModel,
    NextTokenModel,
    TorchNextTokenModel,
    Windowed,
    conditionals,
    log_likelihood,
    sample_sequences,
    windowed,
)
from icml26.papers.robust_ntp.robustify import Robustified, azuma_trigger_bound, regret_bound, running_regret

METHOD: Callable = Robustified
"""The method: ``Robustified(model, loss, beta, threshold)``."""

BASELINES: dict[str, Callable] = {"raw": unrobustified, "windowed_robustified": windowed_robustified}
"""Drop-in alternatives to :data:`METHOD` (same required arguments)."""

__all__ = [
    "BASELINES",
    "METHOD",
    "Adversary",
    "Cycling",
    "DistillConfig",
    "EpsilonGreedy",
    "Greedy",
    "IIDModel",
    "ImitateThenSwitch",
    "MarkovModel",
    "NextTokenModel",
    "PlayResult",
    "RandomTokens",
    "Robustified",
    "TinyCausalTransformer",
    "TorchNextTokenModel",
    "Windowed",
    "azuma_trigger_bound",
    "conditionals",
    "distill",
    "hedge_weights",
    "log_likelihood",
    "per_position_tv",
    "play",
    "regret",
    "regret_bound",
    "rock_paper_scissors_loss",
    "running_regret",
    "sample_sequences",
    "smoothed_best_response",
    "training_histories",
    "tv_distance_mc",
    "unrobustified",
    "windowed",
    "windowed_robustified",
]
