"""Curvature's corpus analysis sharded over 2 gloo ranks merges exactly into one process's result."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.distributed_harness import run_ranks

pytestmark = pytest.mark.dist


def _setup():
    pytest.importorskip("transformers")
    from icml26.common.tiny_lm import TinyLMConfig, build_model

    model = build_model(TinyLMConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=2, context=24), seed=0).eval()
    ids = torch.randint(0, 97, (7, 24), generator=torch.Generator().manual_seed(3))
    return model, ids


def _analysis(rank=None, world=None):
    from icml26.papers.curvature import layerwise_curvature_entropy

    model, ids = _setup()
    out = layerwise_curvature_entropy(model, ids, window=3, batch_size=2, show_progress=False)
    return {f.name: getattr(out, f.name) for f in dataclasses.fields(out)}


def test_sharded_analysis_equals_one_process():
    ref = _analysis()
    for got in run_ranks(_analysis, 2):
        for name, value in ref.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(value, got[name], equal_nan=True), name
            else:
                assert value == got[name], name
