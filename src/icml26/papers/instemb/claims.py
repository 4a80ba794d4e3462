"""The checks of InstEmb's reproduction on AttrWorld (tiny SFT'd Llama, K = 4, MSE distillation).

Composite score for the ablations: the mean of the two instruction-awareness metrics (k-means
NMI and Inst-STS Spearman), as the paper compares its ablations on the mean of its suite.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

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

# The arms the checks compare, as data. Nothing is selected in any arm: there is no validation split, and the
# trained arms run once at the settings below (the same in quick and full; full adds InstEmb-KL and two
# real-model tiers that no check compares).
_FIXED = "none: fixed settings"
_TRAIN = {"lr": (3e-4,), "steps": (200,), "batch_size": (64,), "tau": (0.05,), "train_texts": (256,)}
_DATA = ("Trained on 256 AttrWorld texts under all 12 instructions (4 attributes x 3 paraphrases): the same "
         "instructions, attributes and values that are evaluated on 400 held-out texts. One positive view of the "
         "contrastive loss is the embedding of the gold output 'it is <value>', i.e. of the label the evaluation "
         "clusters on.")
ARMS = declare_arms(
    ArmSpec("instemb_mse_daap", "method",
            space={**_TRAIN, "num_lookahead": (4,), "distill_weight": (1.0,), "daap_weight": (1.0,)},
            trials=1, select_on=_FIXED,
            note="InstEmb-MSE read with DAAP. lr 3e-4 and batch 64 from the brief (its section 4.2); K = 4, tau "
                 "0.05 and lambda = 1 are the issue's values (the paper does not publish them); the DAAP weight "
                 "w = 1 is ours. The teacher reads the gold output for the distillation target. "
                 "Reaches both ceilings on every seed (NMI 1.000 / 1.000 / 0.999, Spearman 0.865-0.866). " + _DATA),
    ArmSpec("input_last", "baseline", space={"pooling": ("eos",)}, trials=1, select_on=_FIXED,
            reason="Gets no embedding training: it is the SFT model (fine-tuned to answer the same 12 instructions "
                   "on 2,000 other texts) read at its last input token, while the method's arm is trained 200 steps "
                   "with a contrastive objective whose positives include the gold answer, the very label the "
                   "evaluation scores. The gap measures in-distribution embedding training as much as the "
                   "look-ahead objective.",
            note="The paper's InputLast row: the SFT'd tiny Llama (the teacher and every arm's initial student), "
                 "given the same instruction + text prompt."),
    ArmSpec("contrastive_last_token", "control", space={**_TRAIN, "num_lookahead": (0,), "distill_weight": (0.0,)},
            trials=1, select_on=_FIXED,
            reason="Same budget, batches and views as the method; it lacks only the distillation target and the "
                   "look-ahead read-out (the ablated parts). Its lr and tau are the method's, not tuned for it; "
                   "train_texts = 256 was set so that this arm stays below saturation, and it collapses on one "
                   "seed (NMI 0.390; 0.889 and 0.868 on the others) while the method is at the ceiling.",
            note="K = 0, lambda = 0, last-token pooling, on a fresh copy of the SFT model. " + _DATA),
    ArmSpec("instemb_mse_last_token", "control",
            space={**_TRAIN, "num_lookahead": (4,), "distill_weight": (1.0,), "pooling": ("eos",)},
            trials=1, select_on=_FIXED,
            note="The method's own trained model read at h_eos only (the 'w/o DAAP' ablation): identical training, "
                 "a different read-out. The look-ahead read-out alone (instemb_mse_lookahead, not compared by a "
                 "check) also reaches the ceilings on every seed, so DAAP's added value over it cannot show here."),
)

# The abstract: embeddings that follow the instruction better than the input's last token, from the output-
# aware (look-ahead) objective on top of contrastive training. The headroom check is a precondition.
CHECKS = annotate(
    CHECKS,
    headline=("nmi_gain_vs_input_last", "spearman_gain_vs_input_last", "daap_minus_contrastive_only"),
    diagnostic=("contrastive_only_headroom",),
    compares={"nmi_gain_vs_input_last": ("instemb_mse_daap", "input_last"),
              "spearman_gain_vs_input_last": ("instemb_mse_daap", "input_last"),
              "daap_minus_contrastive_only": ("instemb_mse_daap", "contrastive_last_token"),
              "daap_minus_instemb_last_token": ("instemb_mse_daap", "instemb_mse_last_token")},
    budget={"daap_minus_contrastive_only": "steps", "daap_minus_instemb_last_token": "steps"},
)
