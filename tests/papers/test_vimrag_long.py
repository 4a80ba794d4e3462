"""VimRAG (B) in the long-episode setting (issue #40 item 3): the redundant-search penalty enters the reward
exactly as documented, ``r = 1[right] · max(0, 1 − c · #searches off P_ans)``; longer episodes come out when
configured; GGPO's mask reads the outcome while the advantages read the penalised reward; a run without (A)
measures (B)'s checks and the penalised ones, and the further run's driver keeps only those.

Numbers from outside the code: a hand-built memory graph (its answer path by hand), and each sampled
rollout rebuilt as an explicit :class:`MemoryGraph`.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from icml26.contract import RunContext
from icml26.papers.vimrag import MemoryGraph, experiment, search_task, sections
from icml26.common.config import config_to_dict
from icml26.papers.vimrag.config import Config
from icml26.papers.vimrag.search_task import SearchTask, penalised_reward, rollout, train



def _long_tiny(**changes) -> Config:
    return dataclasses.replace(Config.tiny(), **{"documents": 24, "horizon": 24, "redundant_penalty": 0.05,
                                                 "run_budget": False, **changes})


def test_penalty_on_a_constructed_episode_by_hand():
    # search(dead end) -> search(a: the key) -> search(a again) -> search(b with the key) -> answer (right)
    g = MemoryGraph("which value does b hold?")
    dead = g.add_node("search 7", parents=[g.root])
    key = g.add_node("search a", parents=[g.root])
    again = g.add_node("search a again", parents=[g.root])
    locked = g.add_node("search b", parents=[key])
    g.add_node("answer", parents=[locked], action="answer")
    searches = [dead, key, again, locked]
    k = sum(v not in g.answer_path() for v in searches)
    assert k == 2  # the dead end and the repeated search; a and b are on P_ans
    success = torch.tensor([1.0, 1.0, 0.0, 1.0])
    redundant = torch.tensor([2.0, 0.0, 5.0, 30.0])
    # 1 - 0.05*2 = 0.9; a clean success keeps 1; a failure stays 0 whatever it searched; 1 - 1.5 < 0 -> 0
    assert penalised_reward(success, redundant, 0.05).tolist() == pytest.approx([0.9, 1.0, 0.0, 0.0])
    assert penalised_reward(success, redundant, 0.0) is success  # no penalty: the outcome itself
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="redundant_penalty"):
            SearchTask(redundant_penalty=bad)


def _graph_of(ro, b: int, horizon: int) -> tuple[MemoryGraph, list]:
    g, nodes = MemoryGraph("q"), []
    for t in range(horizon):
        kind = int(ro.kind[b, t])
        if kind == 0:
            break
        parent = int(ro.parent[b, t])
        nodes.append(g.add_node(f"step {t}", parents=[nodes[parent] if parent >= 0 else g.root],
                                action="answer" if kind == 2 else "retrieve"))
    return g, nodes


def test_rollout_rewards_follow_the_documented_formula_on_explicit_graphs():
    task = SearchTask(documents=12, values=12, horizon=24, redundant_penalty=0.05)
    weights = 0.3 * torch.randn(task.features, task.actions, generator=torch.Generator().manual_seed(0))
    ro = rollout(task, weights, task.tables(), 64, 8, torch.Generator().manual_seed(1))
    checked = 0
    for b in range(ro.kind.shape[0]):
        g, nodes = _graph_of(ro, b, task.horizon)
        answered = g.answer_node() is not None
        path = g.answer_path() if answered else set()
        k = sum(v not in path for v in nodes if g.node(v).action == "retrieve")
        success = float(ro.success[b])
        assert float(ro.reward[b]) == pytest.approx(success * max(0.0, 1.0 - 0.05 * k))
        checked += success == 1 and k > 0
    assert checked > 0  # some successes did pay for dead ends
    # the same draws without the penalty: identical rollouts, reward = success
    plain = rollout(SearchTask(documents=12, values=12, horizon=24), weights, task.tables(), 64, 8,
                    torch.Generator().manual_seed(1))
    assert torch.equal(plain.kind, ro.kind) and torch.equal(plain.reward, ro.success)


def test_longer_episodes_when_configured():
    zero = lambda t: torch.zeros(t.features, t.actions)  # noqa: E731  (the untrained policy)
    short, long = SearchTask(), SearchTask(documents=24, values=24, horizon=24)
    steps = {}
    for name, t in (("short", short), ("long", long)):
        ro = rollout(t, zero(t), t.tables(), 64, 8, torch.Generator().manual_seed(2))
        steps[name] = (ro.token_step >= 0).sum(1).float()
    assert steps["short"].max() <= 6
    assert steps["long"].max() > 12 and steps["long"].mean() > steps["short"].mean() + 2
    # through the config: the first iteration's rollouts are longer than the default horizon allows
    config = _long_tiny(run_budget=True)
    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams=experiment.STREAMS)
    out = sections.credit(config, ctx)
    first = [c.steps[0] for runs in out.runs.values() for c in runs]
    assert min(first) > 6


def test_train_advantages_read_the_penalised_reward_and_the_mask_the_outcome(monkeypatch):
    seen = {}
    real_rollout, real_adv, real_mask = search_task.rollout, search_task.grpo_advantages, \
        search_task.ggpo_mask_from_membership

    def spy_rollout(*a, **kw):
        seen["ro"] = real_rollout(*a, **kw)
        return seen["ro"]

    def spy_adv(rewards, **kw):
        seen["adv_in"] = rewards.clone()
        return real_adv(rewards, **kw)

    def spy_mask(on_path, valuable, rewards):
        seen["mask_in"] = rewards.clone()
        return real_mask(on_path, valuable, rewards)

    monkeypatch.setattr(search_task, "rollout", spy_rollout)
    monkeypatch.setattr(search_task, "grpo_advantages", spy_adv)
    monkeypatch.setattr(search_task, "ggpo_mask_from_membership", spy_mask)
    task = SearchTask(documents=12, values=12, horizon=24, redundant_penalty=0.2)
    for seed in range(20):  # a batch with a penalised success (reward strictly between 0 and 1)
        curve = train(task, "ggpo", iterations=1, questions=16, group=8, lr=0.05,
                      gen=torch.Generator().manual_seed(seed))
        ro = seen["ro"]
        if bool(((ro.reward > 0) & (ro.reward < 1)).any()):
            break
    else:
        pytest.fail("no penalised success in 20 batches")
    assert torch.equal(seen["adv_in"].flatten(), ro.reward)
    assert torch.equal(seen["mask_in"], ro.success)
    assert curve.success == [pytest.approx(float(ro.success.mean()))]
    assert curve.reward == [pytest.approx(float(ro.reward.mean()))] and curve.reward[0] < curve.success[0]


def test_run_without_budget_measures_b_and_the_penalised_checks():
    config = _long_tiny()
    assert (config.redundant_penalty, config.run_budget) == (0.05, False)  # the further run's defaults
    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams=experiment.STREAMS)
    out = experiment.run(config, ctx)
    ids = {c.id for c in out.checks}
    assert ids == {"ggpo_area_gain", "ggpo_renorm_area_gain", "ggpo_iterations_ratio", "ggpo_redundant_ratio",
                   "ggpo_return_gain", "ggpo_redundant_area_ratio"}
    assert "graph_modulated" not in out.metrics and "accuracy_vs_budget" not in out.curves
    assert {"ggpo_return", "ggpo_steps"} <= set(out.curves)
    g, r = out.metrics["ggpo_dropped"], out.metrics["grpo"]
    checks = {c.id: c for c in out.checks}
    assert checks["ggpo_return_gain"].value == pytest.approx(g["return_area_grid"] - r["return_area_grid"])
    assert checks["ggpo_redundant_area_ratio"].value == pytest.approx(
        g["redundant_area_grid"] / r["redundant_area_grid"])
    assert g["steps_start"] > 6  # longer than the default horizon allows
    # the penalised checks are declared for the further run alone, never for the committed quick setting
    for cid in ("ggpo_return_gain", "ggpo_redundant_area_ratio"):
        assert experiment.CHECKS[cid].settings == ("full",)


def test_default_run_has_no_penalised_checks_or_metrics():
    config = Config.tiny()
    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams=experiment.STREAMS)
    out = experiment.run(config, ctx)
    ids = [c.id for c in out.checks]
    assert "ggpo_return_gain" not in ids and "gain_vs_uniform_40" in ids
    assert "return_area_grid" not in out.metrics["grpo"] and "ggpo_return" not in out.curves


def test_long_config_leaves_the_committed_config_alone():
    # the committed quick run's config is compared field by field with every rerun: the neutral fields at
    # their defaults are not recorded; the further run's values are
    from icml26.papers.vimrag.long_run import long_config

    quick = config_to_dict(Config.quick())
    assert "redundant_penalty" not in quick and "run_budget" not in quick
    assert (Config.quick().redundant_penalty, Config.quick().run_budget) == (0.0, True)
    long = config_to_dict(long_config("quick"))
    assert {k: v for k, v in long.items() if k not in ("documents", "horizon", "redundant_penalty", "run_budget")} \
        == {k: v for k, v in quick.items() if k not in ("documents", "horizon")}
    assert (long["redundant_penalty"], long["run_budget"]) == (0.05, False)
    with pytest.raises(ValueError, match="redundant_penalty"):
        long_config("quick", {"redundant_penalty": "-1"})
    with pytest.raises(ValueError, match="penalty"):
        long_config("quick", {"penalty": "0.1"})


def test_long_run_driver_keeps_only_the_measured_checks(tmp_path):
    from icml26.papers.vimrag import long_run

    assert long_run.OVERRIDES["run_budget"] == "false" and float(long_run.OVERRIDES["redundant_penalty"]) > 0
    assert long_run.long_config("quick", {"redundant_penalty": "0.1"}).redundant_penalty == 0.1
    path = long_run.main(["--out", str(tmp_path), "--seeds", "0", "--setting", "tiny"])
    data = json.loads(path.read_text())
    ids = [c["id"] for c in data["claim"]["checks"]]
    assert ids == ["ggpo_area_gain", "ggpo_renorm_area_gain", "ggpo_iterations_ratio", "ggpo_redundant_ratio",
                   "ggpo_return_gain", "ggpo_redundant_area_ratio"]
    assert data["config"]["horizon"] == 24 and data["config"]["redundant_penalty"] == 0.05
    assert any("gain_vs_uniform_40" in n for n in data["notes"])  # the note names what was left out
    seed = json.loads((tmp_path / "vimrag" / "seeds" / "0" / "result.json").read_text())
    assert [c["id"] for c in seed["claim"]["checks"]] == ids
