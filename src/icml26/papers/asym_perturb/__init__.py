"""Asymmetric perturbation for bilinear saddle points (Abe, Sakamoto, Ariu, Iwasaki, ICML 2026).

Perturb only one player, f_μ(x, y) = xᵀAy + μ·D(x, σ): for small μ the perturbed
player's equilibrium strategy is an exact equilibrium strategy of the original game
(the one nearest σ), and gradient descent–ascent on f_μ converges to it at a linear
last-iterate rate; moving σ to the iterate removes the need for a small μ.

>>> import torch
>>> from icml26.papers.asym_perturb import solve_matrix_game, rock_paper_scissors_game
>>> sol = solve_matrix_game(rock_paper_scissors_game(), "asymmetric_reference", seed=0, iterations=3000)
>>> bool(sol.nash_conv[0] > 0.1 and sol.nash_conv[-1] < 1e-8)
True

``METHOD`` is :func:`asymmetric_reference`; ``BASELINES`` are the dynamics the paper compares
against, drop-in alternatives with its signature ``(A, X, Y, *, eta, mu, iterations, …)``.
``DYNAMICS`` maps every ``method=`` name of the solvers to its dynamics function.

See README.md in this folder for the method, usage and the reproduction.
"""

from typing import Callable

from icml26.papers.asym_perturb.asymp_gda import asymmetric, asymmetric_reference
from icml26.papers.asym_perturb.baselines import cfr_plus, gda, ogda, symmetric, symmetric_reference
from icml26.papers.asym_perturb.dynamics import Dynamics, perturbed_dynamics
from icml26.papers.asym_perturb.games import (
    SequenceFormGame,
    degenerate_game,
    duality_gaps,
    nash_conv,
    random_game,
    rock_paper_scissors_game,
    sequence_form_game,
    solve_lp,
)
from icml26.papers.asym_perturb.solve import DYNAMICS, GameSolution, efg_defaults, solve_efg, solve_matrix_game
from icml26.papers.asym_perturb.thresholds import (
    PerturbationThresholds,
    perturbation_thresholds,
    projection_onto_equilibria,
    threshold_lp,
)
from icml26.papers.asym_perturb.treeplex import InfosetGroup, Treeplex, project_simplex

METHOD: Callable = asymmetric_reference
"""The method: parameter-free AsymP-GDA (``solve_matrix_game``'s default)."""

BASELINES: dict[str, Callable] = {
    "symmetric": symmetric,
    "symmetric_reference": symmetric_reference,
    "ogda": ogda,
    "gda": gda,
    "cfr_plus": cfr_plus,
}
"""The paper's baselines, drop-in alternatives to :data:`METHOD`."""

__all__ = [
    "BASELINES",
    "DYNAMICS",
    "METHOD",
    "Dynamics",
    "GameSolution",
    "InfosetGroup",
    "PerturbationThresholds",
    "SequenceFormGame",
    "Treeplex",
    "asymmetric",
    "asymmetric_reference",
    "cfr_plus",
    "degenerate_game",
    "duality_gaps",
    "efg_defaults",
    "gda",
    "nash_conv",
    "ogda",
    "perturbation_thresholds",
    "perturbed_dynamics",
    "project_simplex",
    "projection_onto_equilibria",
    "random_game",
    "rock_paper_scissors_game",
    "sequence_form_game",
    "solve_efg",
    "solve_lp",
    "solve_matrix_game",
    "symmetric",
    "symmetric_reference",
    "threshold_lp",
]
