"""The checks of InstEmb's reproduction on AttrWorld (tiny SFT'd Llama, K = 4, MSE distillation).

Composite score for the ablations: the mean of the two instruction-awareness metrics (k-means
NMI and Inst-STS Spearman), as the paper compares its ablations on the mean of its suite.
"""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("nmi_gain_vs_input_last",
              "instruction-conditioned k-means NMI: InstEmb-DAAP minus InputLast of the SFT model",
              ">=", 0.25, source="issue", ref="issue #23"),
    CheckSpec("spearman_gain_vs_input_last",
              "Inst-STS Spearman (2000 pairs): InstEmb-DAAP minus InputLast of the SFT model",
              ">=", 0.2, source="issue", ref="issue #23"),
    CheckSpec("daap_minus_contrastive_only",
              "mean of NMI and Spearman: InstEmb-DAAP minus contrastive-only last-token training",
              ">=", 0.0, source="issue", ref="issue #23"),
    CheckSpec("daap_minus_instemb_last_token",
              "mean of NMI and Spearman: InstEmb-DAAP minus the same InstEmb model read at its last token",
              ">=", 0.0, source="issue", ref="issue #23"),
    CheckSpec("contrastive_only_headroom",
              "NMI of contrastive-only training (the comparison is informative only below saturation)",
              "<=", 0.95, source="ours",
              ref="issue #23 asks that contrastive-only training not saturate; NMI 1 is the ceiling, "
                  "0.95 leaves room for a difference of the paper's size (1-3 points)"),
)

# The abstract: embeddings that follow the instruction better than the input's last token, from the output-
# aware (look-ahead) objective on top of contrastive training. The headroom check is a precondition.
CHECKS = annotate(
    CHECKS,
    headline=("nmi_gain_vs_input_last", "spearman_gain_vs_input_last", "daap_minus_contrastive_only"),
    diagnostic=("contrastive_only_headroom",),
)
