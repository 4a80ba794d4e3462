"""Asymmetric perturbation for bilinear saddle points (Abe, Sakamoto, Ariu, Iwasaki, ICML 2026).

Perturb only one player, f_μ(x, y) = xᵀAy + μ·D(x, σ): for small μ the perturbed
player's equilibrium strategy is an exact equilibrium strategy of the original game
(the one nearest σ), and gradient descent–ascent on f_μ converges to it at a linear
last-iterate rate; moving σ to the iterate removes the need for a small μ.

>>> import torch
>>> from icml26.papers.asym_perturb import solve_matrix_game, rock_paper_scissors
>>> sol = solve_matrix_game(rock_paper_scissors(), "asymmetric_reference", seed=0, iterations=3000)
>>> bool(sol.nash_conv[0] > 0.1 and sol.nash_conv[-1] < 1e-8)
True

See README.md in this folder for the method, usage and the reproduction.
"""

from icml26.papers.asym_perturb.asymp_gda import asymmetric, asymmetric_reference
from icml26.papers.asym_perturb.baselines import cfr_plus, gda, ogda, symmetric, symmetric_reference
from icml26.papers.asym_perturb.dynamics import Dynamics, perturbed_dynamics
from icml26.papers.asym_perturb.games import (
    SequenceFormGame,
    degenerate_game,
    duality_gaps,
    nash_conv,
    random_game,
    rock_paper_scissors,
    sequence_form_game,
    solve_lp,
)
from icml26.papers.asym_perturb.solve import METHODS, GameSolution, solve_efg, solve_matrix_game
from icml26.papers.asym_perturb.treeplex import InfosetGroup, Treeplex, project_simplex

__all__ = [
    "METHODS",
    "Dynamics",
    "GameSolution",
    "InfosetGroup",
    "SequenceFormGame",
    "Treeplex",
    "asymmetric",
    "asymmetric_reference",
    "cfr_plus",
    "degenerate_game",
    "duality_gaps",
    "gda",
    "nash_conv",
    "ogda",
    "perturbed_dynamics",
    "project_simplex",
    "random_game",
    "rock_paper_scissors",
    "sequence_form_game",
    "solve_efg",
    "solve_lp",
    "solve_matrix_game",
    "symmetric",
    "symmetric_reference",
]
