"""The checks of the stream_spr reproduction (issue #9, "Figures to reach"), declared before any run.

The quick mode (one game) measures ``return_ratio``; the full mode (several games or seeds)
measures ``games_won``, the paper's strict claim. Each is declared for its settings only, so a
run's result holds the one it measures (a quick run overridden to several games measures
``games_won`` and leaves ``return_ratio`` not measured).
"""

from icml26.contract import CheckSpec, declare

CHECKS = declare(
    CheckSpec("no_nonfinite", "non-finite values (parameters, TD errors, SPR losses; all runs)", "==", 0.0,
              source="issue", ref="issue #9"),
    CheckSpec("spr_loss_early", "SPR+orth² loss, lowest bin mean within the loss window (worst run)", "<", -0.8,
              source="issue", ref="issue #9"),
    CheckSpec("orth2_cosine", "max abs cos(SPR encoder update, ObGD encoder update) after orth²", "<", 1e-4,
              source="issue", ref="issue #9"),
    CheckSpec("return_ratio", "return ratio SPR+orth² / Stream Q(λ), last 10% of steps", ">=", 0.9,
              source="issue", ref="issue #9 (quick mode)", settings=("quick", "tiny")),
    CheckSpec("games_won", "games where SPR+orth² beats Stream Q(λ) (last-10% mean return over seeds)", ">=", 2.0,
              source="issue", ref="issue #9 (full mode: at least 2 of 3 games)", settings=("full",)),
)
