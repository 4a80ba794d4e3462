"""The checks of Fox's reproduction (the issue's "Figures to reach"), declared before any run."""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

# The preconditions (streams disagree on hallucinated mentions, the probe's heads beat random heads under
# saturation, POPE answered) are measured by every run and gate the CHAIR and POPE checks of both testbeds.
# The pathology testbed's checks (issues #40 and #43: score CHAIR only where hallucination flows through the
# pathway Fox intervenes on, and POPE only once the model answers it) are measured by the further run
# results/fox/pathology (quick setting with testbed=pathology and its recipe, see pathology_run.py), not by
# the committed quick run; declared for the full setting only so that the quick result does not list them.
_PATHOLOGY = ("full",)
_DISAGREE = ("issue #40 (precondition: the streams disagree on the hallucinated tokens); 0.2 = 1 - 0.8: the fused "
             "argmax keeps a token both streams rank first, so along vanilla's captions Fox can remove only "
             "mentions where the streams disagree (or by changing an earlier word)")

CHECKS = declare(
    CheckSpec("vanilla_chair_i", "vanilla CHAIR_I on the adversarial captioning set (the benchmark bites)", ">=",
              0.15, source="issue", ref="issue #19"),
    CheckSpec("fox_chair_i_ratio", "Fox CHAIR_I / vanilla CHAIR_I", "<=", 0.8, source="issue", ref="issue #19"),
    CheckSpec("recall_drop", "vanilla recall - Fox recall (object recall, fraction)", "<=", 0.03,
              source="issue", ref="issue #19"),
    CheckSpec("pope_f1_gain", "Fox POPE-adversarial F1 - vanilla POPE-adversarial F1", ">=", 0.0,
              source="issue", ref="issue #19"),
    CheckSpec("fox_minus_sid_chair_s", "Fox CHAIR_S - SID CHAIR_S", "<=", 0.0, source="issue", ref="issue #19"),
    CheckSpec("streams_disagree_hallucinated", "fraction of vanilla's hallucinated object mentions (teacher-forced) "
              "at which Fox's interventional stream's argmax differs from the observational one's", ">=", 0.2,
              source="ours", ref=_DISAGREE),
    CheckSpec("probe_saturation_over_random", "drop of vanilla p(yes | absent partner B) when Fox's probe's heads are "
              "saturated minus when k random heads of the same layers are", ">", 0.0, source="issue",
              ref="issue #40 (the head probe beats chance); issue #43 (the saturation effect, not ablation rank)"),
    CheckSpec("pope_random_accuracy", "vanilla POPE-random accuracy (the model answers POPE)", ">=", 0.8,
              source="issue", ref="issue #43"),
    CheckSpec("pathology_chair_i_ratio", "Fox CHAIR_I / vanilla CHAIR_I on the pathology testbed", "<=", 0.8,
              source="issue", ref="issue #19 (bar); issue #40 (a testbed with the pathology)", settings=_PATHOLOGY),
    CheckSpec("pathology_pope_f1_gain", "Fox POPE-adversarial F1 - vanilla's on the pathology testbed", ">=", 0.0,
              source="issue", ref="issue #19 (bar); issue #43 (POPE scored once answered)", settings=_PATHOLOGY),
)

# Every arm decodes greedily with the same token budget (max_new_tokens) on one trained tiny LLaVA per
# seed; nothing is selected for any arm: each runs at its authors' LLaVA-1.5 settings, with layer and
# token counts scaled to the 4-layer, 8-head, 16-image-token model (quick and full alike).
_FIXED = "none: fixed settings"
ARMS = declare_arms(
    ArmSpec("fox", "method", space={"rho": (0.35,), "layers": ("[ceil(L/16), ceil(L/2)) = {1} of 4",),
                                    "tau": (0.15,), "alpha_js": (2.0,), "beta": (0.1,), "saturation": ("fp16",)},
            trials=1, select_on=_FIXED, metrics="Fox",
            note="rho, tau, alpha_JS, beta and the fp16 saturation are the authors' LLaVA-1.5 values (their code); "
                 "the layer range is ours, scaling their 2..15 of 32 to 4 layers. Same image, prompt and token "
                 "budget as every arm; the plausibility mask is applied before the argmax, as for the baselines."),
    ArmSpec("vanilla", "baseline", space={"decoding": ("greedy",)}, trials=1, select_on=_FIXED,
            note="Plain greedy decoding through the same driver. Greedy argmax is invariant to temperature, so the "
                 "greedy checks need no temperature match; under sampling Fox's fusion of agreeing streams "
                 "(z = l_o + 2 l_i ~ 3 l) is a temperature of 1/3, and the run's 'vanilla sampled T=1/3' row "
                 "(not a check) is that control: CHAIR_I 0.289 against Fox sampled 0.289."),
    ArmSpec("sid", "baseline", space={"agg_layer": ("max(1, ceil(L/16)) = 1",), "keep_fraction": ("100/576",),
                                      "alpha": (1.0,), "beta": (0.1,)},
            trials=1, select_on=_FIXED, metrics="SID",
            note="The authors' LLaVA-1.5 settings (AGG layer 2 of 32, keep 100 of 576 image tokens, z = 2l - l_cd, "
                 "beta 0.1), scaled: layer 1 of 4, 3 of 16 image tokens kept. Not re-tuned for the tiny model, "
                 "like Fox."),
)

# The abstract: fewer hallucinated objects than vanilla decoding while preserving linguistic richness
# (recall). vanilla_chair_i is the precondition that the benchmark bites.
CHECKS = annotate(
    CHECKS,
    headline=("fox_chair_i_ratio", "recall_drop", "pathology_chair_i_ratio"),
    diagnostic=("vanilla_chair_i", "streams_disagree_hallucinated", "probe_saturation_over_random",
                "pope_random_accuracy"),
    compares={"fox_chair_i_ratio": ("fox", "vanilla"), "recall_drop": ("fox", "vanilla"),
              "pope_f1_gain": ("fox", "vanilla"), "fox_minus_sid_chair_s": ("fox", "sid"),
              "pathology_chair_i_ratio": ("fox", "vanilla"), "pathology_pope_f1_gain": ("fox", "vanilla")},
    requires={"pathology_chair_i_ratio": ("streams_disagree_hallucinated", "probe_saturation_over_random"),
              "fox_chair_i_ratio": ("streams_disagree_hallucinated", "probe_saturation_over_random"),
              "pathology_pope_f1_gain": ("pope_random_accuracy",), "pope_f1_gain": ("pope_random_accuracy",)},
    # the testbed with the pathology is a further run (full setting); its latest recipe, the capped one,
    # is where the paper's claim reads its CHAIR headline
    run={"pathology_chair_i_ratio": "pathology_capped"},
)
