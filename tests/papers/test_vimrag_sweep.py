"""VimRAG (A)'s sweeps: the ``structure`` knob between the control and the main generator, and the gains
the sweep reports (hand-worked accuracies)."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.vimrag import experiment
from icml26.papers.vimrag.digits_task import sample_episode


def _last_is_pivotal(ep) -> bool:
    last = max(ep.graph.nodes(), key=lambda v: ep.graph.node(v).step)
    return bool(any(ep.pivotal[k] for k, (v, _, _) in enumerate(ep.graph.items()) if v == last))


def _share_last_pivotal(n: int = 1500, **kw) -> float:
    rng = np.random.default_rng(11)
    return float(np.mean([_last_is_pivotal(sample_episode(rng, 100, **kw)) for _ in range(n)]))


def test_structure_knob_spans_control_to_main_generator():
    main, control = _share_last_pivotal(structured=True), _share_last_pivotal(structured=False)
    assert main == 1.0 and 0.2 < control < 0.45  # 2-3 pivotal of 6-10 steps end the control by chance
    assert _share_last_pivotal(structure=1.0) == 1.0
    assert _share_last_pivotal(structure=0.0) == pytest.approx(control, abs=0.04)
    # half the episodes end on a pivotal retrieval by construction, the other half by chance
    assert _share_last_pivotal(structure=0.5) == pytest.approx(0.5 + 0.5 * control, abs=0.04)
    # at full structure (and no dead-end chains) every dead end hangs on the root or a pivotal node
    rng = np.random.default_rng(2)
    for _ in range(50):
        ep = sample_episode(rng, 100, structure=1.0, dead_follow=0.0)
        piv_nodes = {v for k, (v, _, _) in enumerate(ep.graph.items()) if ep.pivotal[k]}
        for v in ep.graph.nodes():
            if v != ep.graph.root and v not in piv_nodes:
                assert set(ep.graph.parents(v)) <= piv_nodes | {ep.graph.root}
    with pytest.raises(ValueError, match="structure"):
        sample_episode(rng, 100, structure=1.5)


def test_sweep_gains_by_hand():
    class Fake:
        sweep = {"noise": {0.5: {"graph_modulated": 0.7, "priority_only": 0.65, "uniform": 0.5},
                           2.0: {"graph_modulated": 0.6, "priority_only": 0.45, "uniform": 0.55}},
                 "structure": {0.0: {"graph_modulated": 0.6, "priority_only": 0.58, "uniform": 0.6}}}

    gains = experiment._sweep_gains(Fake())
    assert gains["noise"]["priority_only"] == pytest.approx({0.5: 5.0, 2.0: 15.0})
    assert gains["noise"]["uniform"] == pytest.approx({0.5: 20.0, 2.0: 5.0})
    assert gains["structure"]["priority_only"][0.0] == pytest.approx(2.0)
    assert gains["structure"]["uniform"][0.0] == pytest.approx(0.0, abs=1e-9)
