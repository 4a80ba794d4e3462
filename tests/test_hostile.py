"""Hostile input, across the registry: every probe a paper declares in its ``probes.py``
``HOSTILE`` raises the error it names, with a message that says what to change, or returns
its documented value. New papers join by declaring theirs."""

from __future__ import annotations

import importlib
import re

import pytest

from icml26 import registry


def _probes():
    for key in registry.keys(status="implemented"):
        spec = registry.get(key)
        if spec.missing_extras() or not (spec.folder / "probes.py").is_file():
            continue
        probes = importlib.import_module(f"{spec.api_module}.probes")
        for probe in getattr(probes, "HOSTILE", ()):
            yield pytest.param(probe, id=f"{key}-{probe.name}")


@pytest.mark.parametrize("probe", list(_probes()))
def test_hostile_call(probe):
    if probe.returns is not None:
        value = probe.call()
        assert probe.returns(value), f"{probe.name}: returned {value!r}; documented: {probe.doc}"
        return
    with pytest.raises(probe.raises) as info:
        probe.call()
    message = str(info.value)
    assert message, f"{probe.name}: {type(info.value).__name__} with an empty message"
    if probe.match is not None:
        assert re.search(probe.match, message), f"{probe.name}: message {message!r} does not match {probe.match!r}"


def test_every_implemented_paper_declares_hostile_probes():
    missing = [k for k in registry.keys(status="implemented")
               if not registry.get(k).missing_extras()
               and not getattr(_load(k), "HOSTILE", ())]
    assert not missing, f"papers without HOSTILE probes in probes.py: {missing}"


def _load(key):
    spec = registry.get(key)
    if not (spec.folder / "probes.py").is_file():
        return None
    return importlib.import_module(f"{spec.api_module}.probes")
