"""LMCleaner's online unlearner and its baselines: deletion during training equals replay, noise and
the ledger, shared signatures and cost accounting, Lanczos and the Hessian basis, the pluggable remover.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml26.papers.lmcleaner import BASELINES, ReplayRemover, TruncatedRemover
from icml26.papers.lmcleaner import (
    RDPAccountant,
    DataPool,
    ExactHVP,
    NoiseSpec,
    OnlineUnlearner,
    SupervisedProblem,
    TrajectoryRecorder,
    gradient_ascent_unlearn,
    lanczos_top_eigenvectors,
    lmcleaner_unlearn,
    make_hvp,
    neggrad_plus_unlearn,
    no_op,
    random_basis,
    replay_counterfactual,
    retrain_from_scratch,
)
from tests.papers._lmcleaner_helpers import DT, _least_squares, _replay, _single_pass, _train


# torch's forward-mode AD loads its decompositions through torch.jit once per process
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------
# online unlearner and baselines
# ---------------------------------------------------------------------------
def test_online_unlearner_on_least_squares_is_exact_and_requeues():
    """Deletion during training: the served model equals replay without the affected batches,
    and the benign samples of the removed batches are learned again, once."""
    problem = _least_squares(n=200, l2=0.01)
    model = problem.model
    opt = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=problem.l2)
    rec = TrajectoryRecorder(model, opt)
    pool = DataPool(torch.arange(200), 10, epochs=1, generator=torch.Generator().manual_seed(0))
    unlearner = OnlineUnlearner(problem, rec, hvp=ExactHVP(problem), window=1000, pool=pool)
    served_ids, step = [], 0
    while (ids := pool.next_batch()) is not None:
        if step == 15:
            forget = torch.cat([rec.batch_ids(2)[:2], rec.batch_ids(9)[:1]])
            unlearner.request(forget)
            (served,) = unlearner.serve()
        with rec.step(ids):
            loss = problem.loss(model(problem.inputs[ids]), problem.targets[ids]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        served_ids.append(ids)
        step += 1
    assert served.deleted_steps == (2, 9) and served.windows == (12, 5) and served.now_step == 15
    # replay the first 15 steps without the deleted batches; step 15 of the recorder is the edit
    expected = _replay(problem, rec, {2, 9}, 15)
    assert rec.steps[15].kind == "edit"
    assert torch.allclose(rec.params_at(16), expected, atol=1e-10, rtol=0)
    # the 17 benign samples come back exactly once after τ; the forgotten ones never do
    benign = torch.cat([rec.batch_ids(2), rec.batch_ids(9)])
    benign = benign[~torch.isin(benign, forget)]
    assert sorted(served.requeued.tolist()) == sorted(benign.tolist())
    later = torch.cat(served_ids[15:])
    assert not torch.isin(forget, later).any()
    assert int(torch.isin(later, benign).sum()) == benign.numel() == 17
    assert step == 20 + 2   # 20 batches, then 17 requeued samples fill two more


def test_online_unlearner_noise_and_ledger():
    problem = _least_squares(n=100)
    model = problem.model
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    rec = TrajectoryRecorder(model, opt)
    basis = random_basis(problem.num_params, 3, dtype=DT)
    spec = NoiseSpec(sensitivity=0.05, epsilon=1.0, delta=1e-5, basis=basis, beta=0.5)
    unlearner = OnlineUnlearner(problem, rec, hvp=ExactHVP(problem), window=5, noise=spec,
                                generator=torch.Generator().manual_seed(0))
    for ids in _single_pass(100, 10):
        with rec.step(ids):
            opt.zero_grad()
            problem.loss(model(problem.inputs[ids]), problem.targets[ids]).mean().backward()
            opt.step()
    eps = []
    for request in ([1], [15], [33]):
        unlearner.request(request)
        (served,) = unlearner.serve()
        eps.append(served.epsilon_spent)
        assert served.certificate is not None and served.certificate.epsilon == 1.0
    assert eps[0] < eps[1] < eps[2]
    mu = spec.epsilon / math.sqrt(4 * math.log(2.5 / spec.delta))
    check = RDPAccountant()
    check.add_gaussian(mu, count=3)
    assert eps[2] == pytest.approx(check.epsilon(spec.delta)[0], rel=1e-9)
    assert unlearner.accountant.exact_epsilon(spec.delta) < eps[2]


def test_baselines_share_a_signature_and_cost_accounting():
    problem = _least_squares(n=200, l2=0.01)
    rec = _train(problem, _single_pass(200, 10))
    theta, now, forget = rec.current_params(), rec.num_steps, torch.arange(40, 50)   # batch of step 4
    results = {
        "lmcleaner": lmcleaner_unlearn(problem, rec, theta, forget, now, window=3, hvp=ExactHVP(problem)),
        "replay": replay_counterfactual(problem, rec, theta, forget, now),
        "retrain": retrain_from_scratch(problem, rec, theta, forget, now),
        "ga": gradient_ascent_unlearn(problem, rec, theta, forget, now, steps=6, lr=0.05),
        "neggrad": neggrad_plus_unlearn(problem, rec, theta, forget, now, steps=3, lr=0.05),
        "noop": no_op(problem, rec, theta, forget, now),
    }
    assert results["lmcleaner"].grad_equivalents == 6.0 and results["lmcleaner"].deleted_steps == (4,)
    assert results["replay"].grad_equivalents == now - 4 - 1
    assert results["retrain"].grad_equivalents == now - 1
    assert results["ga"].grad_equivalents == 6.0 and results["neggrad"].grad_equivalents == 6.0
    assert torch.equal(results["noop"].params, theta)
    # a larger window moves LMCleaner toward the exact answer on this quadratic
    err3 = (results["lmcleaner"].params - results["replay"].params).norm()
    full = lmcleaner_unlearn(problem, rec, theta, forget, now, window=now, hvp=ExactHVP(problem))
    assert (full.params - results["replay"].params).norm() < 1e-10 < err3
    with pytest.raises(ValueError, match="nothing to delete"):
        lmcleaner_unlearn(problem, rec, theta, [10_000], now, window=3, hvp=ExactHVP(problem))


def test_lanczos_matches_eigh():
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(30, 30, generator=gen, dtype=DT)
    a = a @ a.T + torch.diag(torch.linspace(0, 50, 30, dtype=DT))
    values, vectors = lanczos_top_eigenvectors(lambda v: a @ v, 30, 4, num_iters=30)
    exact_values, exact_vectors = torch.linalg.eigh(a)
    assert torch.allclose(values, exact_values.flip(0)[:4], rtol=1e-9)
    overlap = (vectors.T @ exact_vectors.flip(1)[:, :4]).abs()
    assert torch.allclose(overlap.diagonal(), torch.ones(4, dtype=DT), atol=1e-8)


def test_hessian_basis_on_least_squares():
    """The Lanczos basis spans the top eigenvectors of the explicit Hessian XᵀX/n ⊗ I + λI."""
    from icml26.papers.lmcleaner import hessian_basis

    problem = _least_squares(n=80, d=5, k=1, l2=0.1)
    ids = torch.arange(80)
    q = hessian_basis(problem, problem.flat_params(), ids, 2)
    xa = torch.cat([problem.inputs, torch.ones(80, 1, dtype=DT)], 1)
    _, vectors = torch.linalg.eigh(xa.T @ xa / 80 + 0.1 * torch.eye(6, dtype=DT))
    top = vectors[:, -2:]
    assert torch.allclose(top @ top.T, q @ q.T, atol=1e-8)      # same projector


def test_online_unlearner_mid_training_request_counts():
    """The README's scenario with numbers checked: train, record, delete mid-training, requeue."""
    torch.manual_seed(0)
    x, y = torch.randn(1000, 20), torch.randint(0, 10, (1000,))
    model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 10))
    problem = SupervisedProblem(model, lambda out, t: F.cross_entropy(out, t, reduction="none"), x, y, l2=1e-4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-4)
    recorder = TrajectoryRecorder(model, optimizer)
    pool = DataPool(torch.arange(1000), batch_size=20, epochs=1, generator=torch.Generator().manual_seed(0))
    unlearner = OnlineUnlearner(problem, recorder, hvp=make_hvp(problem, "exact"), window=10, pool=pool)
    step = 0
    while (ids := pool.next_batch()) is not None:
        if step == 30:
            unlearner.request([int(recorder.batch_ids(20)[0])])   # delete a sample seen at step 20
            served = unlearner.serve()
        with recorder.step(ids):
            loss = F.cross_entropy(model(x[ids]), y[ids])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        step += 1
    assert served[0].deleted_steps == (20,) and served[0].windows == (9,) and served[0].hvp_calls == 9
    assert served[0].requeued.numel() == 19
    assert recorder.steps[20].removed and recorder.steps[30].kind == "edit"
    assert step == 50 + 1   # 50 batches plus one of the 19 requeued samples


# ---------------------------------------------------------------------------
# issues #17 / #18: the pluggable remover, renames, checked input
# ---------------------------------------------------------------------------
def test_replay_remover_serves_the_exact_counterfactual_with_the_same_bookkeeping():
    """Two code paths, one answer: OnlineUnlearner with ReplayRemover equals replay_counterfactual,
    and with TruncatedRemover (K ≥ L − 1, least squares) the same θ again."""
    results = {}
    for name in ("replay", "truncated"):
        problem = _least_squares(l2=0.01)
        rec = _train(problem, _single_pass(120, 10))
        pool = DataPool(torch.arange(120), 10, generator=torch.Generator().manual_seed(0))
        remover = ReplayRemover(problem) if name == "replay" else TruncatedRemover(ExactHVP(problem), 100)
        unlearner = OnlineUnlearner(problem, rec, remover=remover, pool=pool)
        theta_before = rec.current_params()
        expected = replay_counterfactual(problem, rec, theta_before, [35, 71], rec.num_steps)
        unlearner.request([35, 71])
        served = unlearner.serve()[0]
        assert served.deleted_steps == (3, 7)
        assert served.requeued.numel() == 18                 # the other samples of the two batches
        assert rec.steps[3].removed and rec.steps[7].removed and rec.steps[-1].kind == "edit"
        assert torch.allclose(rec.current_params(), expected.params, atol=1e-10, rtol=0)
        results[name] = served
    # replay runs from t_z = 3 to τ = 12: 9 steps, 2 of them deleted → 7 gradients
    assert results["replay"].grad_equivalents == 7
    assert results["replay"].hvp_calls == 0 and results["truncated"].hvp_calls > 0


def test_baselines_table_names_the_procedures():
    assert BASELINES["gradient_ascent"] is gradient_ascent_unlearn
    assert BASELINES["neggrad_plus"] is neggrad_plus_unlearn
    assert set(BASELINES) == {"retrain", "replay", "gradient_ascent", "neggrad_plus", "no_op"}


def test_negative_ids_no_longer_wrap_around():
    problem = _least_squares()
    with pytest.raises(ValueError, match="sample ids"):
        problem.batch(torch.tensor([-1]))
    rec = _train(problem, _single_pass(40, 10))
    with pytest.raises(ValueError, match="negative id"):
        rec.steps_using([-1])
