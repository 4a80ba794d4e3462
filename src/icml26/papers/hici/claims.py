"""The checks of the HiCI reproduction, as data (``icml26 info hici`` prints them)."""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

CHECKS = declare(
    CheckSpec("chunked_no_slots_512", "(c) chunked attention without slots: topic accuracy at 512 tokens (chunked mode)",
              "<=", 0.40, source="issue", ref="issue #20"),
    CheckSpec("hici_accuracy_512", "(a) HiCI causal_shift: topic accuracy at 512 tokens (chunked mode)",
              ">=", 0.85, source="issue", ref="issue #20"),
    CheckSpec("hici_minus_s2attn_512",
              "HiCI (chunked) minus (b) LongLoRA S2-Attn (full mode) accuracy at 512 (within 5 points: no worse)",
              ">=", -0.05, source="issue", ref="issue #20"),
    CheckSpec("hici_minus_full_ft_512",
              "HiCI (chunked) minus (d) full-attention fine-tuning accuracy at 512 (within 5 points: no worse)",
              ">=", -0.05, source="issue", ref="issue #20"),
    CheckSpec("full_time_slope", "full SDPA attention block: log-log slope of forward+backward time, N = 1k-8k",
              ">=", 1.7, source="issue", ref="issue #20"),
    CheckSpec("hici_time_slope", "HiCI attention block with fixed G = 256: log-log slope of time, N = 1k-8k",
              "<=", 1.3, source="issue", ref="issue #20"),
    CheckSpec("hici_full_time_ratio_8k", "HiCI (G = 256) / full SDPA attention-block time at N = 8k",
              "<=", 0.35, source="issue", ref="issue #20"),
    CheckSpec("param_overhead_llama2_7b",
              "HiCI share of LLaMA-2-7B + HiCI parameters, default sizes (modules counted)",
              "<=", 0.055, source="issue", ref="issue #20"),
    CheckSpec("full_time_slope_rounds", "full SDPA attention block: log-log slope of time over N = 2k-8k within "
              "each interleaved round (every size and arm timed in turn), median of 5 rounds",
              ">=", 1.7, source="issue", ref="issue #20 (bar); issue #43 (2k-8k fit, >= 5 interleaved repeats)"),
    CheckSpec("hici_time_slope_rounds", "HiCI attention block, fixed G = 256: log-log slope over N = 2k-8k within "
              "each interleaved round, median of 5 rounds",
              "<=", 1.3, source="issue", ref="issue #20 (bar); issue #43 (2k-8k fit, >= 5 interleaved repeats)"),
    CheckSpec("hici_full_time_ratio_8k_rounds", "HiCI (G = 256) / full SDPA time at N = 8k within each interleaved "
              "round, median of 5 rounds", "<=", 0.35, source="issue",
              ref="issue #20 (bar); issue #40 (ratios in one process, median of >= 5 interleaved repeats)"),
    CheckSpec("hici_minus_s2attn_512_own",
              "HiCI minus (b) LongLoRA S2-Attn accuracy at 512, each in the mode it trained in (HiCI chunked, S2-Attn "
              "grouped; within 5 points: no worse)", ">=", -0.05, source="issue", ref="issue #43 (each arm in its own mode)"),
    CheckSpec("hici_minus_s2attn_512_all_full",
              "HiCI minus (b) LongLoRA S2-Attn accuracy at 512, both in full attention (within 5 points)", ">=", -0.05,
              source="issue", ref="issue #43 (every arm in full mode)"),
    CheckSpec("hici_minus_full_ft_512_all_full",
              "HiCI minus (d) full-attention fine-tuning accuracy at 512, both in full attention (within 5 points)",
              ">=", -0.05, source="issue", ref="issue #43 (every arm in full mode)"),
    CheckSpec("pi_only_acc_512_full",
              "(e) pretrained base + position interpolation x4, no fine-tuning: topic accuracy at 512 (full attention)",
              "<=", 0.90, source="ours",
              ref="issue #43: the baselines' 1.000 is position interpolation; a full-mode comparison shows what "
                  "fine-tuning buys only where PI alone stays below 0.90"),
    CheckSpec("causal_shift_leak", "trained HiCI causal_shift: max |change of logits at t <= 255| when tokens > 255 change",
              "abs<=", 1e-6, source="ours",
              ref="strict causality is what makes the chunked accuracy honest; the leaking modes change these logits"),
)

# Every trained arm starts from the same pretrained tiny Llama, gets linear position interpolation x4 and
# finetune_steps = 150 AdamW steps (warm-up 10, cosine) of LoRA r = 8 on q/k/v/o plus trainable embeddings
# and norms on the same documents in the same order; nothing is selected for any arm (quick and full use the
# same values). The checks read HiCI in its chunked mode and the baselines in full attention.
_FIXED = "none: fixed settings"
ARMS = declare_arms(
    ArmSpec("hici", "method",
            space={"lr": (2e-3,), "hici_lr": (1e-2,), "lora_rank": (8,), "segment_tokens": (128,),
                   "num_slots": (8,), "num_global": (4,), "bottleneck": (32,), "stat_dim": (16,)},
            trials=1, select_on=_FIXED,
            note="Scored in its chunked mode (segments of G = 128, linear cost), the harder setting. Its 66,436 "
                 "HiCI parameters train at hici_lr = 10x lr (the authors' ratio), beside the shared LoRA/embeddings/"
                 "norms: 110,724 trainable parameters against the baselines' 23,808. G = 128 equals the task's "
                 "segment length, so each slot summary covers exactly one topic segment. M, K are the authors'; "
                 "B, s are ours, scaled to d = 64."),
    ArmSpec("s2attn", "baseline", space={"lr": (2e-3,), "lora_rank": (8,), "group_size": (128,)},
            trials=1, select_on=_FIXED,
            note="LongLoRA's S2-Attn (our no-wrap partition) at training, scored in full attention as LongLoRA "
                 "evaluates. Its 1.000 at 512 and 1024 tokens comes from position interpolation, not from the "
                 "fine-tuning: the pretrained base with PI x4 and no fine-tuning also scores 1.000 there."),
    ArmSpec("full_ft", "baseline", space={"lr": (2e-3,), "lora_rank": (8,)}, trials=1, select_on=_FIXED,
            note="Full-attention LoRA+ fine-tuning (not full-parameter fine-tuning), scored in full attention. "
                 "Like s2attn, its 1.000 at 512 (0.999 at 1024) is already reached by the pretrained base with PI x4 "
                 "alone."),
    ArmSpec("pi_only", "control", space={}, trials=1, select_on=_FIXED,
            note="The pretrained base with linear position interpolation x4 and no fine-tuning, scored in full "
                 "attention (its own mode) and block-local: what the baselines' full-mode score owes to PI alone."),
    ArmSpec("hici_fixed_g", "method", space={"segment": (256,), "hidden": (256,)}, trials=1, select_on=_FIXED,
            note="Timing arm: one Llama attention block patched with HiCI at G = 256 and the authors' 7B module sizes "
                 "(B = 512, s = 128, M = 8, K = 4), forward + backward, fastest of bench_repeats runs; seconds are "
                 "in the result's provenance (hici_attention_seconds), not in metrics."),
    ArmSpec("full_sdpa", "baseline", space={"hidden": (256,)}, trials=1, select_on=_FIXED,
            note="Timing arm: the same block (same weights) in full causal SDPA attention, timed interleaved with "
                 "the HiCI block on the same inputs (provenance hici_attention_seconds['full'])."),
)

# The abstract: HiCI matches strong long-context baselines. That chunked attention without slots fails is
# the precondition that the task needs long context; the parameter count and the causal mask hold by
# construction.
# Each arm in the mode it trained in decides the claim: HiCI chunked against S2-Attn grouped and against
# full-attention fine-tuning (whose own mode is full, so hici_minus_full_ft_512 is already own against own).
# HiCI chunked against S2-Attn in full attention (LongLoRA's evaluation) and every arm in full attention are
# supporting, and mean something only where position interpolation alone leaves room (pi_only_acc_512_full).
# The timing checks read the median over interleaved rounds; the fastest-run reads stay as diagnostics.
_PI_ROOM = ("pi_only_acc_512_full",)
CHECKS = annotate(
    CHECKS,
    headline=("hici_minus_s2attn_512_own", "hici_minus_full_ft_512"),
    diagnostic=("chunked_no_slots_512", "param_overhead_llama2_7b", "causal_shift_leak", "pi_only_acc_512_full",
                "full_time_slope", "hici_time_slope", "hici_full_time_ratio_8k"),
    compares={"hici_minus_s2attn_512": ("hici", "s2attn"), "hici_minus_full_ft_512": ("hici", "full_ft"),
              "hici_minus_s2attn_512_own": ("hici", "s2attn"), "hici_minus_s2attn_512_all_full": ("hici", "s2attn"),
              "hici_minus_full_ft_512_all_full": ("hici", "full_ft"),
              "hici_full_time_ratio_8k": ("hici_fixed_g", "full_sdpa"),
              "hici_full_time_ratio_8k_rounds": ("hici_fixed_g", "full_sdpa")},
    budget={name: "finetune_steps" for name in ("hici_minus_s2attn_512", "hici_minus_full_ft_512",
                                                "hici_minus_s2attn_512_own", "hici_minus_s2attn_512_all_full",
                                                "hici_minus_full_ft_512_all_full")},
    requires={"hici_minus_s2attn_512": _PI_ROOM, "hici_minus_s2attn_512_all_full": _PI_ROOM,
              "hici_minus_full_ft_512_all_full": _PI_ROOM},
)
