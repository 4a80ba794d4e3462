"""The checks of the asym_perturb reproduction, declared before any run (``icml26 info asym_perturb``).

"The horizon" is ``iterations`` for matrix games (2·10⁴ quick), ``efg_iterations`` for
Kuhn poker (10⁴ quick) and ``leduc_iterations`` for Leduc (3,000 quick). An unreached target
counts as T + 1 iterations, so a speed-up ratio is then a lower bound. The Kuhn and Leduc
checks are measured when ``efg_games`` holds the game.

Issue #29 changed how the arms are set, not the bars: every tuned arm takes its (η, μ, step
rule) from one protocol on held-out games, and the fixed-σ pair ("asymmetric") takes
μ = ½·min(μ̄_x, μ̄_y) per game from the thresholds LP (at the earlier fixed μ = 0.3 the pair
could be exact on only the games whose thresholds both exceed 0.3). The two Leduc checks are new.
"""

from icml26.contract import CheckSpec, annotate, declare

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

# The abstract: exact equilibria with a linear last-iterate rate, faster than symmetric perturbation (whose
# rate is slower); read on the random matrix family. Kuhn's game value is a correctness diagnostic.
CHECKS = annotate(
    CHECKS,
    headline=("random_asymref_exact", "random_asymref_linear_tail", "random_asymref_speedup"),
    diagnostic=("kuhn_value",),
)
