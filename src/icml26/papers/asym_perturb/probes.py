"""Hostile calls to the asym_perturb API and what each must do (run by ``tests/test_hostile.py``).

The package exports no ``nn.Module``, so ``MODULES`` is empty.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import Probe
from icml26.papers.asym_perturb import (
    Dynamics,
    InfosetGroup,
    Treeplex,
    asymmetric,
    asymmetric_reference,
    cfr_plus,
    degenerate_game,
    efg_defaults,
    perturbation_thresholds,
    projection_onto_equilibria,
    threshold_lp,
    duality_gaps,
    gda,
    nash_conv,
    ogda,
    perturbed_dynamics,
    project_simplex,
    random_game,
    rock_paper_scissors_game,
    sequence_form_game,
    solve_efg,
    solve_lp,
    solve_matrix_game,
    symmetric,
    symmetric_reference,
)

MODULES: list = []

_NAN = float("nan")
_RPS = rock_paper_scissors_game()
_U = np.full(3, 1 / 3)
_S3 = Treeplex.simplex(3)


def _batch():
    return _RPS.unsqueeze(0)


def _solution():
    return solve_matrix_game(_RPS, iterations=5, show_progress=False)


def _dyn(fn, **kw):
    return fn(_batch(), _S3, _S3, **{"eta": 0.1, "iterations": 3, **kw})


HOSTILE = [
    # projections (NaN gives NaN, not an index error)
    Probe("project_simplex: NaN row gives NaN", lambda: project_simplex(torch.tensor([_NAN, 0.0])),
          returns=lambda p: bool(torch.isnan(p).all()),
          doc="a row holding NaN projects to NaN (no error, so batched solvers need no device sync)"),
    Probe("project_simplex: +inf row gives NaN", lambda: project_simplex(torch.tensor([float("inf"), 0.0])),
          returns=lambda p: bool(torch.isnan(p).any()), doc="a row holding +inf has no projection: NaN"),
    Probe("project_simplex: -inf entries project to 0", lambda: project_simplex(torch.tensor([-float("inf"), 1.0])),
          returns=lambda p: p.tolist() == [0.0, 1.0], doc="−inf coordinates get probability 0"),
    Probe("project_simplex: empty", lambda: project_simplex(torch.zeros(0)), match="coordinate"),
    Probe("project_simplex: scalar", lambda: project_simplex(np.float64(1.0)), match="dimension"),
    Probe("project_simplex: text", lambda: project_simplex("v"), match="v must"),
    Probe("project_simplex: NumPy in, NumPy out", lambda: project_simplex(np.array([0.2, 0.5])),
          returns=lambda p: isinstance(p, np.ndarray) and np.allclose(p, [0.35, 0.65]),
          doc="NumPy (or list) input gives a NumPy projection"),
    # treeplexes
    Probe("Treeplex.simplex: zero actions", lambda: Treeplex.simplex(0), match="n >= 1"),
    Probe("Treeplex.simplex: fractional size", lambda: Treeplex.simplex(2.5), match="n="),
    Probe("Treeplex.from_infosets: a sequence in no infoset", lambda: Treeplex.from_infosets(3, [(0, [1])]),
          match="belong to no infoset"),
    Probe("Treeplex.from_infosets: negative size", lambda: Treeplex.from_infosets(-1, []), match="size"),
    Probe("Treeplex.from_infosets: a sequence in two infosets",
          lambda: Treeplex.from_infosets(3, [(0, [1, 2]), (1, [2])]), match="belongs to infosets"),
    Probe("Treeplex.prox: wrong length", lambda: _S3.prox(torch.ones(2)), match="c must"),
    Probe("Treeplex.prox: NaN propagates", lambda: _S3.prox(torch.full((3,), _NAN)),
          returns=lambda b: bool(torch.isnan(b).all()), doc="NaN linear terms give a NaN prox (see project_simplex)"),
    Probe("Treeplex.min_linear: wrong length", lambda: _S3.min_linear(torch.ones(2)), match="g must"),
    Probe("Treeplex.to_sequence: wrong length", lambda: Treeplex.from_infosets(3, [(0, [1, 2])]).to_sequence(torch.ones(2)),
          match="b must"),
    Probe("Treeplex.mirror_grad: a NumPy array", lambda: _S3.mirror_grad(np.ones(3)), match="tensor"),
    Probe("Treeplex.uniform: negative batch", lambda: _S3.uniform((-1,)), match="batch_shape"),
    Probe("InfosetGroup: fractional indices", lambda: InfosetGroup(torch.tensor([[1.5]]), None), match="actions"),
    Probe("InfosetGroup: parents of the wrong length",
          lambda: InfosetGroup(torch.tensor([[1, 2]]), torch.tensor([0, 0])), match="parents"),
    # game values: a Python float for one NumPy game, NumPy for a NumPy batch
    Probe("nash_conv: NumPy game gives a float", lambda: nash_conv(_RPS.numpy(), _U, _U),
          returns=lambda v: type(v) is float and v == 0.0, doc="NumPy/list input, one game: a Python float"),
    Probe("nash_conv: NumPy batch gives an array", lambda: nash_conv(np.stack([_RPS.numpy()] * 2), np.stack([_U] * 2),
                                                                     np.stack([_U] * 2)),
          returns=lambda v: isinstance(v, np.ndarray) and v.shape == (2,), doc="NumPy input, a batch: a NumPy array"),
    Probe("nash_conv: torch in, torch out", lambda: nash_conv(_RPS, torch.tensor(_U), torch.tensor(_U)),
          returns=lambda v: isinstance(v, torch.Tensor) and v.dim() == 0, doc="torch input gives a tensor"),
    Probe("nash_conv: NaN strategy", lambda: nash_conv(_RPS, torch.full((3,), _NAN), torch.tensor(_U)), match="x holds"),
    Probe("nash_conv: NaN game", lambda: nash_conv(np.full((3, 3), _NAN), _U, _U), match="A has"),
    Probe("nash_conv: strategy of the wrong length", lambda: nash_conv(_RPS, torch.ones(2) / 2, torch.tensor(_U)),
          match="x must"),
    Probe("nash_conv: not a strategy", lambda: nash_conv(_RPS.numpy(), np.ones(3), _U), match="not a strategy"),
    Probe("nash_conv: empty game", lambda: nash_conv(np.zeros((0, 3)), np.zeros(0), _U), match="non-empty"),
    Probe("duality_gaps: NumPy game gives floats", lambda: duality_gaps(_RPS.numpy(), _U, _U),
          returns=lambda g: all(type(v) is float for v in g), doc="NumPy input, one game: two Python floats"),
    Probe("duality_gaps: batch without value", lambda: duality_gaps(_batch(), torch.tensor(_U)[None],
                                                                    torch.tensor(_U)[None]), match="value="),
    Probe("duality_gaps: NaN value", lambda: duality_gaps(_RPS, torch.tensor(_U), torch.tensor(_U), value=_NAN),
          match="value"),
    Probe("solve_lp: NaN game", lambda: solve_lp(np.full((2, 2), _NAN)), match="A has"),
    Probe("solve_lp: a batch", lambda: solve_lp(_batch()), match="one"),
    Probe("solve_lp: empty game", lambda: solve_lp(np.zeros((0, 2))), match="non-empty"),
    # thresholds
    Probe("perturbation_thresholds: NaN game", lambda: perturbation_thresholds(np.full((2, 2), _NAN)), match="A has"),
    Probe("perturbation_thresholds: a batch", lambda: perturbation_thresholds(_batch()), match="one"),
    Probe("perturbation_thresholds: sigma off the simplex", lambda: perturbation_thresholds(_RPS, sigma_x=np.ones(3)),
          match="sigma_x"),
    Probe("perturbation_thresholds: sigma of the wrong length",
          lambda: perturbation_thresholds(_RPS, sigma_y=np.ones(2) / 2), match="sigma_y"),
    Probe("perturbation_thresholds: text sigma", lambda: perturbation_thresholds(_RPS, sigma_x="u"), match="sigma_x"),
    Probe("perturbation_thresholds: RPS has one equilibrium at σ", lambda: perturbation_thresholds(_RPS).mu_pair,
          returns=lambda v: v == math.inf, doc="σ = uniform is RPS's equilibrium: any μ is exact (inf)"),
    Probe("projection_onto_equilibria: NaN value", lambda: projection_onto_equilibria(_RPS, value=_NAN), match="value"),
    Probe("projection_onto_equilibria: empty game", lambda: projection_onto_equilibria(np.zeros((0, 2))),
          match="non-empty"),
    Probe("threshold_lp: x_hat off the simplex", lambda: threshold_lp(_RPS, np.ones(3), _U, 0.0), match="x_hat"),
    Probe("efg_defaults: zero game", lambda: efg_defaults(np.zeros((3, 3))), match="zero"),
    Probe("efg_defaults: NaN game", lambda: efg_defaults(np.full((3, 3), _NAN)), match="finite"),
    Probe("asymmetric: mu tensor of the wrong length",
          lambda: _dyn(asymmetric, mu=torch.tensor([0.1, 0.2], dtype=torch.float64)), match="mu"),
    Probe("asymmetric: negative mu in a tensor",
          lambda: _dyn(asymmetric, mu=torch.tensor([-0.1], dtype=torch.float64)), match="mu"),
    # game generators
    Probe("random_game: zero actions", lambda: random_game(0, 0), match="n, m >= 1"),
    Probe("random_game: fractional size", lambda: random_game(0, 2.5), match="n="),
    Probe("random_game: zero batch", lambda: random_game(0, 2, batch=0), match="batch"),
    Probe("random_game: text generator", lambda: random_game("seed", 2), match="generator"),
    Probe("degenerate_game: negative duplicates", lambda: degenerate_game(0, 3, -1), match="duplicates"),
    Probe("degenerate_game: empty base", lambda: degenerate_game(0, 0, 0), match="n, m >= 1"),
    Probe("sequence_form_game: not a game", lambda: sequence_form_game(3), match="game"),
    Probe("sequence_form_game: not zero-sum", lambda: sequence_form_game("matrix_pd"), match="zero-sum"),
    # solvers
    Probe("solve_matrix_game: infinite eta", lambda: solve_matrix_game(_RPS, eta=float("inf"), iterations=5), match="eta"),
    Probe("solve_matrix_game: NaN eta", lambda: solve_matrix_game(_RPS, eta=_NAN, iterations=5), match="eta"),
    Probe("solve_matrix_game: zero eta", lambda: solve_matrix_game(_RPS, eta=0.0, iterations=5), match="eta"),
    Probe("solve_matrix_game: infinite mu", lambda: solve_matrix_game(_RPS, mu=float("inf"), iterations=5), match="mu"),
    Probe("solve_matrix_game: negative mu", lambda: solve_matrix_game(_RPS, mu=-1.0, iterations=5), match="mu"),
    Probe("solve_matrix_game: fractional iterations", lambda: solve_matrix_game(_RPS, iterations=2.5), match="iterations"),
    Probe("solve_matrix_game: unknown method", lambda: solve_matrix_game(_RPS, "foo", iterations=5), match="method"),
    Probe("solve_matrix_game: fractional seed", lambda: solve_matrix_game(_RPS, iterations=5, seed=1.5), match="seed"),
    Probe("solve_matrix_game: x0 off the simplex", lambda: solve_matrix_game(_RPS, iterations=5, x0=torch.ones(3)),
          match="x0"),
    Probe("solve_matrix_game: NaN x0", lambda: solve_matrix_game(_RPS, iterations=5, x0=torch.full((3,), _NAN)),
          match="x0"),
    Probe("solve_matrix_game: x0 of the wrong length", lambda: solve_matrix_game(_RPS, iterations=5, x0=torch.ones(2) / 2),
          match="x0"),
    Probe("solve_matrix_game: text game", lambda: solve_matrix_game("A", iterations=5), match="A must"),
    Probe("solve_matrix_game: NaN game", lambda: solve_matrix_game(np.full((2, 2), _NAN), iterations=5), match="A has"),
    Probe("solve_matrix_game: reference_period on a fixed method",
          lambda: solve_matrix_game(_RPS, "gda", iterations=5, reference_period=3), match="reference_period"),
    Probe("solve_matrix_game: zero reference_period",
          lambda: solve_matrix_game(_RPS, iterations=5, reference_period=0), match="reference_period"),
    Probe("solve_efg: NaN eta", lambda: solve_efg("kuhn_poker", eta=_NAN, iterations=5), match="eta"),
    Probe("GameSolution.iterations_to: NaN tolerance", lambda: _solution().iterations_to(_NAN), match="tol"),
    Probe("GameSolution.duality_gaps: NaN value", lambda: _solution().duality_gaps(_NAN), match="value"),
    Probe("GameSolution.policy: a matrix game", lambda: _solution().policy(), match="solve_efg"),
    Probe("GameSolution: converged iterate count", lambda: _solution().iterations, returns=lambda n: n == 5,
          doc="iterations is the horizon T"),
    # dynamics (the functions behind method=)
    Probe("perturbed_dynamics: NaN mu", lambda: perturbed_dynamics(_batch(), _S3, _S3, eta=0.1, mu_x=_NAN, mu_y=0,
                                                                   iterations=3), match="mu_x"),
    Probe("perturbed_dynamics: infinite eta", lambda: perturbed_dynamics(_batch(), _S3, _S3, eta=float("inf"), mu_x=0,
                                                                         mu_y=0, iterations=3), match="eta"),
    Probe("perturbed_dynamics: a single (n, m) game", lambda: perturbed_dynamics(_RPS, _S3, _S3, eta=0.1, mu_x=0,
                                                                                 mu_y=0, iterations=3), match="B, n, m"),
    Probe("perturbed_dynamics: NaN game", lambda: perturbed_dynamics(torch.full((1, 3, 3), _NAN), _S3, _S3, eta=0.1,
                                                                     mu_x=0, mu_y=0, iterations=3), match="A has"),
    Probe("perturbed_dynamics: a NumPy game", lambda: perturbed_dynamics(_batch().numpy(), _S3, _S3, eta=0.1, mu_x=0,
                                                                         mu_y=0, iterations=3), match="torch tensor"),
    Probe("perturbed_dynamics: X not a treeplex", lambda: perturbed_dynamics(_batch(), 3, _S3, eta=0.1, mu_x=0, mu_y=0,
                                                                             iterations=3), match="Treeplex"),
    Probe("perturbed_dynamics: fractional iterations", lambda: perturbed_dynamics(_batch(), _S3, _S3, eta=0.1, mu_x=0,
                                                                                  mu_y=0, iterations=2.5),
          match="iterations"),
    Probe("perturbed_dynamics: bx0 of the wrong shape",
          lambda: perturbed_dynamics(_batch(), _S3, _S3, eta=0.1, mu_x=0, mu_y=0, iterations=3, bx0=torch.ones(1, 2)),
          match="bx0"),
    Probe("perturbed_dynamics: unknown reference rule",
          lambda: perturbed_dynamics(_batch(), _S3, _S3, eta=0.1, mu_x=0, mu_y=0, iterations=3, reference="often"),
          match="reference"),
    Probe("asymmetric: NaN mu", lambda: _dyn(asymmetric, mu=_NAN), match="mu"),
    Probe("asymmetric: zero mu", lambda: _dyn(asymmetric, mu=0.0), match="mu"),
    Probe("asymmetric: a reference period", lambda: _dyn(asymmetric, reference_period=5), match="fixed"),
    Probe("asymmetric_reference: NaN mu", lambda: _dyn(asymmetric_reference, mu=_NAN), match="mu"),
    Probe("symmetric: negative mu", lambda: _dyn(symmetric, mu=-1.0), match="mu"),
    Probe("symmetric_reference: NaN mu", lambda: _dyn(symmetric_reference, mu=_NAN), match="mu"),
    Probe("ogda: NaN eta", lambda: _dyn(ogda, eta=_NAN), match="eta"),
    Probe("gda: negative eta", lambda: _dyn(gda, eta=-1.0), match="eta"),
    Probe("cfr_plus: NaN game", lambda: cfr_plus(torch.full((1, 3, 3), _NAN), _S3, _S3, iterations=3), match="A has"),
    Probe("cfr_plus: a single (n, m) game", lambda: cfr_plus(_RPS, _S3, _S3, iterations=3), match="B, n, m"),
    Probe("cfr_plus: negative iterations", lambda: cfr_plus(_batch(), _S3, _S3, iterations=-1), match="iterations"),
    Probe("Dynamics: curves of different lengths",
          lambda: Dynamics(torch.ones(3), torch.ones(3), torch.zeros(3), torch.zeros(2), torch.zeros(())),
          match="best_y_value"),
    Probe("GameSolution: NashConv of a converged RPS run is tiny",
          lambda: float(solve_matrix_game(_RPS, iterations=3000, seed=0).nash_conv[-1]),
          returns=lambda v: math.isfinite(v) and v < 1e-8, doc="the parameter-free method solves RPS exactly"),
]



# ---------------------------------------------------------------------------
# the hostile-input walk (tests/test_hostile_walk.py)
# ---------------------------------------------------------------------------
def _rps() -> torch.Tensor:
    return rock_paper_scissors_game()


def _u() -> np.ndarray:
    return np.full(3, 1 / 3)


def _pair(**kw):
    """A one-game batch, its simplices, and a short horizon for the dynamics functions."""
    return ((_batch(), _S3, _S3), {"eta": 0.1, "iterations": 3, "bx0": torch.full((1, 3), 1 / 3, dtype=torch.float64),
                                   "by0": torch.full((1, 3), 1 / 3, dtype=torch.float64), **kw})


_DYN = dict(mu=0.5, show_progress=False)

VALID = {
    "InfosetGroup": lambda: ((torch.tensor([[1, 2]]), torch.tensor([0])), {}),
    "Treeplex": lambda: ((3, (InfosetGroup(torch.tensor([[1, 2]]), torch.tensor([0])),), True), {}),
    "asymmetric": lambda: _pair(**_DYN),
    "asymmetric_reference": lambda: _pair(**_DYN, reference_period=2),
    "cfr_plus": lambda: _pair(show_progress=False),
    "degenerate_game": lambda: ((0, 3, 1), {"batch": 2}),
    "duality_gaps": lambda: ((_rps(), torch.tensor(_u()), torch.tensor(_u())), {"value": 0.0}),
    "efg_defaults": lambda: ((_rps(),), {}),
    "gda": lambda: _pair(mu=0.1, show_progress=False),
    "nash_conv": lambda: ((_rps(), torch.tensor(_u()), torch.tensor(_u())), {}),
    "ogda": lambda: _pair(mu=0.1, show_progress=False),
    "perturbation_thresholds": lambda: ((_rps().numpy(),), {"sigma_x": _u(), "sigma_y": _u()}),
    "perturbed_dynamics": lambda: _pair(mu_x=0.5, mu_y=0.0, reference=2, show_progress=False),
    "project_simplex": lambda: ((torch.tensor([0.2, 0.5, -0.1]),), {}),
    "projection_onto_equilibria": lambda: ((_rps().numpy(), _u()), {"value": 0.0}),
    "random_game": lambda: ((0, 2, 3), {"batch": 2}),
    "sequence_form_game": lambda: (("kuhn_poker",), {}),
    "solve_efg": lambda: (("kuhn_poker",), {"eta": 1.0, "mu": 0.01, "iterations": 3, "reference_period": 2,
                                            "seed": 0, "show_progress": False}),
    "solve_lp": lambda: ((_rps(),), {}),
    "solve_matrix_game": lambda: ((_rps(),), {"eta": 0.1, "mu": 0.5, "iterations": 3, "reference_period": 2,
                                              "x0": torch.tensor(_u()), "y0": torch.tensor(_u()), "seed": 0,
                                              "show_progress": False}),
    "symmetric": lambda: _pair(**_DYN),
    "symmetric_reference": lambda: _pair(**_DYN, reference_period=2),
    "threshold_lp": lambda: ((_rps().numpy(), _u(), np.array([0.5, 0.25, 0.25]), 0.0), {}),
}
NOT_WALKED = {
    "Dynamics": "a plain record of one run's iterates and curves that perturbed_dynamics (and every dynamics "
                "function) fills; those functions are walked",
    "GameSolution": "a plain record of a solve that solve_matrix_game and solve_efg fill; both are walked, and the "
                    "HOSTILE 'GameSolution...' probes cover its methods' arguments",
    "PerturbationThresholds": "a plain record of one game's thresholds that perturbation_thresholds fills; it is "
                              "walked",
    "SequenceFormGame": "the sequence form sequence_form_game builds from an OpenSpiel game; sequence_form_game and "
                        "solve_efg are walked",
}
ALLOWED = {
    "project_simplex.v:nan": "NaN in, NaN out by documented design (HOSTILE 'project_simplex: NaN row gives NaN'): "
                             "it is the prox of every step of every batched solver, where a finiteness check would "
                             "cost a device sync per step; the solvers refuse a NaN game and NaN starting points",
}
