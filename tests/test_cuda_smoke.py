"""The CUDA smoke suite (``pytest -m cuda``): every implemented paper's tiny setting on ``cuda``
(the module matrix adds each declared module on ``cuda``). Skipped without a GPU."""

from __future__ import annotations

import math

import pytest
import torch

from icml26 import registry, runner

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("key", registry.keys(status="implemented"))
def test_tiny_setting_runs_on_cuda(key):
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    result = runner.run(key, tiny=True, device="cuda", out=None, progress=False)
    assert result.data["provenance"]["device"].startswith("cuda")
    for arm, values in result.metrics.items():
        for name, value in values.items():
            assert math.isfinite(value), f"{key}: {arm}.{name} = {value} on cuda"
