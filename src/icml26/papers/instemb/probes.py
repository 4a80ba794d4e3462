"""InstEmb's exported module for the module matrix, and hostile calls to its public API."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.instemb import (
    AttrWorld,
    Example,
    InstEmbModel,
    InstEmbSettings,
    attrworld_tokenizer,
    attrworld_vocabulary,
    daap_pool,
    distill_loss,
    info_nce,
    inst_sts_pairs,
    kmeans_nmi,
    spearman_ceiling,
    train_instemb,
)


def _tiny_lm(context: int = 32):
    from icml26.common.tiny_lm import TinyLMConfig, build_model

    return build_model(TinyLMConfig(arch="llama", vocab_size=len(attrworld_vocabulary()), d_model=16, n_layers=1,
                                    n_heads=2, context=context), seed=0)


def _model(k: int = 2, context: int = 32, **kw) -> InstEmbModel:
    return InstEmbModel.wrap(_tiny_lm(context), k, tokenizer=attrworld_tokenizer(), **kw)


def _ids(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(3, len(attrworld_vocabulary()), (2, 6), generator=g)
    ids[:, -1] = 1  # <eos> closes each prompt
    mask = torch.ones_like(ids)
    mask[1, :2] = 0  # the second row is left-padded
    return ids, mask


MODULES = [
    ModuleCase("InstEmbModel", build=lambda: _model(2), inputs=_ids),
]

_NAN = torch.full((2, 3), math.nan)
_BATCH = [Example("what colour is it", "an object in red", "it is red"),
          Example("what shape is it", "an object a star", "it is star")]

HOSTILE = [
    Probe("negative K", lambda: _model(-1), match="num_lookahead"),
    Probe("K = 0 with distillation on", lambda: _model(0), match="distill_weight"),
    Probe("empty instruction", lambda: _model(2, with_teacher=False).encode(["an object in red"], ""),
          match="instruction"),
    Probe("input longer than the positions",
          lambda: _model(4, context=8, with_teacher=False).encode(["an object in red painted blue"], "what colour is it"),
          match="positions"),
    Probe("daap pooling without look-ahead tokens",
          lambda: _model(0, distill_weight=0.0, with_teacher=False).encode(["an object"], "what colour is it",
                                                                             pooling="daap"), match="pooling"),
    Probe("unknown pooling", lambda: _model(2, with_teacher=False).encode(["an object"], "x", pooling="max"),
          match="pooling"),
    Probe("one-example batch", lambda: _model(2).loss(_BATCH[:1]), match="batch"),
    Probe("teacher view without a teacher", lambda: _model(2, with_teacher=False).loss(_BATCH), match="teacher"),
    Probe("zero temperature", lambda: info_nce(torch.ones(2, 3), torch.ones(2, 3), tau=0.0), match="tau"),
    Probe("mismatched shapes", lambda: info_nce(torch.ones(2, 3), torch.ones(3, 3)), match="queries"),
    Probe("NaN propagates through info_nce", lambda: info_nce(_NAN, _NAN), returns=lambda v: bool(torch.isnan(v)),
          doc="NaN in, NaN out"),
    Probe("unknown distillation kind", lambda: distill_loss(torch.ones(1, 2, 3), torch.ones(1, 2, 3), "l1"),
          match="kind"),
    Probe("distillation with K = 0", lambda: distill_loss(torch.ones(1, 0, 3), torch.ones(1, 2, 3)),
          match="num_lookahead"),
    Probe("negative DAAP weight", lambda: daap_pool(torch.ones(2, 3), torch.ones(2, 1, 3), weight=-1.0),
          match="weight"),
    Probe("unknown DAAP mode", lambda: daap_pool(torch.ones(2, 3), torch.ones(2, 1, 3), mode="max"), match="mode"),
    Probe("NaN propagates through daap_pool", lambda: daap_pool(_NAN, _NAN.unsqueeze(1)),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN in, NaN out"),
    Probe("NaN temperature setting", lambda: InstEmbSettings(tau=math.nan), match="tau"),
    Probe("unknown view", lambda: InstEmbSettings(views=("mirror",)), match="views"),
    Probe("zero training steps", lambda: train_instemb(_model(2), _BATCH, 0), match="steps"),
    Probe("empty Example text", lambda: Example("what colour is it", " ", "it is red"), match="text"),
    Probe("no AttrWorld texts", lambda: AttrWorld.sample(0, np.random.default_rng(0)), match="n="),
    Probe("NaN embeddings for k-means", lambda: kmeans_nmi(np.full((4, 2), np.nan), [0, 0, 1, 1]),
          match="NaN"),
    Probe("zero Inst-STS pairs", lambda: inst_sts_pairs(np.zeros((1, 4), int), 0, np.random.default_rng(0)),
          match="n_pairs"),
    Probe("constant gold", lambda: spearman_ceiling([1, 1, 1]), match="gold"),
]


# ---------------------------------------------------------------------------
# The hostile-input walk (tests/test_hostile_walk.py): valid calls, exports not walked, accepted suspects
# ---------------------------------------------------------------------------
def _fit_call(**kwargs):
    """A one-step training call on a fresh tiny LM (the signature of fit_instemb and its baselines)."""
    def make():
        return (_tiny_lm(), list(_BATCH), 1), dict(tokenizer=attrworld_tokenizer(), batch_size=2,
                                                  show_progress=False) | kwargs
    return make


def _embeddings(instructions: int = 2, n: int = 6, d: int = 3) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(instructions, n, d))


_LABELS = np.array([[0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1]])
_PAIRS = np.array([[0, 0, 1, 1], [0, 0, 2, 0], [1, 0, 2, 1], [1, 1, 2, 0]])

VALID = {
    "AttrWorld": lambda: ((("an object in red", "an object in blue"), {"colour": np.array([0, 1])}), {}),
    "Example": lambda: (("what colour is it", "an object in red", "it is red"), {}),
    "InstEmbModel": lambda: ((_tiny_lm(), 2), {"tokenizer": attrworld_tokenizer(), "seed": 0}),
    "contrastive_last_token": _fit_call(lr=3e-4),
    "daap_pool": lambda: ((torch.randn(2, 3), torch.randn(2, 2, 3)), {"weight": 1.0}),
    "distill_loss": lambda: ((torch.randn(2, 2, 3), torch.randn(2, 3, 3)), {"positionwise": 0.5}),
    "fit_instemb": _fit_call(num_lookahead=2, lr=3e-4),
    "info_nce": lambda: ((torch.randn(2, 3), torch.randn(2, 3)), {"tau": 0.05}),
    "input_last": lambda: ((_tiny_lm(), list(_BATCH), 1), {"tokenizer": attrworld_tokenizer()}),
    "inst_sts_pairs": lambda: ((_LABELS, 4, np.random.default_rng(0)), {"match_fraction": 0.5}),
    "inst_sts_spearman": lambda: ((_embeddings(), _PAIRS), {}),
    "instemb_last_token": _fit_call(num_lookahead=2, lr=3e-4),
    "instruction_nmi": lambda: ((_embeddings(), _LABELS), {"seed": 0}),
    "instruction_sensitivity": lambda: ((_embeddings(), np.array([0, 1])), {}),
    "kmeans_nmi": lambda: ((_embeddings(1)[0], _LABELS[0]), {"seed": 0, "n_init": 2}),
    "spearman_ceiling": lambda: ((np.array([0.0, 1.0, 1.0, 0.0]),), {}),
    "train_instemb": lambda: ((_model(2), list(_BATCH), 1), {"batch_size": 2, "lr": 3e-4, "weight_decay": 0.01,
                                                            "show_progress": False}),
}

NOT_WALKED = {
    "InstEmbLoss": "a result record filled by InstEmbModel.loss(return_parts=True) (train_instemb is walked)",
    "InstEmbOutput": "a result record filled by InstEmbModel.embed_rows / forward (InstEmbModel is walked, and "
                     "MODULES runs its forward)",
    "TrainLog": "a result record filled by train_instemb, which is walked",
}

_PROPAGATES = ("NaN in, NaN out by documented design (README, HOSTILE 'NaN propagates through …'); {where}")
_TRAINING = _PROPAGATES.format(where="it runs at every training step, where a finiteness check would cost a "
                                     "device sync per step, and train_instemb refuses the non-finite loss")
ALLOWED = {
    "info_nce.queries:nan": _TRAINING,
    "info_nce.keys:nan": _TRAINING,
    "distill_loss.student_la:nan": _TRAINING,
    "distill_loss.teacher_out:nan": _TRAINING,
    "daap_pool.h_eos:nan": _PROPAGATES.format(where="it pools every batch of encode(); the NaN embedding stays "
                                                    "visible and the metrics refuse it"),
    "daap_pool.h_la:nan": _PROPAGATES.format(where="it pools every batch of encode(); the NaN embedding stays "
                                                   "visible and the metrics refuse it"),
}
