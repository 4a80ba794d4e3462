"""The contract module itself: declared checks, their validation, the runner-side completion of a
run's checks, and the named random streams."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from icml26.contract import CheckSpec, Probe, RunContext, check, declare, finish_checks

A = CheckSpec("a_gap", "method - baseline", ">=", 0.02, "issue", "issue #5")
B = CheckSpec("b_full", "only at full scale", "<", 1.0, "paper", "Table 2", settings=("full",))
CHECKS = declare(A, B)


@pytest.mark.parametrize("kwargs,match", [
    ({"id": "Bad-Id"}, "check id"), ({"name": " "}, "name"), ({"op": "~"}, "op"),
    ({"target": float("nan")}, "target"), ({"target": "1"}, "target"), ({"source": "blog"}, "source"),
    ({"ref": ""}, "ref"), ({"settings": ("nightly",)}, "settings"), ({"settings": ()}, "settings"),
])
def test_checkspec_validation(kwargs, match):
    base = dict(id="x", name="n", op=">", target=0.0, source="ours", ref="why")
    with pytest.raises(ValueError, match=match):
        CheckSpec(**{**base, **kwargs})


def test_declare_refuses_duplicates_and_non_specs():
    with pytest.raises(ValueError, match="twice"):
        declare(A, A)
    with pytest.raises(TypeError):
        declare("a_gap")


def test_measure_carries_the_declaration():
    c = A.measure(0.03, note="n")
    assert (c.id, c.op, c.target, c.source, c.ref, c.passed) == ("a_gap", ">=", 0.02, "issue", "issue #5", True)
    assert not A.measure(float("nan")).passed and not A.measure(0.01).passed
    assert c.to_dict()["source"] == "issue"
    with pytest.raises(TypeError, match="a_gap"):
        A.measure("high")


def test_finish_checks_orders_fills_and_refuses():
    done = finish_checks(CHECKS, [A.measure(0.5)], where="x", setting="quick")
    assert [c.id for c in done] == ["a_gap"]  # b_full is not a quick-setting check
    done = finish_checks(CHECKS, [A.measure(0.5)], where="x", setting="full")
    assert [c.id for c in done] == ["a_gap", "b_full"]
    assert math.isnan(done[1].value) and not done[1].passed and "not measured" in done[1].note
    with pytest.raises(RuntimeError, match="not declared"):
        finish_checks(CHECKS, [check("adhoc", 1, ">", 0)], where="x")
    with pytest.raises(RuntimeError, match="twice"):
        finish_checks(CHECKS, [A.measure(1), A.measure(2)], where="x")
    moved = CheckSpec("a_gap", "method - baseline", ">=", 0.0, "issue", "issue #5").measure(0.01)
    with pytest.raises(RuntimeError, match="declares"):
        finish_checks(CHECKS, [moved], where="x")


def test_named_streams():
    ctx = RunContext(seed=3, device="cpu", setting="tiny", threads=1)
    # the name is part of the entropy: [seed, crc32(name), index]
    expected = np.random.default_rng([3, zlib.crc32(b"forget"), 2]).random(4)
    assert np.array_equal(ctx.rng("forget", 2).random(4), expected)
    a, b = ctx.rng("forget").random(4), ctx.rng("init").random(4)
    assert not np.array_equal(a, b)
    assert np.array_equal(a, RunContext(seed=3, device="cpu", setting="quick", threads=2).rng("forget").random(4))
    assert not np.array_equal(a, RunContext(seed=4, device="cpu", setting="tiny", threads=1).rng("forget").random(4))
    t1 = ctx.torch_generator("init", 1)
    t2 = ctx.torch_generator("init", 1)
    import torch

    assert torch.equal(torch.rand(3, generator=t1), torch.rand(3, generator=t2))
    assert t1.initial_seed() == ctx.seed_for("init", 1)
    assert isinstance(ctx.seed_for("sklearn"), int)
    with pytest.raises(TypeError, match="stream"):
        ctx.rng(1.5)
    with pytest.raises(TypeError, match="integer offsets were retired"):
        ctx.rng(9)
    with pytest.raises(ValueError, match="index"):
        ctx.rng("x", -1)
    with pytest.raises(ValueError, match="index"):
        ctx.rng("x", True)


def test_declared_streams_are_enforced():
    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams={"data": "the data"})
    ctx.rng("data")
    ctx.rng("tune:some_arm")  # the shared tuner's streams need no declaration
    with pytest.raises(KeyError, match="'model' is not declared in the experiment's STREAMS"):
        ctx.seed_for("model")
    with pytest.raises(TypeError, match="STREAMS must map"):
        RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams={"data": 0})


def test_probe_needs_one_expectation_and_a_doc():
    assert Probe("p", lambda: None).raises == (ValueError, TypeError)
    with pytest.raises(ValueError, match="not both"):
        Probe("p", lambda: None, raises=ValueError, returns=lambda v: True, doc="d")
    with pytest.raises(ValueError, match="doc"):
        Probe("p", lambda: None, returns=lambda v: True)


def test_a_curve_checks_its_lengths_and_stores_the_json_form():
    from icml26.contract import Curve, curves_to_dicts

    c = Curve(x=[1, 2, 3], series={"ours": [0.1, 0.2, 0.3], "base": [0.2, None, 0.4]}, xlabel="step", ylabel="loss",
              logy=True)
    assert c.to_dict() == {"x": [1, 2, 3], "series": {"ours": [0.1, 0.2, 0.3], "base": [0.2, None, 0.4]},
                           "xlabel": "step", "ylabel": "loss", "logy": True}
    plain = {"x": [0], "series": {"a": [1.0]}}
    assert curves_to_dicts({"c": c, "d": plain}) == {"c": c.to_dict(), "d": plain}
    with pytest.raises(ValueError, match="'base' has 2 values for 3 x positions"):
        Curve(x=[1, 2, 3], series={"ours": [1, 2, 3], "base": [1, 2]})
    with pytest.raises(ValueError, match="at least one series"):
        Curve(x=[1], series={})
    with pytest.raises(ValueError, match="labels"):
        Curve(x=[1, 2], series={"a": [1, 2]}, labels=["one"])


def test_a_run_returning_curves_writes_the_same_json_as_dicts(fake_paper, monkeypatch):
    import sys

    from icml26.contract import Curve
    from icml26.runner import execute

    experiment = sys.modules["icml26.papers.zz_fake.experiment"]
    real = experiment.run
    plain = execute("zz_fake", "tiny", 0, render=False)[0]["curves"]

    def typed(config, ctx):
        out = real(config, ctx)
        out.curves = {name: Curve(**c) for name, c in out.curves.items()}
        return out

    monkeypatch.setattr(experiment, "run", typed)
    assert execute("zz_fake", "tiny", 0, render=False)[0]["curves"] == plain
