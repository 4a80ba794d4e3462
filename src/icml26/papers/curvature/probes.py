"""The curvature paper's hostile-input probes. It exports no ``nn.Module``
(``CurvatureLoss`` is a plain callable), so ``MODULES`` is empty."""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from icml26.contract import Probe
from icml26.papers.curvature.analysis import initial_slope, interpolated_bigram
from icml26.papers.curvature.stats import cluster_bootstrap_spearman
from icml26.papers.curvature import (
    CurvatureEntropyAnalysis,
    CurvatureLoss,
    PairedTest,
    PerturbationResult,
    contextual_curvature,
    curvature_regularizer,
    decoder_blocks,
    extrapolation_target,
    layerwise_curvature_entropy,
    mean_curvature,
    misaligned,
    next_token_entropy,
    num_layers,
    paired_test,
    partial_correlation,
    patch_hidden_state,
    pearson,
    perturb_and_measure,
    perturbation_sweep,
    spearman,
    straighten,
    turning_angles,
    unigram_log_frequency,
)

MODULES: list = []


@functools.lru_cache(maxsize=1)
def _lm():
    from icml26.common.tiny_lm import TinyLMConfig, build_model

    return build_model(TinyLMConfig(arch="gpt2", vocab_size=64, d_model=32, n_layers=2, n_heads=2, context=16),
                       seed=0).eval()


def _ids(batch: int = 2, length: int = 8) -> torch.Tensor:
    return torch.randint(0, 64, (batch, length), generator=torch.Generator().manual_seed(0))


def _traj(points: int = 6, d: int = 4) -> torch.Tensor:
    return torch.randn(points, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def _with_nan(x: torch.Tensor, index=(0, 0)) -> torch.Tensor:
    x = x.clone()
    x[index] = float("nan")
    return x


def _analysis() -> CurvatureEntropyAnalysis:
    nan = np.full(3, np.nan)
    return CurvatureEntropyAnalysis(window=3, curvature=np.zeros((3, 1)), entropy=np.zeros(1), position=np.zeros(1),
                                    log_frequency=np.zeros(1), mean_curvature=np.zeros(3), pearson=nan,
                                    spearman=nan, partial_pearson=nan, partial_spearman=nan, n_tokens=np.zeros(3))


HOSTILE = [
    # entropy (NaN logits must not read as a confident prediction)
    Probe("next_token_entropy of NaN logits is NaN (was 0)",
          lambda: next_token_entropy(torch.tensor([[math.nan, 1.0, 2.0], [0.0, 0.0, 0.0]])),
          returns=lambda h: bool(torch.isnan(h[0])) and math.isclose(float(h[1]), math.log(3), rel_tol=1e-6),
          doc="a row with a NaN logit has no distribution: NaN; other rows are unaffected"),
    Probe("next_token_entropy of +inf logits is NaN", lambda: next_token_entropy(torch.tensor([math.inf, 0.0])),
          returns=lambda h: bool(torch.isnan(h)), doc="+inf has no softmax: NaN, not 0"),
    Probe("next_token_entropy ignores -inf (masked) words", lambda: next_token_entropy(torch.tensor([-math.inf, 0.0,
                                                                                                    0.0])),
          returns=lambda h: math.isclose(float(h), math.log(2), rel_tol=1e-6), doc="masked words contribute nothing"),
    Probe("next_token_entropy of integer logits", lambda: next_token_entropy(torch.arange(4)), raises=TypeError,
          match="floating"),
    Probe("next_token_entropy dim=2 on a vector", lambda: next_token_entropy(torch.zeros(4), dim=2), match="dim"),
    Probe("next_token_entropy of an empty vocabulary", lambda: next_token_entropy(torch.zeros(2, 0)), match="empty"),
    Probe("next_token_entropy of a list", lambda: next_token_entropy([0.0, 1.0]), raises=TypeError, match="logits"),
    Probe("next_token_entropy of NumPy logits", lambda: next_token_entropy(np.zeros((2, 4))),
          returns=lambda h: isinstance(h, np.ndarray) and np.allclose(h, math.log(4)), doc="NumPy in, NumPy out"),
    # geometry
    Probe("turning_angles of two points", lambda: turning_angles(_traj(2)), match="at least 3"),
    Probe("turning_angles of a vector", lambda: turning_angles(torch.zeros(5)), match="shape"),
    Probe("turning_angles eps=-1", lambda: turning_angles(_traj(), eps=-1.0), match="eps"),
    Probe("turning_angles of integer points", lambda: turning_angles(torch.zeros(4, 2, dtype=torch.int64)),
          raises=TypeError, match="floating"),
    Probe("turning_angles of a list", lambda: turning_angles([[0.0, 1.0]] * 4), raises=TypeError, match="traj"),
    Probe("turning_angles: NaN point gives NaN angles next to it", lambda: turning_angles(_with_nan(_traj(6), (2, 0))),
          returns=lambda a: bool(torch.isnan(a[:3]).all()) and bool(torch.isfinite(a[3:]).all()),
          doc="an angle whose three points include a NaN is NaN; the others are unaffected"),
    Probe("turning_angles of a NumPy trajectory", lambda: turning_angles(np.array([[0.0, 0], [1, 0], [1, 1]])),
          returns=lambda a: isinstance(a, np.ndarray) and np.allclose(a, [math.pi / 2]), doc="NumPy in, NumPy out"),
    Probe("contextual_curvature window=0", lambda: contextual_curvature(_traj(), 0), match="window"),
    Probe("contextual_curvature window=True", lambda: contextual_curvature(_traj(), True), match="window"),
    Probe("contextual_curvature of a scalar", lambda: contextual_curvature(torch.tensor(1.0)), match="shape"),
    Probe("mean_curvature of a non-moving trajectory is NaN", lambda: mean_curvature(torch.zeros(5, 3)),
          returns=lambda v: bool(torch.isnan(v)), doc="no step has a direction: no angle is defined"),
    Probe("extrapolation_target of two points", lambda: extrapolation_target(_traj(2)), match="at least 3"),
    Probe("straighten alpha=nan", lambda: straighten(_traj(), math.nan), match="alpha"),
    Probe("straighten of a NumPy array", lambda: straighten(np.zeros((4, 3)), 0.5), raises=TypeError,
          match="hidden"),
    Probe("misaligned in 2 dimensions", lambda: misaligned(_traj(d=2), 0.5), match="d >= 3"),
    Probe("misaligned alpha=inf", lambda: misaligned(_traj(), math.inf), match="alpha"),
    Probe("misaligned with a NumPy generator", lambda: misaligned(_traj(), 0.5, np.random.default_rng(0)),
          raises=TypeError, match="rng"),
    # regulariser
    Probe("curvature_regularizer of two points", lambda: curvature_regularizer(_traj(2)), match="T >= 3"),
    Probe("curvature_regularizer with a mismatched mask",
          lambda: curvature_regularizer(_traj().unsqueeze(0), torch.ones(1, 5)), match="mask"),
    Probe("curvature_regularizer eps=0", lambda: curvature_regularizer(_traj(), eps=0.0), match="eps"),
    Probe("curvature_regularizer of an all-padding mask is 0",
          lambda: curvature_regularizer(_traj().unsqueeze(0), torch.zeros(1, 6)),
          returns=lambda v: float(v) == 0.0, doc="no three real points: no term, a zero (differentiable) loss"),
    Probe("CurvatureLoss without layers", lambda: CurvatureLoss(layers=()), match="layers"),
    Probe("CurvatureLoss weight=nan", lambda: CurvatureLoss(layers=(1,), weight=math.nan), match="weight"),
    Probe("CurvatureLoss layers=(1.5,)", lambda: CurvatureLoss(layers=(1.5,)), raises=TypeError, match="layers"),
    Probe("CurvatureLoss on outputs without hidden states", lambda: CurvatureLoss(layers=(1,))(object()),
          match="hidden_states"),
    # models
    Probe("straighten relative_to='norm'", lambda: straighten(_traj(), 0.1, relative_to="norm"), match="relative_to"),
    Probe("misaligned relative_to='norm'", lambda: misaligned(_traj(), 0.1, relative_to="norm"), match="relative_to"),
    Probe("perturb_and_measure relative_to=1", lambda: perturb_and_measure(_lm(), _ids(), 1, 0.1, relative_to=1),
          match="relative_to"),
    Probe("perturbation_sweep epsilons=(0,)", lambda: perturbation_sweep(_lm(), _ids(), 1, (0.0,)), match="epsilons"),
    Probe("perturbation_sweep epsilons=nan", lambda: perturbation_sweep(_lm(), _ids(), 1, (math.nan,)),
          match="epsilons"),
    Probe("perturbation_sweep epsilons='a'", lambda: perturbation_sweep(_lm(), _ids(), 1, "a"), raises=TypeError,
          match="epsilons"),
    Probe("perturbation_sweep generator=0", lambda: perturbation_sweep(_lm(), _ids(), 1, (0.1,), generator=0),
          raises=TypeError, match="generator"),
    Probe("perturbation_sweep on float ids", lambda: perturbation_sweep(_lm(), _ids().float(), 1, (0.1,)),
          raises=TypeError, match="input_ids"),
    Probe("initial_slope repeated epsilons", lambda: initial_slope([0.1, 0.1], [0.0, 0.0]), match="distinct"),
    Probe("initial_slope shape mismatch", lambda: initial_slope([0.1, 0.2], [0.0]), match="first axis"),
    Probe("initial_slope NaN in, NaN out", lambda: initial_slope([0.1, 0.2], [[math.nan], [0.1]]),
          returns=lambda v: bool(np.isnan(v).all()), doc="a prefix with a non-finite Delta H gets a NaN slope"),
    Probe("interpolated_bigram ids out of range", lambda: interpolated_bigram([0, 1, 2], [0, 9], 3), match="lie in"),
    Probe("interpolated_bigram float ids", lambda: interpolated_bigram([0.0, 1.0, 2.0], [0, 1], 3), raises=TypeError,
          match="integer"),
    Probe("interpolated_bigram one token", lambda: interpolated_bigram([0, 1, 2], [1], 3), match="at least 2"),
    Probe("interpolated_bigram weights=[1]", lambda: interpolated_bigram([0, 1, 2], [0, 1], 3, weights=[1.0]),
          match="weights"),
    Probe("cluster_bootstrap_spearman length mismatch",
          lambda: cluster_bootstrap_spearman(np.zeros(5), np.zeros(4), np.arange(5)), match="last axis"),
    Probe("cluster_bootstrap_spearman n_boot=1",
          lambda: cluster_bootstrap_spearman(np.arange(5.0), np.arange(5.0), np.arange(5), n_boot=1), match="n_boot"),
    Probe("cluster_bootstrap_spearman all NaN", lambda: cluster_bootstrap_spearman(np.full(5, np.nan), np.arange(5.0),
                                                                                  np.arange(5)),
          returns=lambda v: bool(np.isnan(v[0]) and np.isnan(v[1])), doc="fewer than 3 finite pairs: a NaN interval"),
    Probe("perturb_and_measure kind='random'", lambda: perturb_and_measure(_lm(), _ids(), 1, 0.5, "random"),
          match="kind"),
    Probe("perturb_and_measure layer out of range", lambda: perturb_and_measure(_lm(), _ids(), 7, 0.5),
          match="layer"),
    Probe("perturb_and_measure alpha=nan", lambda: perturb_and_measure(_lm(), _ids(), 1, math.nan), match="alpha"),
    Probe("perturb_and_measure float token ids", lambda: perturb_and_measure(_lm(), _ids().float(), 1, 0.5),
          raises=TypeError, match="input_ids"),
    Probe("perturb_and_measure on two tokens", lambda: perturb_and_measure(_lm(), _ids(length=2), 1, 0.5),
          match="T >= 3"),
    Probe("perturb_and_measure on a non-model", lambda: perturb_and_measure("gpt2", _ids(), 1, 0.5),
          raises=TypeError, match="model"),
    Probe("patch_hidden_state with a wrongly shaped patch",
          lambda: _run_patched(torch.zeros(2, 4, 32)), match="shape"),
    Probe("patch_hidden_state layer=1.5", lambda: patch_hidden_state(_lm(), 1.5, torch.zeros(1)).__enter__(),
          raises=TypeError, match="layer"),
    Probe("patch_hidden_state patch='x'", lambda: patch_hidden_state(_lm(), 1, "x").__enter__(), raises=TypeError,
          match="patch"),
    Probe("num_layers of a plain module", lambda: num_layers(torch.nn.Linear(2, 2)), match="config"),
    Probe("decoder_blocks of a plain module", lambda: decoder_blocks(torch.nn.Linear(2, 2)), match="config"),
    Probe("layerwise_curvature_entropy float ids", lambda: layerwise_curvature_entropy(_lm(), _ids().float()),
          raises=TypeError, match="input_ids"),
    Probe("layerwise_curvature_entropy batch_size=0", lambda: layerwise_curvature_entropy(_lm(), _ids(),
                                                                                          batch_size=0),
          match="batch_size"),
    Probe("layerwise_curvature_entropy on rows too short for the window",
          lambda: layerwise_curvature_entropy(_lm(), _ids(length=4), window=3), match="defined kappa"),
    Probe("layerwise_curvature_entropy left-padded mask",
          lambda: layerwise_curvature_entropy(_lm(), _ids(), attention_mask=torch.tensor([[0] + [1] * 7] * 2)),
          match="right-padded"),
    Probe("unigram_log_frequency id out of range", lambda: unigram_log_frequency(torch.tensor([0, 70]), 64),
          match="token ids"),
    Probe("unigram_log_frequency vocab_size=0.5", lambda: unigram_log_frequency(torch.tensor([0]), 0.5),
          raises=TypeError, match="vocab_size"),
    Probe("unigram_log_frequency of NumPy ids", lambda: unigram_log_frequency(np.array([0, 0, 1]), 2),
          returns=lambda v: torch.allclose(v, torch.log(torch.tensor([3 / 5, 2 / 5], dtype=torch.float64))),
          doc="add-one smoothing: log((c + 1) / (N + V))"),
    Probe("CurvatureEntropyAnalysis.best_layer with no finite statistic", lambda: _analysis().best_layer(),
          match="finite"),
    Probe("CurvatureEntropyAnalysis.best_layer of an unknown statistic", lambda: _analysis().best_layer("kendall"),
          match="statistic"),
    Probe("PerturbationResult delta of NaN entropies is NaN",
          lambda: PerturbationResult(*(torch.tensor([math.nan]),) * 5).delta_entropy,
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN propagates through the difference"),
    # statistics
    Probe("pearson of unpaired inputs", lambda: pearson([1.0, 2.0, 3.0], [1.0, 2.0]), match="paired"),
    Probe("pearson NaN in, NaN out", lambda: pearson([1.0, math.nan, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]),
          returns=lambda v: math.isnan(v), doc="NaN in, NaN out"),
    Probe("spearman of strings", lambda: spearman(["a", "b", "c"], [1, 2, 3]), raises=TypeError, match="numbers"),
    Probe("partial_correlation with NaN covariates", lambda: partial_correlation([1.0, 2, 3, 4], [2.0, 1, 4, 3],
                                                                                 [0.0, math.nan, 1, 2]),
          returns=lambda v: math.isnan(v), doc="NaN in, NaN out (no LinAlgError)"),
    Probe("partial_correlation method='kendall'", lambda: partial_correlation([1, 2, 3], [1, 2, 3], [0, 1, 2],
                                                                              "kendall"), match="method"),
    Probe("partial_correlation covariates of the wrong length",
          lambda: partial_correlation([1.0, 2, 3, 4], [2.0, 1, 4, 3], [0.0, 1.0]), match="covariates"),
    Probe("paired_test of one value", lambda: paired_test([1.0]), match="at least 2"),
    Probe("paired_test counts the non-finite differences it leaves out",
          lambda: paired_test([-1.0, -2.0, math.nan, -1.5]),
          returns=lambda r: isinstance(r, PairedTest) and r.n == 3 and r.n_nonfinite == 1 and r["mean"] == -1.5,
          doc="NaN differences are left out and counted in n_nonfinite"),
]


def _run_patched(patch: torch.Tensor) -> None:
    with patch_hidden_state(_lm(), 1, patch):
        _lm()(input_ids=_ids())

# The hostile-input walk (tests/test_hostile_walk.py): a small valid call of every export.
_NAN_IN_NAN_OUT = ("NaN in, NaN out by documented design: a point (or value) that is NaN makes only what "
                   "depends on it NaN, so partly padded trajectories stay usable (HOSTILE probes the propagation)")

VALID = {
    "CurvatureLoss": lambda: ((), {"layers": (1,)}),
    "contextual_curvature": lambda: ((_traj(),), {}),
    "curvature_regularizer": lambda: ((_traj().unsqueeze(0),), {}),
    "decoder_blocks": lambda: ((_lm(),), {}),
    "extrapolation_target": lambda: ((_traj(),), {}),
    "layerwise_curvature_entropy": lambda: ((_lm(), _ids()), {}),
    "mean_curvature": lambda: ((_traj(),), {}),
    "misaligned": lambda: ((_traj(), 0.5, torch.Generator().manual_seed(0)), {}),
    "next_token_entropy": lambda: ((torch.randn(2, 5, generator=torch.Generator().manual_seed(2)),), {}),
    "num_layers": lambda: ((_lm(),), {}),
    "paired_test": lambda: ((np.array([-1.0, -2.0, 0.5, -1.5]),), {}),
    "partial_correlation": lambda: ((np.array([1.0, 2, 3, 4, 5]), np.array([2.0, 1, 4, 3, 5]),
                                     np.array([0.0, 1, 1, 2, 3])), {}),
    "patch_hidden_state": lambda: ((_lm(), 1, torch.zeros(2, 8, 32)), {}),
    "pearson": lambda: ((np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4])), {}),
    "perturb_and_measure": lambda: ((_lm(), _ids(), 1, 0.5), {}),
    "perturbation_sweep": lambda: ((_lm(), _ids(), 1, np.array([0.05, 0.1])), {}),
    "spearman": lambda: ((np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4])), {}),
    "straighten": lambda: ((_traj(), 0.5), {}),
    "turning_angles": lambda: ((_traj(),), {}),
    "unigram_log_frequency": lambda: ((torch.tensor([0, 1, 1, 5]), 64), {}),
}

NOT_WALKED = {
    "CurvatureEntropyAnalysis": "a result record filled by layerwise_curvature_entropy (walked); HOSTILE probes "
                                "its best_layer",
    "PairedTest": "a result record filled by paired_test (walked)",
    "PerturbationResult": "a result record filled by perturb_and_measure (walked); HOSTILE probes delta_entropy",
    "PerturbationSweep": "a result record filled by perturbation_sweep (walked)",
}

_LAST_POINT = ("NaN in, NaN out by design: only the last point is moved, from the last three; a NaN elsewhere is "
               "copied unchanged and a NaN among them makes the moved point NaN. perturb_and_measure and "
               "perturbation_sweep feed it the model's own hidden states, where one diverged row must give that "
               "row a NaN Delta H (which paired_test leaves out and counts), not fail the batch")
_LAYER_FROM_END = "a negative layer counts from L, as hidden_states[layer] does (documented in hooks)"

ALLOWED = {
    "contextual_curvature.traj:nan": _NAN_IN_NAN_OUT + " (a window holding an undefined angle is NaN)",
    "turning_angles.traj:nan": _NAN_IN_NAN_OUT,
    "mean_curvature.traj:nan": "angles next to a NaN point are undefined and left out of the mean, as angles next "
                               "to a zero-length step are (documented: the mean over the defined angles; NaN if "
                               "none is)",
    "extrapolation_target.hidden:nan": _LAST_POINT,
    "straighten.hidden:nan": _LAST_POINT,
    "misaligned.hidden:nan": _LAST_POINT,
    "curvature_regularizer.hidden:nan": "hot path: the hidden states of every training step; a finiteness check "
                                        "would cost a device sync per step, and a NaN state gives a NaN loss the "
                                        "training loop sees",
    "next_token_entropy.logits:nan": "documented: a row with a NaN logit has no distribution, so its entropy is "
                                     "NaN (not 0, a confident prediction); other rows are unaffected (HOSTILE)",
    "paired_test.delta:nan": "documented: non-finite differences (a patched pass that diverged) are left out and "
                             "counted in n_nonfinite (HOSTILE 'paired_test counts the non-finite differences')",
    "pearson.x:nan": _NAN_IN_NAN_OUT + " (documented: NaN in, NaN out)",
    "pearson.y:nan": _NAN_IN_NAN_OUT + " (documented: NaN in, NaN out)",
    "spearman.x:nan": _NAN_IN_NAN_OUT + " (documented: NaN in, NaN out)",
    "spearman.y:nan": _NAN_IN_NAN_OUT + " (documented: NaN in, NaN out)",
    "partial_correlation.x:nan": "documented: NaN in, NaN out, as pearson and spearman (HOSTILE probes it)",
    "partial_correlation.y:nan": "documented: NaN in, NaN out, as pearson and spearman (HOSTILE probes it)",
    "partial_correlation.covariates:nan": "documented: NaN in, NaN out, as pearson and spearman (HOSTILE probes it)",
    "patch_hidden_state.patch:nan": "perturb_and_measure and perturbation_sweep patch in the model's own perturbed "
                                    "state; a row that is NaN there gives that row NaN logits and a NaN Delta H "
                                    "(left out and counted by paired_test), where a refusal would fail the batch",
    "patch_hidden_state.layer:negative": _LAYER_FROM_END,
    "perturb_and_measure.layer:negative": _LAYER_FROM_END,
    "perturbation_sweep.layer:negative": _LAYER_FROM_END,
}
