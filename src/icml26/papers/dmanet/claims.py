"""The checks of DMANet's reproduction (the issue's "Figures to reach"), declared before any run.

The issue asks that naive slicing leak "several per cent (more at each level)"; the three
per-level bars (3 %, 8 %, 12 %) are our reading of that, so their source is ``ours``.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

_SEVERAL = "issue #8 asks for 'several per cent, more at each level'; {} is our threshold for level {}"

# The folding-tones checks (issue #38: a series whose fast tones fold onto the predictive slow tone, so that
# aliasing destroys what the forecaster needs) are measured by the further run results/dmanet/folding (quick
# setting with datasets=folding, see folding_run.py) and not by the committed quick run on the
# aliasing Lorenz; they are declared for the full setting only so that the quick result does not list them, and a
# full run on the default data sets records them as not measured.
_FOLDING = ("full",)

CHECKS = declare(
    CheckSpec("filter_leakage", "filter+stride leakage, worst of levels 1-3", "<=", 1e-10,
              source="issue", ref="issue #8"),
    CheckSpec("naive_leakage_l1", "naive slicing leakage, level 1", ">=", 0.03,
              source="ours", ref=_SEVERAL.format("3 %", 1)),
    CheckSpec("naive_leakage_l2", "naive slicing leakage, level 2", ">=", 0.08,
              source="ours", ref=_SEVERAL.format("8 %", 2)),
    CheckSpec("naive_leakage_l3", "naive slicing leakage, level 3", ">=", 0.12,
              source="ours", ref=_SEVERAL.format("12 %", 3)),
    CheckSpec("no_filter_ratio_chaotic", "DMANet / no-filter MSE, chaotic (mean over horizons)", "<=", 0.97,
              source="issue", ref="issue #8"),
    CheckSpec("dlinear_ratio_chaotic", "DMANet / DLinear MSE, chaotic (mean over horizons)", "<=", 1.0,
              source="issue", ref="issue #8"),
    CheckSpec("dlinear_ratio_taylor", "DMANet / DLinear MSE, taylor (mean over horizons)", "<=", 1.0,
              source="issue", ref="issue #8"),
    CheckSpec("time_no_filter_ratio_chaotic", "filter_axis='time' family: DMANet / no-filter MSE, chaotic "
              "(geometric mean of per-seed ratios, each the mean over horizons)", "<=", 0.97,
              source="issue", ref="issue #8 (bar); issue #29 (the time-axis family, >= 8 seeds, paired)"),
    CheckSpec("ridge_filter_ratio_coarsest", "ridge on strided windows, chaotic: filtered / naive test MSE at the "
              "coarsest stride (mean over horizons)", "<", 1.0,
              source="ours", ref="issue #29 asks for this model-free check of where aliasing matters (one run: "
              "0.834 vs 0.881 at stride 8); below 1 is our reading of 'matters'"),
    CheckSpec("strided_filter_ratio_coarsest", "strided-only DMANet (no full-resolution path), chaotic: filter / "
              "no-filter test MSE at the coarsest stride (geometric mean over seeds)", "<", 1.0,
              source="ours", ref="issue #29 asks for this diagnostic; below 1 is our reading of 'the filter helps "
              "where aliasing cannot be routed around'"),
    CheckSpec("ridge_filter_ratio_folding", "ridge on strided windows, folding tones: filtered / naive test MSE at "
              "the coarsest stride (mean over horizons)", "<=", 0.9, source="ours",
              ref="issue #38 asks for a series where aliasing destroys information a forecaster needs; a 10 % cost "
              "to a strided linear forecaster (against 2-5 % on the aliasing Lorenz) is our reading of it",
              settings=_FOLDING),
    CheckSpec("no_filter_ratio_folding", "DMANet / no-filter MSE, folding tones (latent axis, mean over horizons)",
              "<=", 0.97, source="issue", ref="issue #38 (the series where aliasing hurts); bar from issue #8",
              settings=_FOLDING),
    CheckSpec("time_no_filter_ratio_folding", "filter_axis='time' family, authors' rho/2 cutoff: DMANet / no-filter "
              "MSE, folding tones (geometric mean of per-seed ratios, each the mean over horizons)", "<=", 0.97,
              source="issue", ref="issue #38 (the series where aliasing hurts); bar from issue #8", settings=_FOLDING),
    CheckSpec("time_nyquist_no_filter_ratio_folding", "filter_axis='time' family, cutoff at the new Nyquist bin: "
              "DMANet / no-filter MSE, folding tones (geometric mean of per-seed ratios, each the mean over horizons)",
              "<=", 0.97, source="issue", ref="issue #38 (the time-axis arm with the cutoff at Nyquist); bar from "
              "issue #8", settings=_FOLDING),
    CheckSpec("time_nyquist_vs_authors_folding", "filter_axis='time' family, folding tones: Nyquist-cutoff / authors' "
              "rho/2-cutoff DMANet MSE (geometric mean of per-seed ratios)", "<", 1.0, source="ours",
              ref="issue #38 asks for the Nyquist arm beside the authors' rho/2; below 1 is our reading of 'the "
              "stricter cutoff also removes in-band content'", settings=_FOLDING),
    CheckSpec("strided_filter_ratio_folding", "strided-only DMANet (no full-resolution path), folding tones: filter "
              "/ no-filter test MSE at the coarsest stride (geometric mean over seeds)", "<", 1.0, source="ours",
              ref="issue #38 (the series where aliasing hurts); below 1 as for the aliasing Lorenz (issue #29)",
              settings=_FOLDING),
)

# The arms the checks compare, as data. Nothing is tuned per arm: every trained arm goes through one loop
# (training.fit_forecaster) with the same fixed settings, and the only selection is the best epoch by validation MSE
# (early stopping). Quick values; the full setting uses d_model 512, 15 epochs, batch 16, lr 1e-3, no step cap.
_FIXED = "validation: only the best epoch (early stopping on validation MSE); no setting is selected"
_FIT = {"lr": (1e-2,), "epochs": (5,), "max_batches_per_epoch": (100,), "batch_size": (32,), "patience": (3,),
        "loss": ("frequency",)}
_NET = {**_FIT, "d_model": (128,), "dropout": (0.1,)}
_SHARED = ("Shared by every trained arm: lr 1e-2 halved per epoch (picked once by us for all arms in a short pilot "
           "at H = 48; its split is not recorded) and DMANet's frequency loss. Full setting: d_model 512, 15 epochs, "
           "batch 16, lr 1e-3, every window.")
_RIDGE = {"alpha": (1e-1, 1.0, 10.0, 100.0, 1e3, 1e4)}
ARMS = declare_arms(
    ArmSpec("dmanet", "method", space={**_NET, "filter_axis": ("latent",)}, trials=1, select_on=_FIXED,
            note="DMANet as in the authors' code (filter on the embedded latent axis, their cutoff rho/2); d_model "
                 "128 in the quick setting (authors: 512). " + _SHARED),
    ArmSpec("dmanet_no_filter", "control", space={**_NET, "filter_axis": ("latent",)}, trials=1, select_on=_FIXED,
            note="The same network with anti_alias=False: same initial seed, batches, settings and parameter count "
                 "as dmanet. " + _SHARED),
    ArmSpec("dlinear", "baseline", space={**_FIT, "moving_avg": (25,), "individual": (False,)}, trials=1,
            select_on=_FIXED,
            reason="Same trial budget (1) and the same loop as DMANet, at settings not chosen for DLinear: DMANet's "
                   "frequency loss instead of the MSE DLinear was designed with, the lr shared by all arms, the input "
                   "length L = 96 on the chaotic set (DLinear's paper prefers longer windows), no RevIN (DMANet and "
                   "PatchTST normalise each instance).",
            note="Our re-implementation of the Time-Series-Library DLinear (trend kernel 25, one pair of linear maps "
                 "shared across channels, weights initialised at 1/L); 9,312 parameters against DMANet's 58,781 "
                 "(chaotic, H = 48). " + _SHARED),
    ArmSpec("dmanet_time", "method", space={**_NET, "filter_axis": ("time",)}, trials=1, select_on=_FIXED,
            metrics="time_family",
            note="DMANet with the multiscale encoder on the time axis (filter_axis='time'), time_family_seeds = 8 "
                 "inner seeds paired with its no-filter ablation; metrics key time_family (dmanet_chaotic_mse). "
                 + _SHARED),
    ArmSpec("dmanet_time_no_filter", "control", space={**_NET, "filter_axis": ("time",)}, trials=1, select_on=_FIXED,
            metrics="time_family",
            note="dmanet_time with anti_alias=False, same initial seed and batches; metrics key time_family "
                 "(no_filter_chaotic_mse). " + _SHARED),
    ArmSpec("dmanet_time_nyquist", "method", space={**_NET, "filter_axis": ("time",), "cutoff_ratio": (1.0,)},
            trials=1, select_on=_FIXED, metrics="time_family",
            note="The time-axis family's third arm on the folding tones (folding_run.py): DMANet with the cutoff at "
                 "the new Nyquist bin at every level (cutoff_ratio = 2/s = 1) instead of the authors' rho/2, same "
                 "initial seed and batches as dmanet_time and dmanet_time_no_filter; metrics key time_family "
                 "(nyquist_folding_mse, nyquist_ratio, nyquist_vs_authors). " + _SHARED),
    ArmSpec("strided_filter", "method", space=_NET, trials=1, select_on=_FIXED, metrics="strided_only",
            note="StridedOnlyDMANet (ours, not the paper's model: no residual, only the coarsest level reaches the "
                 "embedding) with the filter, trained at levels 1-3 (each reported, none selected; the check reads "
                 "level 3, stride 8), strided_seeds = 4 inner seeds, H = 48. " + _SHARED),
    ArmSpec("strided_no_filter", "control", space=_NET, trials=1, select_on=_FIXED, metrics="strided_only",
            note="strided_filter with anti_alias=False, same initial seed and batches. " + _SHARED),
    ArmSpec("ridge_filtered", "method", space=_RIDGE, trials=6, select_on="validation", metrics="ridge",
            note="Model-free (analysis.ridge_aliasing_check): a closed-form ridge forecaster of every channel's next "
                 "H steps from the input window low-passed at the new Nyquist bin, then strided (DMANet's "
                 "filter+stride operator, not DMANet); penalty chosen on validation MSE, test MSE reported."),
    ArmSpec("ridge_naive", "control", space=_RIDGE, trials=6, select_on="validation", metrics="ridge",
            note="The same ridge on the naively strided window (x[::s]): same windows and feature count, its own "
                 "penalty chosen on validation among the same six values."),
)

# The abstract: mitigating aliasing makes the convolutional multiscale network competitive. Leakage of the
# ideal filter and of naive slicing are properties of the filter (by construction).
CHECKS = annotate(
    CHECKS,
    headline=("no_filter_ratio_chaotic", "dlinear_ratio_chaotic"),
    diagnostic=("filter_leakage", "naive_leakage_l1", "naive_leakage_l2", "naive_leakage_l3",
                "ridge_filter_ratio_folding", "time_nyquist_vs_authors_folding"),
    compares={"no_filter_ratio_chaotic": ("dmanet", "dmanet_no_filter"),
              "dlinear_ratio_chaotic": ("dmanet", "dlinear"),
              "dlinear_ratio_taylor": ("dmanet", "dlinear"),
              "time_no_filter_ratio_chaotic": ("dmanet_time", "dmanet_time_no_filter"),
              "ridge_filter_ratio_coarsest": ("ridge_filtered", "ridge_naive"),
              "strided_filter_ratio_coarsest": ("strided_filter", "strided_no_filter"),
              "ridge_filter_ratio_folding": ("ridge_filtered", "ridge_naive"),
              "no_filter_ratio_folding": ("dmanet", "dmanet_no_filter"),
              "time_no_filter_ratio_folding": ("dmanet_time", "dmanet_time_no_filter"),
              "strided_filter_ratio_folding": ("strided_filter", "strided_no_filter"),
              "time_nyquist_no_filter_ratio_folding": ("dmanet_time_nyquist", "dmanet_time_no_filter"),
              "time_nyquist_vs_authors_folding": ("dmanet_time_nyquist", "dmanet_time")},
    budget={"no_filter_ratio_chaotic": "epochs", "dlinear_ratio_chaotic": "epochs", "dlinear_ratio_taylor": "epochs",
            "time_no_filter_ratio_chaotic": "epochs", "strided_filter_ratio_coarsest": "epochs",
            "no_filter_ratio_folding": "epochs", "time_no_filter_ratio_folding": "epochs",
            "time_nyquist_no_filter_ratio_folding": "epochs", "strided_filter_ratio_folding": "epochs"},
    # the DMANet checks on the folding tones mean something only where aliasing hurts a strided forecaster there
    requires={c: ("ridge_filter_ratio_folding",) for c in ("no_filter_ratio_folding", "time_no_filter_ratio_folding",
                                                           "time_nyquist_no_filter_ratio_folding",
                                                           "strided_filter_ratio_folding")},
)
