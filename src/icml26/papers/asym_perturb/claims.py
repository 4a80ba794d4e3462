"""The checks of the asym_perturb reproduction, declared before any run (``icml26 info asym_perturb``).

"The horizon" is ``iterations`` for matrix games (2·10⁴ quick), ``efg_iterations`` for
Kuhn poker (10⁴ quick) and ``leduc_iterations`` for Leduc (3,000 quick). An unreached target
counts as T + 1 iterations, so a speed-up ratio is then a lower bound. The Kuhn and Leduc
checks are measured when ``efg_games`` holds the game.

Every tuned arm takes its (η, μ, step rule) from one protocol on held-out games (:mod:`.sections`),
and the fixed-σ pair ("asymmetric") takes μ = ½·min(μ̄_x, μ̄_y) per game from the thresholds LP:
with one fixed μ (0.3, say) the pair could be exact only on the games whose thresholds both exceed
it. The two Leduc checks test :func:`~.solve.solve_efg`'s default rule.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

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
    CheckSpec("leduc_asymref_1e3", "leduc: asymmetric_reference last-iterate NashConv at the horizon "
              "(solve_efg's rule)", "<=", 1e-3, source="issue",
              ref="issue #29 (Leduc: defaults or a documented rule that work; iterations and wall time to 1e-3)",
              settings=("full", "quick")),
    CheckSpec("leduc_speedup_vs_symref", "leduc: iterations to 1e-3, symmetric_reference / asymmetric_reference "
              "(same rule)", ">=", 1.0, source="ours",
              ref="the paper claims faster last-iterate convergence than symmetric perturbation; on Leduc, "
                  "where no figure is known, we ask for at least parity under one shared rule",
              settings=("full", "quick")),
    CheckSpec("kuhn_value", "kuhn: asymmetric_reference value for player 0 minus (−1/18)", "abs<=", 1e-6,
              source="ours", ref="issue #4 asks for the game value −1/18; 1e-6 matches its NashConv target"),
)

# The arms the comparisons read, as sections.py sets them (quick setting). Matrix games: every tuned arm
# goes through sections.tune on the held-out games of its family (8 per family, 10^4 iterations each;
# the full setting: 10 games at 5*10^4), picking the grid point with the fewest median iterations to 1e-6
# (analysis.pick_setting); eta_grid and mu_grid are the same in quick and full. Leduc: no selection,
# every arm runs solve_efg's rule (efg_defaults), which was chosen looking at Kuhn and Leduc themselves.
_ETA = (0.05, 0.1, 0.2, 0.4)
_STEP = ("simultaneous", "alternating")
_MU = (0.1, 0.3, 1.0)
_HELD_OUT = "held-out tuning games (8 per family, own random stream; 10^4 iterations each)"
_GRID = ("Grid: eta 0.05 and mu 1 are the authors' APGA values, the rest ours. The full setting tunes on 10 "
         "held-out games at 5*10^4 iterations; the grids are the same. ")
_LEDUC_RULE = {"eta": ("1.5/||A||_2 = 3.0",), "mu": ("0.01*||A||_2 = 0.005",), "step": ("alternating",),
               "reference": ("adaptive",)}

ARMS = declare_arms(
    ArmSpec("asymmetric_reference", "method", space={"eta": _ETA, "step": _STEP, "mu": _MU}, trials=24,
            select_on=_HELD_OUT,
            note=_GRID + "Adaptive reference rule (ours). Picked eta 0.4 and alternating steps on every seed and "
                 "family (eta 0.4 is the grid's top edge), mu 1 or 0.3."),
    ArmSpec("asymmetric", "method",
            space={"eta": _ETA, "step": _STEP, "mu": ("1/2 min(mu_bar_x, mu_bar_y) of each game",)}, trials=8,
            select_on=_HELD_OUT,
            reason="fewer trials than the symmetric-reference baselines (8 against 24) because its mu is not "
                   "tuned; instead it receives information they lack: its mu is set per evaluation game from "
                   "that game's own perturbation thresholds (an LP on the game, analysis.fixed_mu_per_game), "
                   "while the baselines use one mu per family chosen on held-out games",
            note=_GRID + "The fixed-sigma pair (two instances, two gradient evaluations per iteration); mu capped "
                 "at 1 and floored at 1e-4. During tuning it uses the held-out games' own thresholds."),
    ArmSpec("symmetric_reference", "baseline", space={"eta": _ETA, "step": _STEP, "mu": _MU}, trials=24,
            select_on=_HELD_OUT,
            note=_GRID + "Same dynamics and adaptive reference rule as the method, both players perturbed (our "
                 "implementation). Picked eta 0.4, alternating, mu 0.1 (random, the grid's lower edge) or 0.3 "
                 "(degenerate). The speed-up checks take the better of this arm and symmetric_reference_k, chosen "
                 "after the fact on the evaluation games."),
    ArmSpec("symmetric_reference_k", "baseline",
            space={"eta": _ETA, "step": _STEP, "mu": _MU, "reference_period": (20,)}, trials=24,
            select_on=_HELD_OUT,
            note=_GRID + "APGA: the slingshot update of the authors' earlier code with a fixed reference period "
                 "(20 iterations, not tuned; experiment.py calls it the authors' fixed period), our "
                 "implementation."),
    ArmSpec("leduc_asymmetric_reference", "method", space=_LEDUC_RULE, trials=1,
            select_on="nothing selected in the run; the rule was set in pilots on Leduc itself",
            reason="the rule (eta = 1.5/||A||_2, mu = 0.01*||A||_2, alternating steps, adaptive reference) was "
                   "chosen by one-factor pilots of this arm on Kuhn and Leduc, the evaluation games (README, "
                   "'Extensive-form defaults'); the baseline was given it without pilots of its own",
            note="solve_efg's rule on Leduc (||A||_2 = 0.50); 3,000 iterations in quick, 10^5 in full.",
            metrics="asymmetric_reference"),
    ArmSpec("leduc_symmetric_reference", "baseline", space=_LEDUC_RULE, trials=1,
            select_on="nothing selected in the run; it takes the method's rule",
            reason="receives the rule chosen for the method, untuned for itself: with eta = 3 and mu in "
                   "{0.00125, 0.0025, 0.01} for both arms, a reviewer's rerun has symmetric_reference reach "
                   "NashConv 1e-3 in 1,905 iterations against 1,879 for asymmetric_reference (ratio ~1.0, "
                   "against the committed 1.57, where it does not reach 1e-3 within 3,000 and counts as 3,001)",
            note="Same dynamics, both players perturbed; same rule, steps and iterations as the method arm.",
            metrics="symmetric_reference"),
)

_SYMMETRIC = ("symmetric_reference", "symmetric_reference_k")

# The abstract: exact equilibria with a linear last-iterate rate, faster than symmetric perturbation (whose
# rate is slower); read on the random matrix family. Kuhn's game value is a correctness diagnostic. The
# speed-ups count iterations to a target within a horizon (unreached = T + 1), so they also depend on it.
CHECKS = annotate(
    CHECKS,
    headline=("random_asymref_exact", "random_asymref_linear_tail", "random_asymref_speedup"),
    diagnostic=("kuhn_value",),
    compares={"random_asymref_speedup": ("asymmetric_reference", *_SYMMETRIC),
              "random_asym_speedup": ("asymmetric", *_SYMMETRIC),
              "degenerate_asymref_speedup": ("asymmetric_reference", *_SYMMETRIC),
              "degenerate_asym_speedup": ("asymmetric", *_SYMMETRIC),
              "leduc_speedup_vs_symref": ("leduc_asymmetric_reference", "leduc_symmetric_reference")},
    budget={"random_asymref_speedup": "iterations", "random_asym_speedup": "iterations",
            "degenerate_asymref_speedup": "iterations", "degenerate_asym_speedup": "iterations",
            "leduc_speedup_vs_symref": "leduc_iterations"},
)
