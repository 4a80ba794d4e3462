"""LLR's declarations for the registry-wide hostile-input walk (``tests/test_hostile_walk.py``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from icml26.papers.llr import layerwise_param_groups

__all__ = ["ALLOWED", "NOT_WALKED", "VALID"]


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 64))


def _with_optimizer() -> tuple[tuple, dict]:
    model = _mlp()
    return (model, torch.optim.SGD(layerwise_param_groups(model), lr=0.1)), {"total_steps": 10}


class _EmbedHead(nn.Module):
    """An embedding, a hidden matrix and a head: what the embedding/head control scales."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(32, 64)
        self.hidden = nn.Linear(64, 64)
        self.head = nn.Linear(64, 32)


def _embed_head_with_optimizer() -> tuple[tuple, dict]:
    model = _EmbedHead()
    return (model, torch.optim.SGD(layerwise_param_groups(model), lr=0.1)), {"total_steps": 10}


def _weight() -> torch.Tensor:
    return torch.randn(64, 96, generator=torch.Generator().manual_seed(0))


def _eigenvalues() -> np.ndarray:
    return np.sort(np.random.default_rng(0).pareto(2.0, size=200) + 1.0)


VALID = {
    "KindMeans": lambda: (({"0": "mlp", "2": "mlp"},), {}),
    "LayerwiseLR": _with_optimizer,
    "Muon": lambda: (([{"params": [nn.Parameter(torch.randn(8, 8))], "use_muon": True}],), {}),
    "ShuffledMultipliers": lambda: ((0,), {}),
    "StaticLayerwiseLR": _with_optimizer,
    "embed_head_layerwise_lr": _embed_head_with_optimizer,
    "esd": lambda: ((_weight(),), {}),
    "esd_alpha": lambda: ((_weight(),), {}),
    "find_layers": lambda: ((_mlp(),), {}),
    "fit_power_law": lambda: ((_eigenvalues(),), {}),
    "kind_static_step0_lr": _with_optimizer,
    "layer_alphas": lambda: ((_mlp(),), {}),
    "layer_kinds": lambda: ((_mlp(),), {}),
    "layerwise_param_groups": lambda: ((_mlp(),), {}),
    "map_alphas": lambda: ((np.array([2.0, 3.0, 4.5]),), {"r_min": 1.0, "r_max": 3.0}),
    "matrix_kind": lambda: (("model.layers.0.mlp.up_proj",), {}),
    "newton_schulz": lambda: ((torch.randn(8, 16, generator=torch.Generator().manual_seed(0)),), {}),
    "shuffled_layerwise_lr": _with_optimizer,
    "uniform_layerwise_lr": _with_optimizer,
}

NOT_WALKED = {
    "AlphaFit": "a result record filled by fit_power_law / esd_alpha, which are walked",
}

ALLOWED = {
    "newton_schulz.update:nan": "Muon.step runs it on every matrix at every step; NaN in, NaN out, as torch's own "
                                "optimizers do with a NaN gradient (a finiteness check would cost a device sync per step)",
}
