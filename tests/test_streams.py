"""Random streams across the registry: every stream a paper draws from is declared, and no two
declared (stream, index) pairs of a paper give the same seed (the name is part of the entropy)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icml26 import registry
from icml26.contract import TUNER_STREAM_PREFIX, RunContext

IMPLEMENTED = registry.keys(status="implemented")
PAPERS = Path(registry.__file__).resolve().parent / "papers"
_DRAW = re.compile(r"\b(?:rng|seed_for|torch_generator)\(\s*(f?)(\"[^\"]*\"|'[^']*')")
INDICES = 100


def _streams(key: str) -> dict[str, str]:
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    streams = getattr(spec.load_experiment(), "STREAMS", None)
    assert isinstance(streams, dict) and streams, f"{key}: experiment.py declares no STREAMS"
    return streams


@pytest.mark.parametrize("key", IMPLEMENTED)
def test_every_literal_stream_a_paper_draws_from_is_declared(key):
    streams = _streams(key)
    used: set[str] = set()
    for path in (PAPERS / key).rglob("*.py"):
        for m in _DRAW.finditer(path.read_text(encoding="utf-8")):
            name = m.group(2)[1:-1]
            if m.group(1):  # an f-string family such as f"{tier}_batches": its fixed part must be declared
                fixed = re.sub(r"\{[^}]*\}", "", name)
                assert any(s.endswith(fixed) or s.startswith(fixed) for s in streams), (key, name)
            else:
                used.add(name)
    assert not used - set(streams), f"{key}: streams drawn but not declared: {sorted(used - set(streams))}"


@pytest.mark.parametrize("key", IMPLEMENTED)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_no_two_streams_of_a_paper_share_a_seed(key, seed):
    names = list(_streams(key)) + [TUNER_STREAM_PREFIX + arm for arm in registry.get(key).load_arms()]
    ctx = RunContext(seed=seed, device="cpu", setting="tiny", threads=1)
    seen: dict[int, tuple[str, int]] = {}
    for name in names:
        for index in range(INDICES):
            s = ctx.seed_for(name, index)
            assert s not in seen, f"{key}: {seen[s]} and {(name, index)} give the same seed {s} (seed {seed})"
            seen[s] = (name, index)
    assert len(seen) == len(names) * INDICES
