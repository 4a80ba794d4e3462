"""The checks of the hamu reproduction, declared before any run (``icml26 info hamu``)."""

from icml26.contract import CheckSpec, declare

CHECKS = declare(
    CheckSpec("guarantee", "share of HAMU-Q steps with realised forget-loss increase >= 0.9 B "
              "(float64 probe at guarantee_lr)", ">=", 0.95,
              source="issue", ref="issue #5"),
    CheckSpec("matched_margin", "rho=0.5: HAMU-Q retain-test acc - GradDiff's at matched forget acc (points)",
              ">=", 2.0, source="issue", ref="issue #5"),
    CheckSpec("cos_grows", "median step-0 cos(g_r, g_f) grows with rho (smallest increase)", ">", 0.0,
              source="issue", ref="issue #5"),
    CheckSpec("stop_earlier", "stop criterion fires earlier for larger rho (smallest decrease of the mean "
              "first-stop step)", ">", 0.0, source="issue", ref="issue #5"),
)
