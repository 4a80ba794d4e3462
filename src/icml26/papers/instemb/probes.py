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
