"""Shared fixtures: a private cache folder, one torch thread, and a fake paper for testing the machinery; Ctrl-C
restored where the suite was launched with SIGINT ignored."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import types

import pytest

import torch

from icml26 import registry
from icml26.common.seeding import set_threads
from icml26.contract import CheckSpec, Outcome, declare


def pytest_configure(config):
    """A suite launched in the background (``make test &``, ``nohup``) inherits SIGINT ignored, and so would
    every process its tests start: the tests of what Ctrl-C does would then see nothing happen. Give SIGINT
    Python's own handler back (a caught signal is reset to the default in a started process, so the children
    get Python's handler too); xdist's workers run this as well."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def one_thread():
    """One torch thread for tests of tiny models, where more threads only add synchronisation."""
    previous = torch.get_num_threads()
    set_threads(1)
    yield
    set_threads(previous)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Tests train their own tiny artifacts unless ICML26_CACHE points somewhere already.

    Under pytest-xdist the workers share one cache folder (entries are built in a temporary folder
    and renamed into place, so two workers building the same entry is safe).
    """
    if "ICML26_CACHE" not in os.environ:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        folder = shared / "icml26-cache"
        folder.mkdir(parents=True, exist_ok=True)
        os.environ["ICML26_CACHE"] = str(folder)
    yield


@pytest.fixture(scope="session", autouse=True)
def _one_thread_per_xdist_worker():
    """With two pytest workers on two cores, each worker uses one torch thread."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("ICML26_THREADS", "1")  # what the runner uses when threads=None
        set_threads(int(os.environ["ICML26_THREADS"]))
    yield


@dataclasses.dataclass
class FakeConfig:
    """A config with one field of each kind the CLI parses."""

    steps: int = 100
    """Number of steps."""
    scale: float = 1.0
    """Multiplies the method's score."""
    mode: str = "a"
    """A string."""
    sizes: tuple[int, ...] = (1, 2)
    """A tuple of ints."""
    fail: bool = False
    """Raise inside run (to test that a failed run writes nothing)."""

    @classmethod
    def quick(cls) -> "FakeConfig":
        return cls(steps=10)

    @classmethod
    def tiny(cls) -> "FakeConfig":
        return cls(steps=3)


FAKE_CHECKS = declare(
    CheckSpec("method_beats_baseline", "method score - baseline score", ">", 0.0, "ours",
              "the fake paper's only claim"),
)


def _fake_run(config: FakeConfig, ctx) -> Outcome:
    if config.fail:
        raise RuntimeError("asked to fail")
    rng = ctx.rng("noise")
    noise = float(rng.normal())
    method = config.scale * (2.0 + noise)
    baseline = 1.0 + noise
    return Outcome(
        metrics={"method": {"score": method, "steps": config.steps}, "baseline": {"score": baseline}},
        checks=[FAKE_CHECKS["method_beats_baseline"].measure(method - baseline)],
        curves={"score": {"x": [1, 2, 3], "series": {"method": [1.0, 2.0, float("nan")],
                                                     "baseline": [0.5, 1.0, 1.5]}}},
    )


@pytest.fixture
def fake_paper(monkeypatch):
    """Register an implemented paper ``zz_fake`` whose experiment lives in memory."""
    package = types.ModuleType("icml26.papers.zz_fake")
    experiment = types.ModuleType("icml26.papers.zz_fake.experiment")
    experiment.Config = FakeConfig
    experiment.CHECKS = FAKE_CHECKS
    experiment.run = _fake_run
    monkeypatch.setitem(sys.modules, package.__name__, package)
    monkeypatch.setitem(sys.modules, experiment.__name__, experiment)
    spec = registry.PaperSpec(key="zz_fake", title="A fake paper", url=None, code=None, area="lm",
                              extras=(), claim="The method beats the baseline.", status="implemented")
    monkeypatch.setitem(registry.PAPERS, "zz_fake", spec)
    return spec


@pytest.fixture
def planned_paper(monkeypatch):
    """Register a planned (not yet implemented) paper ``zz_planned``: every registered paper may be implemented."""
    spec = registry.PaperSpec(key="zz_planned", title="A planned paper", url="https://arxiv.org/abs/2699.00001",
                              code=None, area="lm", extras=(), claim="Something will be shown.", status="planned")
    monkeypatch.setitem(registry.PAPERS, "zz_planned", spec)
    return spec


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct, loaded once per test run (skipped without the pretrained extra)."""
    from icml26.common.extras import extra_installed, install_hint

    if not extra_installed("pretrained"):
        pytest.skip(install_hint("pretrained"))
    from icml26.common.pretrained import load_pretrained_lm

    return load_pretrained_lm()


@pytest.fixture(scope="session")
def minilm():
    """The shared all-MiniLM-L6-v2 encoder (skipped without the embed extra)."""
    from icml26.common.extras import extra_installed, install_hint

    if not extra_installed("embed"):
        pytest.skip(install_hint("embed"))
    from icml26.common.encoder import get_encoder

    return get_encoder()
