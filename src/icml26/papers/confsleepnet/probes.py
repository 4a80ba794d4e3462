"""ConfSleepNet's tiny modules for the module matrix and its hostile-input probes."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.confsleepnet import (
    THREE_TO_FIVE,
    ConfSleepNet,
    Corruption,
    EpochCNN,
    EpochEncoder,
    LateFusionNet,
    Opinion,
    PSGData,
    Recording,
    ViewSpec,
    accuracy,
    accuracy_coverage_curve,
    aggregate,
    cohen_kappa,
    common_partition,
    conflict,
    conflict_in_common_space,
    confusion_matrix,
    corrupt_eog,
    default_views,
    edl_loss,
    fit_confsleepnet,
    fit_late_fusion,
    fuse_average,
    fuse_conflict_aware,
    fuse_dempster,
    kl_to_uniform_dirichlet,
    lift,
    lifting_matrix,
    load_edf_recording,
    macro_f1,
    partition_matrix,
    normalize_recordings,
    predict_in_batches,
    sample_hypnogram,
    selective_accuracy,
    sort_by_uncertainty,
    synthetic_psg,
)

FS = 40.0  # Hz: the smallest rate synthetic_psg accepts; 30-s epochs of 1200 samples


def _signals(g: torch.Generator, n: int = 4, channels: int = 3) -> torch.Tensor:
    return torch.randn(n, channels, int(30 * FS), generator=g)


def _opinion(*evidence) -> Opinion:
    return Opinion.from_evidence(torch.tensor([list(evidence)], dtype=torch.float64))


def _encoders() -> list:
    return [EpochEncoder(1, FS, 4) for _ in range(3)]


def _model() -> ConfSleepNet:
    return ConfSleepNet(sampling_rate=FS, width=4)


def _psg() -> PSGData:
    return synthetic_psg(1, 6, rng=np.random.default_rng(0), sampling_rate=FS)


def _nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[0] = float("nan")
    return x


MODULES = [
    ModuleCase("ConfSleepNet", build=_model, inputs=lambda g: (_signals(g),),
               loss=lambda op: op.uncertainty.sum() + op.belief.square().sum()),
    ModuleCase("EpochCNN", build=lambda: EpochCNN(2, 5, FS, 4), inputs=lambda g: (_signals(g, channels=2),)),
    ModuleCase("EpochEncoder", build=lambda: EpochEncoder(1, FS, 4), inputs=lambda g: (_signals(g, channels=1),)),
    ModuleCase("LateFusionNet", build=lambda: LateFusionNet(_encoders(), [(0,), (1,), (2,)]),
               inputs=lambda g: (_signals(g),)),
]

_A, _B = _opinion(4.0, 1.0, 0.0, 0.0, 0.0), _opinion(0.0, 0.0, 3.0, 1.0, 0.0)

HOSTILE = [
    # opinions
    Probe("Opinion with a negative belief", lambda: Opinion(torch.tensor([[-0.2, 0.7]]), torch.tensor([0.5])),
          match="belief masses must be >= 0"),
    Probe("Opinion with total mass above 1", lambda: Opinion(torch.tensor([[0.6, 0.6]]), torch.tensor([0.3])),
          match="must be 1"),
    Probe("Opinion with zero uncertainty", lambda: Opinion(torch.tensor([[0.5, 0.5]]), torch.tensor([0.0])),
          match="uncertainty"),
    Probe("Opinion with NaN belief", lambda: Opinion(torch.tensor([[math.nan, 0.5]]), torch.tensor([0.5])),
          match="finite"),
    Probe("Opinion with mismatched shapes", lambda: Opinion(torch.ones(2, 3) / 6, torch.ones(3) / 2),
          match="batch shape"),
    Probe("Opinion from lists", lambda: Opinion([[0.5, 0.0]], [0.5]), raises=TypeError, match="Tensor"),
    Probe("Opinion.from_evidence negative", lambda: Opinion.from_evidence(torch.tensor([[-1.0, 2.0]])),
          match="evidence"),
    Probe("Opinion.from_evidence NaN", lambda: Opinion.from_evidence(torch.tensor([[math.nan, 2.0]])),
          match="evidence"),
    Probe("Opinion.from_evidence of a NumPy array", lambda: Opinion.from_evidence(np.array([[2.0, 0.0]])),
          returns=lambda op: torch.allclose(op.u, torch.tensor([0.5], dtype=torch.float64)),
          doc="NumPy evidence is accepted: u = K / (sum e + K) = 2 / 4"),
    Probe("Opinion.from_dirichlet alpha < 1", lambda: Opinion.from_dirichlet(torch.tensor([[0.5, 2.0]])),
          match="alpha"),
    Probe("Opinion.from_evidence of a string", lambda: Opinion.from_evidence("evidence"), raises=TypeError,
          match="evidence"),
    # lifting
    Probe("lift with a mapping that creates evidence", lambda: lift(torch.ones(1, 3), torch.ones(3, 5)),
          match="mapping"),
    Probe("lift with the wrong number of categories", lambda: lift(torch.ones(1, 4), THREE_TO_FIVE),
          match="mapping"),
    Probe("lift keeps total evidence but raises u", lambda: (Opinion.from_evidence(torch.tensor([[6.0, 0.0, 0.0]])).u,
                                                             Opinion.from_evidence(lift(torch.tensor([[6.0, 0.0, 0.0]]),
                                                                                        THREE_TO_FIVE)).u),
          returns=lambda uu: math.isclose(float(uu[0]), 3 / 9, rel_tol=1e-6) and math.isclose(float(uu[1]), 5 / 11,
                                                                                               rel_tol=1e-6),
          doc="u = K / (E + K): 3/9 before lifting, 5/11 after (the total evidence E = 6 is kept)"),
    Probe("lifting_matrix with a fractional category", lambda: lifting_matrix((0, 1.5, 1)), match="integer"),
    Probe("lifting_matrix skipping a category", lambda: lifting_matrix((0, 2, 2)), match="never uses"),
    # fusion
    Probe("conflict of an opinion and a tensor", lambda: conflict(_A, torch.ones(1, 5)), raises=TypeError,
          match="op2"),
    Probe("fuse_conflict_aware over different K", lambda: fuse_conflict_aware(_A, _opinion(1.0, 1.0, 1.0)),
          match="lift"),
    Probe("fuse_dempster over different K", lambda: fuse_dempster(_A, _opinion(1.0, 1.0)), match="lift"),
    Probe("fuse_average with a non-opinion", lambda: fuse_average("a", _B), raises=TypeError, match="op1"),
    Probe("aggregate of no views", lambda: aggregate([]), match="empty"),
    Probe("aggregate of a bare Opinion", lambda: aggregate(_A), raises=TypeError, match="list"),
    Probe("aggregate rule='max'", lambda: aggregate([_A, _B], rule="max"), match="rule"),
    Probe("aggregate order='random'", lambda: aggregate([_A, _B], order="random"), match="order"),
    Probe("aggregate rule=42", lambda: aggregate([_A, _B], rule=42), raises=TypeError, match="rule"),
    Probe("aggregate label_maps with the average rule",
          lambda: aggregate([_A, _B], rule="average", label_maps=[range(_A.num_classes)] * 2),
          match="conflict_aware"),
    Probe("aggregate label_maps for one of two views", lambda: aggregate([_A, _B], label_maps=[range(_A.num_classes)]),
          match="label_map"),
    Probe("aggregate label_maps of the wrong length",
          lambda: aggregate([_A, _B], label_maps=[(0, 1), (0, 1)]), match="label_map"),
    Probe("partition_matrix of a negative category", lambda: partition_matrix((0, -1)), match="label_map"),
    Probe("partition_matrix of names", lambda: partition_matrix(("W", "N1")), raises=TypeError, match="label_map"),
    Probe("common_partition of mismatched sizes", lambda: common_partition(torch.eye(3), torch.eye(4)),
          match="partition"),
    Probe("conflict_in_common_space with a partition of the wrong size",
          lambda: conflict_in_common_space(_A, _B, torch.eye(2), torch.eye(_A.num_classes)), match="partition1"),
    Probe("conflict_in_common_space of a bare tensor",
          lambda: conflict_in_common_space(_A.b, _B, torch.eye(_A.num_classes), torch.eye(_A.num_classes)),
          raises=TypeError, match="op1"),
    Probe("sort_by_uncertainty of no views", lambda: sort_by_uncertainty([]), match="empty"),
    # loss
    Probe("edl_loss with negative evidence", lambda: edl_loss(torch.tensor([[-1.0, 2.0]]), torch.tensor([0]), 0),
          match="evidence"),
    Probe("edl_loss label out of range", lambda: edl_loss(torch.ones(2, 3), torch.tensor([0, 3]), 0),
          match="target"),
    Probe("edl_loss epoch=-1", lambda: edl_loss(torch.ones(2, 3), torch.tensor([0, 1]), -1), match="epoch"),
    Probe("edl_loss annealing_epochs=0", lambda: edl_loss(torch.ones(2, 3), torch.tensor([0, 1]), 1,
                                                          annealing_epochs=0), match="annealing_epochs"),
    Probe("edl_loss kl_weight=nan", lambda: edl_loss(torch.ones(2, 3), torch.tensor([0, 1]), 1,
                                                     kl_weight=math.nan), match="kl_weight"),
    Probe("edl_loss reduction='max'", lambda: edl_loss(torch.ones(2, 3), torch.tensor([0, 1]), 1, reduction="max"),
          match="reduction"),
    Probe("edl_loss NaN evidence gives a NaN loss",
          lambda: edl_loss(torch.tensor([[math.nan, 1.0]]), torch.tensor([0]), 1),
          returns=lambda v: bool(torch.isnan(v)), doc="NaN propagates, as in any torch loss"),
    Probe("kl_to_uniform_dirichlet alpha=0", lambda: kl_to_uniform_dirichlet(torch.tensor([[0.0, 1.0]])),
          match="alpha"),
    # metrics
    Probe("accuracy of fractional labels", lambda: accuracy([0.5, 1.0], [0, 1]), match="y_true"),
    Probe("accuracy of NaN labels", lambda: accuracy([math.nan, 1.0], [0, 1]), match="y_true"),
    Probe("accuracy of empty labels", lambda: accuracy([], []), match="non-empty"),
    Probe("macro_f1 of negative labels", lambda: macro_f1([0, -1], [0, 1]), match=">= 0"),
    Probe("cohen_kappa of unequal lengths", lambda: cohen_kappa([0, 1, 2], [0, 1]), match="equal length"),
    Probe("confusion_matrix num_classes below the labels", lambda: confusion_matrix([0, 4], [0, 1], num_classes=3),
          match="num_classes"),
    Probe("selective_accuracy coverage=0", lambda: selective_accuracy([True, False], [0.1, 0.2], 0.0),
          match="coverage"),
    Probe("selective_accuracy NaN uncertainty", lambda: selective_accuracy([True, False], [math.nan, 0.2], 0.5),
          match="uncertainty"),
    Probe("accuracy_coverage_curve with non-boolean correct",
          lambda: accuracy_coverage_curve([0.3, 1.0], [0.1, 0.2], [0.5]), match="correct"),
    # data
    Probe("synthetic_psg n_subjects=1.5", lambda: synthetic_psg(1.5, 6, rng=np.random.default_rng(0)),
          raises=TypeError, match="n_subjects"),
    Probe("synthetic_psg sampling_rate=nan", lambda: synthetic_psg(1, 6, rng=np.random.default_rng(0),
                                                                   sampling_rate=math.nan), match="sampling_rate"),
    Probe("synthetic_psg with a seed instead of a generator", lambda: synthetic_psg(1, 6, rng=0), raises=TypeError,
          match="rng"),
    Probe("sample_hypnogram start=5", lambda: sample_hypnogram(10, np.random.default_rng(0), start=5), match="start"),
    Probe("sample_hypnogram n_epochs=-1", lambda: sample_hypnogram(-1, np.random.default_rng(0)), match="n_epochs"),
    Probe("corrupt_eog fraction=1.5", lambda: corrupt_eog(_psg(), 1.5, np.random.default_rng(0)), match="fraction"),
    Probe("corrupt_eog channel=3", lambda: corrupt_eog(_psg(), 0.5, np.random.default_rng(0), channel=3),
          match="channel"),
    Probe("corrupt_eog of an array", lambda: corrupt_eog(np.zeros((1, 6, 3, 10)), 0.5, np.random.default_rng(0)),
          raises=TypeError, match="PSGData"),
    Probe("normalize_recordings with NaN", lambda: normalize_recordings(np.full((2, 3, 10), np.nan)), match="NaN"),
    Probe("normalize_recordings of a 2-D array", lambda: normalize_recordings(np.zeros((3, 10))), match="signals"),
    Probe("PSGData with mismatched stages", lambda: PSGData(np.zeros((1, 6, 3, 10)), np.zeros((1, 5)), 50.0),
          match="stages"),
    Probe("Corruption.conflicting with the wrong shape",
          lambda: Corruption(np.zeros((1, 4), bool), np.zeros((1, 4)), np.zeros((1, 4), int)).conflicting(np.zeros(3)),
          match="shape"),
    Probe("Recording with unpaired stages",
          lambda: Recording(np.zeros((3, 1, 10)), np.zeros(2), np.zeros(3), 100.0, ("EEG",)), match="stages"),
    Probe("load_edf_recording epoch_seconds=0", lambda: load_edf_recording("x.edf", channels=("EEG",),
                                                                           epoch_seconds=0.0), match="epoch_seconds"),
    Probe("load_edf_recording of a missing file", lambda: load_edf_recording("/nonexistent.edf", channels=("EEG",)),
          raises=FileNotFoundError, match="psg_path"),
    Probe("load_edf_recording channels='EEG'", lambda: load_edf_recording("x.edf", channels="EEG"),
          raises=TypeError, match="channels"),
    # models and training
    Probe("ViewSpec with no channels", lambda: ViewSpec("eeg", ()), match="channels"),
    Probe("ViewSpec channels as a string", lambda: ViewSpec("eeg", "0"), raises=TypeError, match="channels"),
    Probe("default_views eog_five_class ablation", lambda: default_views(eog_five_class=True)[1].num_categories,
          returns=lambda k: k == 5, doc="the ablation's EOG view separates all five stages"),
    Probe("EpochEncoder sampling_rate=nan", lambda: EpochEncoder(1, math.nan), match="sampling_rate"),
    Probe("EpochEncoder dropout=1.5", lambda: EpochEncoder(1, FS, dropout=1.5), match="dropout"),
    Probe("EpochCNN num_classes=0", lambda: EpochCNN(1, 0, FS), match="num_classes"),
    Probe("EpochCNN on NaN signals", lambda: EpochCNN(1, 5, FS, 4)(_nan(torch.zeros(2, 1, 1200))), match="NaN"),
    Probe("ConfSleepNet with duplicate view names", lambda: ConfSleepNet([ViewSpec.five_class("a", (0,))] * 2),
          match="unique"),
    Probe("ConfSleepNet on signals with too few channels", lambda: _model()(torch.zeros(2, 2, 1200)),
          match="C >= 3"),
    Probe("ConfSleepNet on NaN signals", lambda: _model()(_nan(torch.zeros(2, 3, 1200))), match="NaN"),
    Probe("ConfSleepNet.fuse of an unknown view", lambda: (lambda m: m.fuse(m.opinions(torch.zeros(2, 3, 1200)),
                                                                            views=["eeg", "ecg"]))(_model().eval()),
          match="ecg"),
    Probe("LateFusionNet encoder without out_features",
          lambda: LateFusionNet([torch.nn.Identity()], [(0,)]), raises=TypeError, match="out_features"),
    Probe("LateFusionNet on too few channels",
          lambda: LateFusionNet(_encoders(), [(0,), (1,), (2,)])(torch.zeros(2, 2, 1200)), match="C >= 3"),
    Probe("fit_confsleepnet lr=nan", lambda: fit_confsleepnet(_model(), np.zeros((4, 3, 1200)), np.zeros(4, int),
                                                              epochs=1, lr=math.nan), match="lr"),
    Probe("fit_confsleepnet stages out of range",
          lambda: fit_confsleepnet(_model(), np.zeros((4, 3, 1200)), np.full(4, 7), epochs=1), match="stages"),
    Probe("fit_confsleepnet NaN signals",
          lambda: fit_confsleepnet(_model(), np.full((4, 3, 1200), np.nan), np.zeros(4, int), epochs=1),
          match="NaN"),
    Probe("fit_confsleepnet on a LateFusionNet",
          lambda: fit_confsleepnet(LateFusionNet(_encoders(), [(0,), (1,), (2,)]), np.zeros((4, 3, 1200)),
                                   np.zeros(4, int), epochs=1), raises=TypeError, match="ConfSleepNet"),
    Probe("fit_late_fusion epochs=0", lambda: fit_late_fusion(LateFusionNet(_encoders(), [(0,), (1,), (2,)]),
                                                              np.zeros((4, 3, 1200)), np.zeros(4, int), epochs=0),
          match="epochs"),
    Probe("predict_in_batches batch_size=0", lambda: predict_in_batches(lambda x: x, np.zeros((4, 3, 8)),
                                                                        batch_size=0), match="batch_size"),
    Probe("predict_in_batches of nothing", lambda: predict_in_batches(lambda x: x, np.zeros((0, 3, 8))),
          match="empty"),
]


# ---------------------------------------------------------------------------
# the hostile-input walk (tests/test_hostile_walk.py)
# ---------------------------------------------------------------------------
_EDF_DIR: list = []  # a TemporaryDirectory holding one tiny EDF+ file, made on first use


def _edf_file() -> str:
    """A 4-epoch, one-channel EDF+ night with embedded stage annotations (written once, removed at exit)."""
    if not _EDF_DIR:
        import tempfile

        import mne

        folder = tempfile.TemporaryDirectory(prefix="confsleepnet-walk-")
        raw = mne.io.RawArray(20e-6 * np.random.default_rng(0).standard_normal((1, 50 * 120)),
                              mne.create_info(["EEG Fpz-Cz"], 50.0, ["eeg"]), verbose="error")
        raw.set_annotations(mne.Annotations(onset=[0, 60], duration=[60, 60],
                                            description=["Sleep stage W", "Sleep stage 2"]))
        mne.export.export_raw(f"{folder.name}/night.edf", raw, fmt="edf", verbose="error")
        _EDF_DIR.append(folder)
    return f"{_EDF_DIR[0].name}/night.edf"


def _labels() -> tuple[np.ndarray, np.ndarray]:
    return np.array([0, 1, 2, 2, 4, 3]), np.array([0, 1, 2, 1, 4, 4])


_SIG = lambda: np.random.default_rng(0).standard_normal((4, 3, 1200)).astype(np.float32)  # noqa: E731
_TRAIN = dict(epochs=1, batch_size=4, lr=1e-3, weight_decay=1e-2)

VALID = {
    "Corruption": lambda: ((np.zeros((1, 4), bool), np.full((1, 4), -1, np.int8), np.zeros((1, 4), np.int64)), {}),
    "EpochCNN": lambda: ((1, 5), {"sampling_rate": FS, "width": 2, "dropout": 0.1}),
    "EpochEncoder": lambda: ((1,), {"sampling_rate": FS, "width": 2, "dropout": 0.1}),
    "LateFusionNet": lambda: ((_encoders(), [(0,), (1,), (2,)]), {"num_classes": 5}),
    "Opinion": lambda: ((torch.tensor([[0.5, 0.25]]), torch.tensor([0.25])), {}),
    "PSGData": lambda: ((np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2), np.int64), 50.0), {}),
    "Recording": lambda: ((np.zeros((2, 1, 8), np.float32), np.zeros(2, np.int64), np.array([0.0, 30.0]), 50.0,
                           ("EEG",)), {}),
    "ViewSpec": lambda: (("eog", (1,), (0, 1, 1, 1, 2)), {}),
    "accuracy": lambda: (_labels(), {}),
    "accuracy_coverage_curve": lambda: ((np.array([True, False, True]), np.array([0.1, 0.5, 0.2]), [0.5, 1.0]), {}),
    "aggregate": lambda: (([_A, _B],), {"rule": "conflict_aware", "order": "uncertainty"}),
    "cohen_kappa": lambda: (_labels(), {}),
    "common_partition": lambda: ((partition_matrix((0, 1, 1)), torch.eye(3)), {}),
    "conflict": lambda: ((_A, _B), {}),
    "conflict_in_common_space": lambda: ((_A, _B, torch.eye(5), partition_matrix((0, 1, 1, 1, 2))), {}),
    "confusion_matrix": lambda: (_labels(), {"num_classes": 5}),
    "corrupt_eog": lambda: ((_psg(), 0.5, np.random.default_rng(0)), {"channel": 1, "max_shift": 2}),
    "edl_loss": lambda: ((torch.rand(3, 5), torch.tensor([0, 4, 2]), 2),
                         {"annealing_epochs": 4, "kl_weight": 0.5}),
    "fit_confsleepnet": lambda: ((ConfSleepNet(sampling_rate=FS, width=2), _SIG(), np.array([0, 1, 2, 4])),
                                 {**_TRAIN, "annealing_epochs": 2}),
    "fit_late_fusion": lambda: ((LateFusionNet(_encoders(), [(0,), (1,), (2,)]), _SIG(), np.array([0, 1, 2, 4])),
                                _TRAIN),
    "fuse_average": lambda: ((_A, _B), {}),
    "fuse_conflict_aware": lambda: ((_A, _B), {}),
    "fuse_dempster": lambda: ((_A, _B), {}),
    "fuse_dempster_sets": lambda: (([_A, _B], [(0, 1, 2, 3, 4), (0, 1, 1, 1, 2)]), {}),
    "view_masses": lambda: ((_A, (0, 1, 1, 1, 2)), {}),
    "combine_masses": lambda: ((torch.full((4,), 0.25), torch.tensor([0.5, 0.0, 0.2, 0.3])), {}),
    "kl_to_uniform_dirichlet": lambda: ((torch.rand(2, 5) + 1,), {}),
    "lift": lambda: ((torch.rand(2, 3), torch.tensor(THREE_TO_FIVE)), {}),
    "lifting_matrix": lambda: (((0, 1, 1, 1, 2),), {}),
    "macro_f1": lambda: (_labels(), {}),
    "normalize_recordings": lambda: ((np.random.default_rng(0).standard_normal((1, 2, 3, 8)),), {}),
    "partition_matrix": lambda: (((0, 1, 1, 1, 2),), {}),
    "predict_in_batches": lambda: ((lambda x: x.sum(-1), _SIG()), {"batch_size": 3}),
    "sample_hypnogram": lambda: ((6, np.random.default_rng(0)), {"start": 0}),
    "selective_accuracy": lambda: ((np.array([True, False, True]), np.array([0.1, 0.5, 0.2]), 0.5), {}),
    "sort_by_uncertainty": lambda: (([_A, _B],), {}),
    "synthetic_psg": lambda: ((1, 2), {"rng": np.random.default_rng(0), "sampling_rate": FS,
                                       "subject_variability": 1.0}),
}
NOT_WALKED = {
    "SetFusion": "a plain record (opinion, conflict, masses) that fuse_dempster_sets fills; the fusion is walked",
    "TrainLog": "a plain record of losses and seconds that fit_confsleepnet / fit_late_fusion fill; the fits are "
                "walked",
}
if importlib.util.find_spec("mne") and importlib.util.find_spec("edfio"):  # the sleep extra writes the EDF file
    VALID["load_edf_recording"] = lambda: ((_edf_file(),), {"channels": ("EEG Fpz-Cz",), "epoch_seconds": 30.0,
                                                            "sampling_rate": 25.0})
else:
    NOT_WALKED["load_edf_recording"] = ("reads an EDF file through mne and edfio (pip install 'icml26[sleep]'), "
                                        "not installed here; with them the walk calls it on a tiny EDF+ file, and "
                                        "the HOSTILE 'load_edf_recording ...' probes and the EDF test cover it")

ALLOWED = {
    "edl_loss.evidence:nan": "NaN evidence gives a NaN loss by documented design (a diverged network shows in the "
                             "loss, as with any torch loss; HOSTILE 'edl_loss NaN evidence gives a NaN loss'), and a "
                             "finiteness check here would cost a device sync per training step",
    "kl_to_uniform_dirichlet.alpha:nan": "NaN propagates by documented design: the KL term of edl_loss, on the "
                                         "training hot path, as edl_loss.evidence",
    "lift.evidence:nan": "NaN propagates by documented design (lift is linear, e @ D, in the model's forward); "
                         "Opinion.from_evidence refuses the NaN evidence it yields",
}
