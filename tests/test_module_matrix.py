"""The module matrix (as timm's tests run over ``list_models``): every ``nn.Module`` a paper
declares in its ``probes.py`` ``MODULES`` gives finite outputs, a gradient on every parameter,
outputs in the input's dtype and on its device, and survives a ``state_dict`` round trip."""

from __future__ import annotations

import importlib

import pytest
import torch

from icml26 import registry


def _cases():
    for key in registry.keys(status="implemented"):
        spec = registry.get(key)
        if spec.missing_extras() or not (spec.folder / "probes.py").is_file():
            continue
        probes = importlib.import_module(f"{spec.api_module}.probes")
        for case in getattr(probes, "MODULES", ()):
            for dtype in case.dtypes:
                yield pytest.param(case, dtype, "cpu", id=f"{key}-{case.name}-{dtype}")
            yield pytest.param(case, "float32", "cuda", id=f"{key}-{case.name}-cuda",
                               marks=[pytest.mark.cuda,
                                      pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")])


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict) or hasattr(out, "items"):
        return [t for v in out.values() for t in _tensors(v)]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _tensors(v)]
    if hasattr(out, "__dataclass_fields__"):
        return [t for name in out.__dataclass_fields__ for t in _tensors(getattr(out, name))]
    return []


def _cast(args, dtype, device):
    return tuple(a.to(device=device, dtype=dtype) if isinstance(a, torch.Tensor) and a.is_floating_point()
                 else a.to(device) if isinstance(a, torch.Tensor) else a for a in args)


CASES = list(_cases())


@pytest.mark.parametrize("case,dtype,device", CASES)
def test_module(case, dtype, device):
    dtype = getattr(torch, dtype)
    torch.manual_seed(0)
    module = case.build().to(device=device, dtype=dtype)
    args = _cast(case.inputs(torch.Generator().manual_seed(0)), dtype, device)
    out = module(*args)
    floats = [t for t in _tensors(out) if t.is_floating_point()]
    assert floats, f"{case.name}: the output holds no floating tensor"
    for t in floats:
        assert torch.isfinite(t).all(), f"{case.name}: non-finite output"
        assert t.dtype == dtype, f"{case.name}: output dtype {t.dtype} for input {dtype}"
        assert t.device.type == torch.device(device).type
    loss = case.loss(out) if case.loss is not None else sum(t.sum() for t in floats)
    if any(p.requires_grad for p in module.parameters()):
        loss.backward()
    for name, p in module.named_parameters():
        if not p.requires_grad or name in case.no_grad:
            continue
        assert p.grad is not None, f"{case.name}: parameter {name} gets no gradient"
        assert torch.isfinite(p.grad).all(), f"{case.name}: non-finite gradient in {name}"
    # state_dict round trip: a fresh instance loaded from it computes the same output
    fresh = case.build().to(device=device, dtype=dtype)
    fresh.load_state_dict(module.state_dict())
    module.eval(), fresh.eval()
    with torch.no_grad():
        a = [t for t in _tensors(module(*args)) if t.is_floating_point()]
        b = [t for t in _tensors(fresh(*args)) if t.is_floating_point()]
    assert len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b)), f"{case.name}: state_dict round trip differs"


def test_matrix_covers_every_implemented_paper_with_modules():
    """A paper whose public API exports an nn.Module class declares it in probes.MODULES."""
    missing = []
    for key in registry.keys(status="implemented"):
        spec = registry.get(key)
        if spec.missing_extras():
            continue
        api = spec.load_api()
        # by class name, so that an alias (METHOD = SomeModule) needs no second case
        exported = {getattr(api, n).__name__ for n in api.__all__ if isinstance(getattr(api, n), type)
                    and issubclass(getattr(api, n), torch.nn.Module)}
        if not exported:
            continue
        declared = set()
        if (spec.folder / "probes.py").is_file():
            probes = importlib.import_module(f"{spec.api_module}.probes")
            declared = {c.name for c in getattr(probes, "MODULES", ())}
        if exported - declared:
            missing.append(f"{key}: {sorted(exported - declared)}")
    assert not missing, "exported nn.Modules without a MODULES case: " + "; ".join(missing)
