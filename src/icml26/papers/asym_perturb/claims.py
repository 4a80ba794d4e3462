"""The checks of the asym_perturb reproduction, declared before any run (``icml26 info asym_perturb``).

"The horizon" is ``iterations`` for matrix games (2·10⁴ quick), ``efg_iterations`` for
Kuhn poker (10⁴ quick) and ``leduc_iterations`` for Leduc (3,000 quick). An unreached target
counts as T + 1 iterations, so a speed-up ratio is then a lower bound. The Kuhn and Leduc
checks are measured when ``efg_games`` holds the game.

Every tuned arm takes its (η, μ, step rule) from one protocol on held-out games (:mod:`.sections`;
μ on a log grid over [0.01, 10] for the reference methods; on Kuhn and Leduc, the reference methods'
settings come from held-out Kuhn variants),
and the fixed-σ pair ("asymmetric") takes μ = ½·min(μ̄_x, μ̄_y) per game from the thresholds LP:
with one fixed μ (0.3, say) the pair could be exact only on the games whose thresholds both exceed
it.

The fraction checks ("NashConv < 1e-8 on a fraction of games") are measured per game: a game is
one unit (``REPLICATION``), pooled over seeds; the other checks are per master seed.
"""

from icml26.contract import ArmSpec, CheckSpec, Replication, annotate, declare, declare_arms

_PLATEAU = ("issue #4 expects fixed-μ symmetric perturbation to plateau; 1e-4 is our level for 'not "
            "converging' (two orders above the 1e-6 target, far below the starting NashConv)")
_FLAT = ("issue #4's 'plateaus', as a shape: the last iterate's NashConv has not fallen to half of its "
         "value at T/2 (a linearly converging method falls by orders of magnitude)")
_TAIL = ("issue #4 asks that 'a straight line fits log NashConv over the tail (linear rate)'; R² > 0.9 "
         "is our threshold for a straight line")

CHECKS = declare(
    CheckSpec("random_asymref_exact", "random: asymmetric_reference NashConv < 1e-8 at the horizon (fraction of games)",
              ">=", 0.9, source="issue", ref="issue #4"),
    CheckSpec("random_asym_exact", "random: asymmetric (fixed σ, μ = ½ min(μ̄_x, μ̄_y) per game) NashConv < 1e-8 "
              "at the horizon (fraction of games)", ">=", 0.9, source="issue", ref="issue #4; μ per game: issue #29"),
    CheckSpec("random_asymref_speedup", "random: median iterations to 1e-6, best tuned symmetric_reference / tuned asymmetric_reference",
              ">=", 2.0, source="issue", ref="issue #4"),
    CheckSpec("random_asym_speedup", "random: median iterations to 1e-6, best tuned symmetric_reference / asymmetric",
              ">=", 2.0, source="issue", ref="issue #4"),
    CheckSpec("random_symmetric_plateau", "random: symmetric (fixed μ) median final NashConv (plateau level)",
              ">", 1e-4, source="ours", ref=_PLATEAU),
    CheckSpec("random_symmetric_flat", "random: symmetric NashConv(T)/NashConv(T/2), median (flat = plateau)",
              ">=", 0.5, source="ours", ref=_FLAT),
    CheckSpec("random_asymref_linear_tail", "random: asymmetric_reference tail fit of log NashConv, median R²",
              ">", 0.9, source="ours", ref=_TAIL),
    CheckSpec("degenerate_asymref_exact", "degenerate: asymmetric_reference NashConv < 1e-8 at the horizon (fraction of games)",
              ">=", 0.9, source="issue", ref="issue #4"),
    CheckSpec("degenerate_asym_exact", "degenerate: asymmetric (fixed σ, μ = ½ min(μ̄_x, μ̄_y) per game) NashConv "
              "< 1e-8 at the horizon (fraction of games)", ">=", 0.9, source="issue",
              ref="issue #4; μ per game: issue #29"),
    CheckSpec("degenerate_asymref_speedup", "degenerate: median iterations to 1e-6, best tuned symmetric_reference / tuned asymmetric_reference",
              ">=", 2.0, source="issue", ref="issue #4"),
    CheckSpec("degenerate_asym_speedup", "degenerate: median iterations to 1e-6, best tuned symmetric_reference / asymmetric",
              ">=", 2.0, source="issue", ref="issue #4"),
    CheckSpec("degenerate_symmetric_plateau", "degenerate: symmetric (fixed μ) median final NashConv (plateau level)",
              ">", 1e-4, source="ours", ref=_PLATEAU),
    CheckSpec("degenerate_symmetric_flat", "degenerate: symmetric NashConv(T)/NashConv(T/2), median (flat = plateau)",
              ">=", 0.5, source="ours", ref=_FLAT),
    CheckSpec("degenerate_asymref_linear_tail", "degenerate: asymmetric_reference tail fit of log NashConv, median R²",
              ">", 0.9, source="ours", ref=_TAIL),
    CheckSpec("kuhn_asymref_exact", "kuhn: asymmetric_reference NashConv at the horizon", "<", 1e-6,
              source="issue", ref="issue #4"),
    CheckSpec("kuhn_asym_exact", "kuhn: asymmetric (fixed σ) NashConv at the horizon", "<", 1e-6,
              source="issue", ref="issue #4"),
    CheckSpec("kuhn_speedup_vs_symref", "kuhn: iterations to 1e-6, best tuned symmetric_reference / "
              "asymmetric_reference (settings tuned on held-out Kuhn variants)", ">=", 1.0, source="ours",
              ref="issue #37 asks for the Kuhn speed check; the paper claims faster last-iterate convergence "
                  "than symmetric perturbation, where no Kuhn figure is known we ask for at least parity, as "
                  "on Leduc"),
    CheckSpec("leduc_asymref_1e3", "leduc: asymmetric_reference last-iterate NashConv at the horizon "
              "(setting tuned on held-out Kuhn variants)", "<=", 1e-3, source="issue",
              ref="issue #29 (Leduc: defaults or a documented rule that work; iterations and wall time to 1e-3)",
              settings=("full", "quick")),
    CheckSpec("leduc_speedup_vs_symref", "leduc: iterations to 1e-3, symmetric_reference / asymmetric_reference "
              "(each tuned on held-out Kuhn variants)", ">=", 1.0, source="ours",
              ref="the paper claims faster last-iterate convergence than symmetric perturbation; on Leduc, "
                  "where no figure is known, we ask for at least parity under one shared rule",
              settings=("full", "quick")),
    CheckSpec("kuhn_value", "kuhn: asymmetric_reference value for player 0 minus (−1/18)", "abs<=", 1e-6,
              source="ours", ref="issue #4 asks for the game value −1/18; 1e-6 matches its NashConv target"),
    CheckSpec("kuhn_cfr_plus_vs_openspiel", "kuhn: our CFR+ average NashConv minus OpenSpiel's C++ CFRPlusSolver's, "
              "largest absolute difference over the curve", "abs<=", 1e-9, source="ours",
              ref="issue #37 asks for OpenSpiel's C++ solver as the outside reference; the two implement one "
                  "algorithm, so they agree to rounding (1e-9 leaves room for summation order)"),
)

REPLICATION = Replication(
    unit="game (fraction checks; the others: master seed)",
    why="each evaluation game is drawn independently from the seed's stream 'games'; the arms' settings are "
        "chosen on other games (stream 'tuning_games'), so one game's outcome does not inform another's")

# The arms the comparisons read, as sections.py sets them (quick setting). Matrix games: every tuned arm
# goes through sections.tune on the held-out games of its family (8 per family, 10^4 iterations each;
# the full setting: 10 games at 5*10^4), picking the grid point with the fewest median iterations to 1e-6
# (analysis.pick_setting); eta_grid and mu_grid are the same in quick and full. Kuhn and Leduc: the three
# reference arms go through sections.tune_efg on held-out Kuhn variants, the same rule on a grid scaled by
# the payoff norm; the other gradient arms run solve_efg's rule (efg_defaults).
_ETA = (0.05, 0.1, 0.2, 0.4)
_STEP = ("simultaneous", "alternating")
_MU = (0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0)
_HELD_OUT = "held-out tuning games (8 per family, own random stream; 10^4 iterations each)"
_GRID = ("Grid: eta 0.05 and mu 1 are the authors' APGA values, the rest ours. The full setting tunes on 10 "
         "held-out games at 5*10^4 iterations; the grids are the same. ")
# scaled by each game's payoff norm: eta = c_eta/||A||_2, mu = c_mu*||A||_2
_EFG_SPACE = {"eta_scale": (0.5, 1.0, 2.0, 3.0, 4.0, 6.0), "mu_scale": (0.001, 0.00316, 0.01, 0.0316, 0.1, 0.316, 1.0),
              "step": _STEP}
_EFG_HELD_OUT = ("held-out Kuhn variants (Kuhn's tree and chance, every leaf's payoff resized by U(0.5, 1.5); 8 per "
                 "seed, own random stream; 3,000 iterations)")

ARMS = declare_arms(
    ArmSpec("asymmetric_reference", "method", space={"eta": _ETA, "step": _STEP, "mu": _MU}, trials=56,
            select_on=_HELD_OUT,
            note=_GRID + "Adaptive reference rule (ours); the choices per seed are in the result's notes."),
    ArmSpec("asymmetric", "method",
            space={"eta": _ETA, "step": _STEP, "mu": ("1/2 min(mu_bar_x, mu_bar_y) of each game",)}, trials=8,
            select_on=_HELD_OUT,
            reason="fewer trials than the symmetric-reference baselines (8 against 56) because its mu is not "
                   "tuned; instead it receives information they lack: its mu is set per evaluation game from "
                   "that game's own perturbation thresholds (an LP on the game, analysis.fixed_mu_per_game), "
                   "while the baselines use one mu per family chosen on held-out games",
            note=_GRID + "The fixed-sigma pair (two instances, two gradient evaluations per iteration); mu capped "
                 "at 1 and floored at 1e-4. During tuning it uses the held-out games' own thresholds."),
    ArmSpec("symmetric_reference", "baseline", space={"eta": _ETA, "step": _STEP, "mu": _MU}, trials=56,
            select_on=_HELD_OUT,
            note=_GRID + "Same dynamics and adaptive reference rule as the method, both players perturbed (our "
                 "implementation). The speed-up checks take the better of this arm and symmetric_reference_k, chosen "
                 "after the fact on the evaluation games."),
    ArmSpec("symmetric_reference_k", "baseline",
            space={"eta": _ETA, "step": _STEP, "mu": _MU, "reference_period": (20,)}, trials=56,
            select_on=_HELD_OUT,
            note=_GRID + "APGA: the slingshot update of the authors' earlier code with a fixed reference period "
                 "(20 iterations, not tuned; experiment.py calls it the authors' fixed period), our "
                 "implementation."),
    ArmSpec("efg_asymmetric_reference", "method", space=_EFG_SPACE, trials=84, select_on=_EFG_HELD_OUT,
            note="Kuhn and Leduc: the (c_eta, c_mu, step rule) chosen on the variants, scaled by each game's "
                 "||A||_2; 10^4 iterations on Kuhn and 3,000 on Leduc in quick.",
            metrics="asymmetric_reference"),
    ArmSpec("efg_symmetric_reference", "baseline", space=_EFG_SPACE, trials=84, select_on=_EFG_HELD_OUT,
            note="Same dynamics and adaptive reference, both players perturbed; its own setting, same protocol.",
            metrics="symmetric_reference"),
    ArmSpec("efg_symmetric_reference_k", "baseline", space={**_EFG_SPACE, "reference_period": (20,)}, trials=84,
            select_on=_EFG_HELD_OUT, note="APGA's fixed period 20 (Kuhn only); its own setting, same protocol.",
            metrics="symmetric_reference_k"),
)

_SYMMETRIC = ("symmetric_reference", "symmetric_reference_k")

# The abstract: exact equilibria with a linear last-iterate rate, faster than symmetric perturbation (whose
# rate is slower); read on the random matrix family. Kuhn's game value is a correctness diagnostic. The
# speed-ups count iterations to a target within a horizon (unreached = T + 1), so they also depend on it.
CHECKS = annotate(
    CHECKS,
    headline=("random_asymref_exact", "random_asymref_linear_tail", "random_asymref_speedup"),
    diagnostic=("kuhn_value", "kuhn_cfr_plus_vs_openspiel"),
    compares={"random_asymref_speedup": ("asymmetric_reference", *_SYMMETRIC),
              "random_asym_speedup": ("asymmetric", *_SYMMETRIC),
              "degenerate_asymref_speedup": ("asymmetric_reference", *_SYMMETRIC),
              "degenerate_asym_speedup": ("asymmetric", *_SYMMETRIC),
              "kuhn_speedup_vs_symref": ("efg_asymmetric_reference", "efg_symmetric_reference",
                                         "efg_symmetric_reference_k"),
              "leduc_speedup_vs_symref": ("efg_asymmetric_reference", "efg_symmetric_reference")},
    budget={"random_asymref_speedup": "iterations", "random_asym_speedup": "iterations",
            "degenerate_asymref_speedup": "iterations", "degenerate_asym_speedup": "iterations",
            "kuhn_speedup_vs_symref": "efg_iterations", "leduc_speedup_vs_symref": "leduc_iterations"},
)
