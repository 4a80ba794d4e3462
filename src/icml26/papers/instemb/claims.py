"""The checks of InstEmb's reproduction on AttrWorld (tiny SFT'd Llama, K = 4, MSE distillation).

Every check reads the held-out attribute: InstEmb trains on three attributes' instructions (two of their three
paraphrases), the SFT teacher answers all four, and the held-out texts are embedded under the fourth
attribute's three instructions, which no embedding arm saw (with the same instructions and values in
training and evaluation the task is supervised clustering, and DAAP and its read-outs all sit at the ceiling).

Composite score for the ablations: the mean of the two instruction-awareness metrics (k-means
NMI and Inst-STS Spearman), as the paper compares its ablations on the mean of its suite.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

CHECKS = declare(
    CheckSpec("nmi_gain_vs_input_last",
              "instruction-conditioned k-means NMI on the held-out attribute: InstEmb-DAAP minus InputLast of the SFT "
              "model",
              ">=", 0.25, source="issue", ref="issue #23"),
    CheckSpec("spearman_gain_vs_input_last",
              "Inst-STS Spearman on the held-out attribute (2000 pairs): InstEmb-DAAP minus InputLast of the SFT model",
              ">=", 0.2, source="issue", ref="issue #23"),
    CheckSpec("daap_minus_contrastive_only",
              "mean of NMI and Spearman: InstEmb-DAAP minus contrastive-only last-token training",
              ">=", 0.0, source="issue", ref="issue #23"),
    CheckSpec("daap_minus_instemb_last_token",
              "mean of NMI and Spearman: InstEmb-DAAP minus the same InstEmb model read at its last token",
              ">=", 0.0, source="issue", ref="issue #23"),
    CheckSpec("daap_minus_lookahead",
              "mean of NMI and Spearman: InstEmb-DAAP minus the same InstEmb model read at its look-ahead states alone",
              ">=", 0.0, source="issue", ref="issue #39: DAAP must add to the look-ahead read-out it pools"),
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
_DATA = ("Trained on 256 AttrWorld texts under 6 instructions (colour, shape and size x paraphrases 0 and 1); "
         "the checks read 400 held-out texts under the 3 instructions of the held-out attribute (position), which "
         "no embedding arm trained on. "
         "One positive view of the contrastive loss is the embedding of the gold output 'it is <value>' of a "
         "trained attribute.")
ARMS = declare_arms(
    ArmSpec("instemb_mse_daap", "method",
            space={**_TRAIN, "num_lookahead": (4,), "distill_weight": (1.0,), "daap_weight": (1.0,)},
            trials=1, select_on=_FIXED,
            note="InstEmb-MSE read with DAAP. lr 3e-4 and batch 64 from the brief (its section 4.2); K = 4, tau "
                 "0.05 and lambda = 1 are the issue's values (the paper does not publish them); the DAAP weight "
                 "w = 1 is ours. The teacher reads the gold output for the distillation target. " + _DATA),
    ArmSpec("input_last", "baseline", space={"pooling": ("eos",)}, trials=1, select_on=_FIXED,
            reason="Gets no embedding training: it is the SFT model (fine-tuned to answer all 12 instructions on "
                   "2,000 other texts) read at its last input token, while the method's arm is trained 200 steps on "
                   "the other three attributes with a contrastive objective whose positives include their gold "
                   "answers. On the held-out attribute the gap measures what the embedding training transfers.",
            note="The paper's InputLast row: the SFT'd tiny Llama (the teacher and every arm's initial student), "
                 "given the same instruction + text prompt."),
    ArmSpec("contrastive_last_token", "control", space={**_TRAIN, "num_lookahead": (0,), "distill_weight": (0.0,)},
            trials=1, select_on=_FIXED,
            reason="Same budget, batches and views as the method; it lacks only the distillation target and the "
                   "look-ahead read-out (the ablated parts). Its lr and tau are the method's, not tuned for it; "
                   "train_texts = 256 was set so that this arm stays below saturation.",
            note="K = 0, lambda = 0, last-token pooling, on a fresh copy of the SFT model. " + _DATA),
    ArmSpec("instemb_mse_last_token", "control",
            space={**_TRAIN, "num_lookahead": (4,), "distill_weight": (1.0,), "pooling": ("eos",)},
            trials=1, select_on=_FIXED,
            note="The method's own trained model read at h_eos only (the 'w/o DAAP' ablation): identical training, "
                 "a different read-out."),
    ArmSpec("instemb_mse_lookahead", "control",
            space={**_TRAIN, "num_lookahead": (4,), "distill_weight": (1.0,), "pooling": ("lookahead",)},
            trials=1, select_on=_FIXED,
            note="The method's own trained model read at its look-ahead states alone: DAAP pools these with h_eos, "
                 "so this isolates what the pooling adds."),
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
              "daap_minus_instemb_last_token": ("instemb_mse_daap", "instemb_mse_last_token"),
              "daap_minus_lookahead": ("instemb_mse_daap", "instemb_mse_lookahead")},
    budget={"daap_minus_contrastive_only": "steps", "daap_minus_instemb_last_token": "steps",
            "daap_minus_lookahead": "steps"},
)
