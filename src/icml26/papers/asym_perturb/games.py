"""Zero-sum games in the form min_{x∈X} max_{y∈Y} xᵀAy, and how good a strategy pair is.

Convention (the paper's): x is the *minimising* player, y the maximising one, A is
x's loss. For an OpenSpiel game, x is player 0 and A = payoff[1] = −payoff[0] of the
sequence form, so that player 0 minimises player 1's utility; the value of the
game for player 0 is then −min_x max_y xᵀAy (−1/18 in Kuhn poker).

* :func:`nash_conv`: NashConv(x, y) = max_{y'} xᵀAy' − min_{x'} x'ᵀAy, the sum of both
  players' best-response gains (OpenSpiel's ``nash_conv``; exploitability is half of it).
* :func:`duality_gaps`: the x-gap max_{y'} xᵀAy' − v* and the y-gap v* − min_{x'} x'ᵀAy,
  which sum to NashConv and say *which* player's strategy is an equilibrium one.
* :func:`solve_lp`: the value v* and an equilibrium strategy by linear programming
  (SciPy HiGHS), an independent path to check the learning dynamics against.
* generators: uniform random games, degenerate games with duplicated rows and columns
  (non-unique equilibria), rock–paper–scissors, and :func:`sequence_form_game` for an
  OpenSpiel game (extra ``games``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26.common.extras import require
from icml26.papers.asym_perturb.treeplex import Treeplex

__all__ = [
    "SequenceFormGame",
    "degenerate_game",
    "duality_gaps",
    "nash_conv",
    "payoff_variants",
    "random_game",
    "rock_paper_scissors_game",
    "sequence_form_game",
    "solve_lp",
    "strategy_spaces",
]


def _as_tensor(a: Any, dtype: torch.dtype = torch.float64,
               device: torch.device | str | None = None, name: str = "input") -> Tensor:
    if isinstance(a, Tensor):
        return a.to(dtype=dtype, device=device if device is not None else a.device)
    try:
        return torch.as_tensor(np.asarray(a, dtype=np.float64), dtype=dtype, device=device)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a tensor or an array of numbers, got {type(a).__name__}") from None


def strategy_spaces(A: Tensor, X: Treeplex | None = None,
                    Y: Treeplex | None = None) -> tuple[Treeplex, Treeplex]:
    """The two players' polytopes (simplices unless given), checked against A's shape."""
    if A.dim() < 2 or 0 in A.shape[-2:]:
        raise ValueError(f"A must be a non-empty (..., n, m) matrix, got shape {tuple(A.shape)}")
    n, m = A.shape[-2:]
    X = Treeplex.simplex(n) if X is None else X
    Y = Treeplex.simplex(m) if Y is None else Y
    if not isinstance(X, Treeplex) or not isinstance(Y, Treeplex):
        raise TypeError(f"X and Y must be Treeplex objects or None, got {type(X).__name__} and {type(Y).__name__}")
    if (X.size, Y.size) != (n, m):
        raise ValueError(f"A has shape {tuple(A.shape)} but the strategy spaces have sizes "
                         f"{X.size} and {Y.size}; A must be (..., X.size, Y.size)")
    return X.to(A.device), Y.to(A.device)


#: How far a strategy may sit off its polytope (sum / flow constraints, negativity) in nash_conv.
STRATEGY_TOL = 1e-6


def _strategies(A: Any, x: Any, y: Any, X: Treeplex | None, Y: Treeplex | None):
    """Tensors (A, x, y), the polytopes, and whether the caller passed NumPy (not torch)."""
    numpy_in = not any(isinstance(t, Tensor) for t in (A, x, y))
    x = _as_tensor(x, name="x")
    A, y = _as_tensor(A, device=x.device, name="A"), _as_tensor(y, device=x.device, name="y")
    X, Y = strategy_spaces(A, X, Y)
    for name, z, space in (("x", x, X), ("y", y, Y)):
        if z.dim() == 0 or z.shape[-1] != space.size:
            raise ValueError(f"{name} must be (..., {space.size}) for A of shape {tuple(A.shape)}, got {tuple(z.shape)}")
        if not torch.isfinite(z).all():
            raise ValueError(f"{name} holds NaN or inf; pass a strategy (a probability vector / sequence-form vector)")
        E, e = space.constraints(z.dtype)
        residual = (z @ E.to(z.device).T - e.to(z.device)).abs().max()
        if float(residual) > STRATEGY_TOL or float(z.min()) < -STRATEGY_TOL:
            raise ValueError(f"{name} is not a strategy of its polytope (constraint residual {float(residual):.1e}, "
                             f"min entry {float(z.min()):.1e}); pass a probability vector / sequence-form strategy")
    if not torch.isfinite(A).all():
        raise ValueError("A has NaN or infinite entries")
    return A, x, y, X, Y, numpy_in


def _out(t: Tensor, numpy_in: bool):
    """Torch in → the tensor; NumPy in → a Python float for one game, an array for a batch."""
    if not numpy_in:
        return t
    t = t.detach().cpu()
    return float(t) if t.dim() == 0 else t.numpy()


def nash_conv(A: Tensor | np.ndarray, x: Tensor | np.ndarray, y: Tensor | np.ndarray,
              X: Treeplex | None = None, Y: Treeplex | None = None) -> Tensor | np.ndarray | float:
    """NashConv(x, y) = max_{y'∈Y} xᵀAy' − min_{x'∈X} x'ᵀAy.

    Args:
        A: (..., n, m) loss of the minimising player x.
        x: (..., n) strategy of x (sequence form on a treeplex).
        y: (..., m) strategy of y.
        X, Y: the polytopes (default: simplices).

    Returns:
        (...,) NashConv, zero exactly at an equilibrium: a torch tensor when any input is
        one; for NumPy (or list) input a Python ``float`` for one game and a NumPy array
        for a batch. Non-finite input and vectors off their polytope raise ``ValueError``.
    """
    A, x, y, X, Y, numpy_in = _strategies(A, x, y, X, Y)
    # max_{y'} xᵀAy' = −min_{y'} ⟨−Aᵀx, y'⟩
    best_y = -Y.min_linear(-(x.unsqueeze(-2) @ A).squeeze(-2))
    best_x = X.min_linear((A @ y.unsqueeze(-1)).squeeze(-1))
    return _out(best_y - best_x, numpy_in)


def duality_gaps(A: Tensor | np.ndarray, x: Tensor | np.ndarray, y: Tensor | np.ndarray,
                 value: float | Tensor | None = None, X: Treeplex | None = None,
                 Y: Treeplex | None = None) -> tuple[Tensor, Tensor] | tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """The x-gap max_{y'} xᵀAy' − v* and the y-gap v* − min_{x'} x'ᵀAy.

    Each is ≥ 0 and zero exactly when that player's strategy is an equilibrium one;
    they sum to :func:`nash_conv`. Types as in :func:`nash_conv` (Python floats for one
    game given as NumPy).

    Args:
        A: (..., n, m) loss of x.
        x, y: (..., n) and (..., m) strategies.
        value: v* = min_x max_y xᵀAy (finite); solved by :func:`solve_lp` when ``None``
            (then A must be a single (n, m) matrix).
    """
    A, x, y, X, Y, numpy_in = _strategies(A, x, y, X, Y)
    if value is None:
        if A.dim() != 2:
            raise ValueError("duality_gaps solves v* only for one (n, m) matrix; pass value= "
                             "for a batch")
        value = solve_lp(A, X, Y)[0]
    value = _as_tensor(value, device=x.device, name="value")
    if not torch.isfinite(value).all():
        raise ValueError(f"value={value!r} must be finite (the game's value v*)")
    best_y = -Y.min_linear(-(x.unsqueeze(-2) @ A).squeeze(-2))
    best_x = X.min_linear((A @ y.unsqueeze(-1)).squeeze(-1))
    return _out(best_y - value, numpy_in), _out(value - best_x, numpy_in)


def solve_lp(A: Tensor | np.ndarray, X: Treeplex | None = None,
             Y: Treeplex | None = None) -> tuple[float, np.ndarray]:
    """The value v* = min_{x∈X} max_{y∈Y} xᵀAy and an equilibrium x, by linear programming.

    With Y = {y ≥ 0 : F y = f}, LP duality gives max_{y∈Y} xᵀAy = min_v {fᵀv : Fᵀv ≥ Aᵀx},
    so x* solves  min_{x, v} fᵀv  s.t.  Aᵀx − Fᵀv ≤ 0,  E x = e,  x ≥ 0.  (The
    sequence-form LP of Koller, Megiddo & von Stengel 1996.) For y*, call it on −Aᵀ.

    Args:
        A: (n, m) loss of x (finite).
        X, Y: the polytopes (default: simplices).

    Returns:
        ``(value, x)`` with x an (n,) NumPy array (sequence form).
    """
    from scipy import optimize as scipy_optimize
    A_t = _as_tensor(A, device="cpu", name="A")
    if A_t.dim() != 2:
        raise ValueError(f"solve_lp takes one (n, m) matrix, got shape {tuple(A_t.shape)}")
    if not torch.isfinite(A_t).all():
        raise ValueError("A has NaN or infinite entries")
    X, Y = strategy_spaces(A_t, X, Y)
    E, e = (t.numpy() for t in X.constraints())
    F, f = (t.numpy() for t in Y.constraints())
    An = A_t.numpy()
    n, k = An.shape[0], F.shape[0]
    cost = np.concatenate([np.zeros(n), f])
    a_ub = np.hstack([An.T, -F.T])
    a_eq = np.hstack([E, np.zeros((E.shape[0], k))])
    bounds = [(0, None)] * n + [(None, None)] * k
    res = scipy_optimize.linprog(cost, A_ub=a_ub, b_ub=np.zeros(An.shape[1]), A_eq=a_eq, b_eq=e,
                                 bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"the equilibrium LP failed: {res.message}")
    return float(res.fun), res.x[:n]


# ---------------------------------------------------------------------------
# Matrix games
# ---------------------------------------------------------------------------
def _generator(generator) -> torch.Generator:
    """A ``torch.Generator`` as given, or a new one seeded with an integer seed."""
    if isinstance(generator, torch.Generator):
        return generator
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        if generator < 0:
            raise ValueError(f"generator={generator} must be a torch.Generator or an integer seed >= 0")
        return torch.Generator().manual_seed(int(generator))
    raise TypeError(f"generator={generator!r} must be a torch.Generator or an integer seed")


def random_game(generator: torch.Generator | int, n: int, m: int | None = None, *,
                batch: int | None = None) -> Tensor:
    """U(−1, 1) payoff matrices (the authors' random games), float64 on CPU.

    Returns:
        (n, m) or (batch, n, m).
    """
    m = n if m is None else m
    generator = _generator(generator)
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}={v!r} must be an integer")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1):
        raise ValueError(f"batch={batch!r} must be None or an integer >= 1")
    if n < 1 or m < 1:
        raise ValueError(f"a game needs n, m >= 1, got n={n}, m={m}")
    shape = (n, m) if batch is None else (batch, n, m)
    return torch.rand(*shape, generator=generator, dtype=torch.float64) * 2.0 - 1.0


def degenerate_game(generator: torch.Generator | int, base: int, duplicates: int, *,
                    batch: int | None = None) -> Tensor:
    """A random U(−1, 1) base × base game with ``duplicates`` rows and columns copied.

    Copies of rows and columns leave the value unchanged but make both equilibrium
    sets non-singletons (a copied row splits its mass freely between the copies), the
    family where symmetric and asymmetric perturbation differ most. Rows 0..d−1 are
    copied to rows base..base+d−1, and likewise the columns.

    Returns:
        (base + d, base + d) or (batch, base + d, base + d).
    """
    for name, v in (("base", base), ("duplicates", duplicates)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}={v!r} must be an integer")
    if not 0 <= duplicates <= base:
        raise ValueError(f"duplicates={duplicates} must be between 0 and base={base}")
    core = random_game(generator, base, base, batch=batch)
    rows = torch.cat([core, core[..., :duplicates, :]], dim=-2)
    return torch.cat([rows, rows[..., :duplicates]], dim=-1)


def payoff_variants(A: Tensor, generator: torch.Generator | int, count: int, *, spread: float = 0.5) -> Tensor:
    """Games on the same strategy spaces as ``A`` with its payoffs resized entry by entry:
    A_ij·ξ_ij with ξ_ij ~ U(1 − spread, 1 + spread) independently (zeros stay zero, signs stay).

    For a sequence-form payoff the nonzero entries are the leaves (chance reach × payoff), so a
    variant keeps the tree, the information sets, the chance weights and who wins each leaf, and
    changes by how much: held-out games of the same shape (for Kuhn poker, other ante and bet
    sizes per leaf), whose equilibria stay mixed. Redrawing the signs too (ξ ~ U(−2, 2)) gives
    games with near-pure equilibria that every method solves in a few dozen iterations, unlike
    Kuhn (over a thousand): a poor stand-in to tune on.

    Returns:
        (count, n, m), float64 on CPU.
    """
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count={count!r} must be an integer >= 1")
    if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not 0 <= spread < 1:
        raise ValueError(f"spread={spread!r} must be a number in [0, 1) (1 or more could flip signs)")
    A = torch.as_tensor(A, dtype=torch.float64).cpu()
    if A.dim() != 2 or not torch.isfinite(A).all():
        raise ValueError("A must be one finite (n, m) matrix")
    u = torch.rand(count, *A.shape, generator=_generator(generator), dtype=torch.float64)
    return A * (1.0 - spread + 2.0 * spread * u)


def rock_paper_scissors_game() -> Tensor:
    """Rock–paper–scissors as the zero-sum game's loss matrix of x, entries in {−1, 0, 1}.

    Rows are x's actions, columns y's, both rock, paper, scissors; A[i, j] = 1 when x loses
    (its action is beaten by y's), −1 when it wins. Unique equilibrium: uniform for both.
    (Renamed from ``rock_paper_scissors``: robust_ntp's ``rock_paper_scissors_loss`` is a
    learner's loss in [0, 1] with ½ on a tie.)
    """
    return torch.tensor([[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]], dtype=torch.float64)


# ---------------------------------------------------------------------------
# Extensive-form games (OpenSpiel)
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SequenceFormGame:
    """The sequence form of a two-player zero-sum OpenSpiel game.

    Attributes:
        A: (n, m) loss of player 0 (= payoff of player 1): player 0 is x (minimises
            xᵀAy), player 1 is y.
        X, Y: the players' treeplexes (sequence 0 is the empty sequence).
        game: the ``pyspiel.Game``.
        sequence_index: per player, OpenSpiel's ``"infostate -=- action"`` → sequence.
        infoset_actions: per player, infostate → its ``"infostate -=- action"`` keys.
    """

    A: Tensor
    X: Treeplex
    Y: Treeplex
    game: Any
    sequence_index: tuple[dict[str, int], dict[str, int]]
    infoset_actions: tuple[dict[str, list[str]], dict[str, list[str]]]

    def value_for_player0(self, x: Tensor, y: Tensor) -> Tensor:
        """Player 0's expected utility −xᵀAy of sequence-form strategies."""
        return -(x.unsqueeze(-2) @ self.A.to(x.device) @ y.unsqueeze(-1)).squeeze(-1).squeeze(-1)

    def to_policy(self, x: Tensor, y: Tensor):
        """An OpenSpiel ``TabularPolicy`` realisation-equivalent to (x, y)."""
        sfu = require("open_spiel.python.algorithms.sequence_form_utils", "games")
        seqs = [x.detach().cpu().numpy(), y.detach().cpu().numpy()]
        return sfu.sequence_to_policy(seqs, self.game, list(self.sequence_index),
                                      list(self.infoset_actions))

    def from_policy(self, policy) -> tuple[Tensor, Tensor]:
        """Sequence-form (x, y) of an OpenSpiel ``TabularPolicy``."""
        sfu = require("open_spiel.python.algorithms.sequence_form_utils", "games")
        x, y = sfu.policy_to_sequence(self.game, policy, list(self.sequence_index))
        return torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)


def sequence_form_game(game: Any) -> SequenceFormGame:
    """Build the sequence form of a two-player zero-sum OpenSpiel game.

    Args:
        game: a ``pyspiel.Game`` or a game name such as ``"kuhn_poker"``.
    """
    pyspiel = require("pyspiel", "games")
    sfu = require("open_spiel.python.algorithms.sequence_form_utils", "games")
    if isinstance(game, str):
        game = pyspiel.load_game(game)
    if not hasattr(game, "get_type") or not hasattr(game, "num_players"):
        raise TypeError(f"game must be a pyspiel.Game or a game name such as 'kuhn_poker', got {type(game).__name__}")
    info = game.get_type()
    if game.num_players() != 2 or info.utility != pyspiel.GameType.Utility.ZERO_SUM:
        raise ValueError(f"{info.short_name} is not a two-player zero-sum game; the sequence "
                         "form here needs one")
    _, isa_to_seq, infoset_actions, parent_map, payoff, _ = sfu.construct_vars(game)
    spaces = []
    for p in range(2):
        infosets, names = [], []
        for infostate, isa_keys in infoset_actions[p].items():
            if sfu.is_root(infostate, p):
                continue
            parent = isa_to_seq[p][parent_map[p][infostate]]
            infosets.append((parent, [isa_to_seq[p][k] for k in isa_keys]))
            names.append(infostate)
        spaces.append(Treeplex.from_infosets(len(isa_to_seq[p]), infosets, names))
    A = torch.as_tensor(payoff[1], dtype=torch.float64)
    return SequenceFormGame(A=A, X=spaces[0], Y=spaces[1], game=game,
                            sequence_index=(isa_to_seq[0], isa_to_seq[1]),
                            infoset_actions=(infoset_actions[0], infoset_actions[1]))
