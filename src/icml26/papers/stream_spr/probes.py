"""stream_spr's tiny modules for the module matrix and its hostile-input probes."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from icml26.common.extras import extra_installed
from icml26.contract import ModuleCase, Probe
from icml26.papers.stream_spr import (
    LR_PRESETS,
    AdaptiveObGD,
    LayerNorm,
    LearningRates,
    ObGD,
    OrthogonalMomentum,
    RewardScaler,
    SPRHead,
    SPRWindow,
    StreamAC,
    StreamNetwork,
    StreamQ,
    StreamQSPR,
    StreamSarsa,
    TraceSGD,
    TransitionModel,
    WelfordStats,
    build_network,
    cosine,
    make_atari,
    effective_rank,
    erank,
    init_streaming_,
    project_out,
    q_lambda_update,
    sparse_init_,
    spr_loss,
    srank,
)
from icml26.papers.stream_spr.networks import Encoder


class _SPRWithEncoder(nn.Module):
    """An SPRHead with the online encoder it is called with, so the matrix can cast both."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.encoder = Encoder((8,), width=16)
        self.head = SPRHead(self.encoder, self.encoder.latent_shape, 3, projection_dim=8, generator=g)

    def forward(self, observations: torch.Tensor, actions: torch.Tensor):
        return self.head(self.encoder, observations, actions)


def _env():
    import gymnasium as gym

    return gym.make("CartPole-v1")


def _orth_after_nan() -> tuple:
    orth = OrthogonalMomentum(0.9)
    orth(torch.ones(3))
    kept = orth.momentum[0].clone()
    u = orth(torch.tensor([math.nan, 1.0, 1.0]))
    after = orth.momentum[0].clone()
    return u, kept, after, orth.skipped, orth(torch.tensor([0.0, 2.0, 0.0]))


def _orth_after_overflow() -> tuple:
    orth = OrthogonalMomentum(0.9)
    orth(torch.tensor([1e30, 1e30, 0.0]))
    before = orth.momentum[0].clone()
    u = orth(torch.tensor([1e30, 0.0, 1e30]))
    return u, before, orth.skipped


def _linear_with_grad() -> nn.Linear:
    layer = nn.Linear(3, 1)
    layer(torch.ones(1, 3)).sum().backward()
    return layer


MODULES = [
    ModuleCase("StreamNetwork", build=lambda: build_network((6,), 3, hidden=16),
               inputs=lambda g: (torch.randn(2, 6, generator=g),)),
    # no parameters: the input requires grad so that the matrix's backward pass has a graph
    ModuleCase("LayerNorm", build=LayerNorm, inputs=lambda g: (torch.randn(2, 5, generator=g).requires_grad_(),)),
    ModuleCase("TransitionModel", build=lambda: TransitionModel((8,), 3),
               inputs=lambda g: (torch.randn(2, 8, generator=g), torch.tensor([0, 2]))),
    # target encoder and target projection are EMA copies: no gradient by design (requires_grad=False)
    ModuleCase("SPRHead", build=_SPRWithEncoder,
               inputs=lambda g: (torch.randn(3, 8, generator=g), torch.tensor([1, 2]))),
]

HOSTILE = [
    # orth and orth² (one non-finite gradient must not poison the momentum)
    Probe("OrthogonalMomentum skips a NaN gradient and keeps its momentum", _orth_after_nan,
          returns=lambda r: bool((r[0] == 0).all()) and torch.equal(r[1], r[2]) and r[3] == 1
          and bool(torch.isfinite(r[4]).all()),
          doc="a non-finite gradient gives a zero update, c unchanged, counted in skipped; later steps are finite"),
    Probe("OrthogonalMomentum on gradients whose ⟨g, c⟩ overflows float32", _orth_after_overflow,
          returns=lambda r: bool(torch.isfinite(r[0]).all()) and bool(torch.isfinite(r[1]).all()) and r[2] == 0
          and abs(float(r[0].double() @ r[1].double())) <= 1e-6 * float(r[0].double().norm() * r[1].double().norm()),
          doc="entries of 1e30 are projected exactly on rescaled vectors (u ⟂ c, c finite), not turned into NaN"),
    Probe("OrthogonalMomentum beta=1", lambda: OrthogonalMomentum(1.0), match="beta"),
    Probe("OrthogonalMomentum eps=-1", lambda: OrthogonalMomentum(eps=-1.0), match="eps"),
    Probe("OrthogonalMomentum momentum_source='x'", lambda: OrthogonalMomentum(momentum_source="x"),
          match="momentum_source"),
    Probe("OrthogonalMomentum on changed shapes", lambda: (lambda o: (o(torch.ones(2)), o(torch.ones(3))))(
        OrthogonalMomentum()), match="shapes"),
    Probe("OrthogonalMomentum on integers", lambda: OrthogonalMomentum()(torch.ones(2, dtype=torch.int64)),
          raises=TypeError, match="floating"),
    Probe("OrthogonalMomentum.project_grads_ without gradients",
          lambda: OrthogonalMomentum().project_grads_(nn.Linear(2, 2).parameters()), match="backward"),
    Probe("project_out with mismatched shapes", lambda: project_out(torch.ones(2), torch.ones(3)), match="shapes"),
    Probe("project_out eps=-1", lambda: project_out(torch.ones(2), torch.ones(2), -1.0), match="eps"),
    Probe("project_out of a string", lambda: project_out("s", torch.ones(2)), raises=TypeError, match="tensor"),
    Probe("project_out NaN in, NaN out", lambda: project_out(torch.tensor([math.nan, 1.0]), torch.ones(2)),
          returns=lambda v: bool(torch.isnan(v).any()), doc="NaN propagates (the momentum is what is guarded)"),
    Probe("cosine of different lengths", lambda: cosine([torch.ones(2)], [torch.ones(2)] * 2), match="tensors"),
    Probe("cosine NaN in, NaN out", lambda: cosine(torch.tensor([math.nan, 1.0]), torch.ones(2)),
          returns=lambda v: math.isnan(v), doc="NaN in, NaN out"),
    # optimizers
    Probe("ObGD lr=nan", lambda: ObGD(nn.Linear(3, 1).parameters(), lr=math.nan), match="lr"),
    Probe("ObGD kappa=-1", lambda: ObGD(nn.Linear(3, 1).parameters(), kappa=-1.0), match="kappa"),
    Probe("ObGD gamma=2", lambda: ObGD(nn.Linear(3, 1).parameters(), gamma=2.0), match="gamma"),
    Probe("ObGD step with a NaN TD error", lambda: ObGD(_linear_with_grad().parameters()).step(math.nan),
          match="td_error"),
    Probe("ObGD step before backward", lambda: ObGD(nn.Linear(3, 1).parameters()).step(1.0), match="backward"),
    Probe("ObGD of no parameters", lambda: ObGD([]), match="empty"),
    Probe("AdaptiveObGD beta2=1", lambda: AdaptiveObGD(nn.Linear(3, 1).parameters(), beta2=1.0), match="beta2"),
    Probe("TraceSGD lr=-1", lambda: TraceSGD(nn.Linear(3, 1).parameters(), lr=-1.0), match="lr"),
    Probe("q_lambda_update gamma=2", lambda: (lambda n: q_lambda_update(ObGD(n.parameters()), n(torch.zeros(1, 6))[0, 0],
                                                                        0.0, 1.0, gamma=2.0, terminated=False,
                                                                        reset=False))(build_network((6,), 2)),
          match="gamma"),
    # networks
    Probe("sparse_init_ of a vector", lambda: sparse_init_(torch.zeros(3)), match="weight"),
    Probe("sparse_init_ sparsity=nan", lambda: sparse_init_(torch.zeros(3, 3), math.nan), match="sparsity"),
    Probe("init_streaming_ of a string", lambda: init_streaming_("net"), raises=TypeError, match="module"),
    Probe("build_network hidden=0", lambda: build_network((6,), 2, hidden=0), match="hidden"),
    Probe("build_network obs_shape=(4.5,)", lambda: build_network((4.5,), 2), raises=TypeError, match="obs_shape"),
    Probe("build_network of a 2-D observation", lambda: build_network((2, 2), 2), match="observations"),
    Probe("build_network outputs=0", lambda: build_network((6,), 0), match="outputs"),
    Probe("StreamNetwork forward on the wrong observation shape", lambda: build_network((6,), 2)(torch.zeros(2, 5)),
          match="obs must be"),
    Probe("StreamNetwork head_activation='tanh'",
          lambda: StreamNetwork(Encoder((6,)), 2, head_activation="tanh"), match="head_activation"),
    Probe("LayerNorm: NaN in a row makes that row NaN",
          lambda: LayerNorm()(torch.tensor([[math.nan, 1.0], [1.0, 2.0]])),
          returns=lambda v: bool(torch.isnan(v[0]).all()) and bool(torch.isfinite(v[1]).all()),
          doc="NaN stays in its row, as in torch's layer_norm"),
    # normalizers
    Probe("WelfordStats update with NaN (would poison the statistics)",
          lambda: WelfordStats((2,)).update(np.array([math.nan, 1.0])), match="NaN"),
    Probe("WelfordStats update of the wrong shape", lambda: WelfordStats((2,)).update(np.zeros(3)), match="shape"),
    Probe("WelfordStats shape=(-1,)", lambda: WelfordStats((-1,)), match="shape"),
    Probe("WelfordStats normalize epsilon=-1", lambda: WelfordStats((2,)).normalize(np.zeros(2), -1.0),
          match="epsilon"),
    Probe("RewardScaler NaN reward (would poison the statistics)", lambda: RewardScaler().scale(math.nan, False),
          match="reward"),
    Probe("RewardScaler gamma=nan", lambda: RewardScaler(math.nan), match="gamma"),
    Probe("RewardScaler epsilon=-1", lambda: RewardScaler(epsilon=-1.0), match="epsilon"),
    # rank
    Probe("effective_rank of NaN features", lambda: effective_rank(torch.full((3, 3), math.nan)), match="NaN"),
    Probe("effective_rank of zeros", lambda: effective_rank(torch.zeros(3, 3)), match="zero"),
    Probe("effective_rank of a vector", lambda: effective_rank(torch.zeros(3)), match="features"),
    Probe("effective_rank of no states", lambda: effective_rank(torch.zeros(0, 3)), match="empty"),
    Probe("srank delta=1", lambda: srank([1.0, 2.0], 1.0), match="delta"),
    Probe("erank of a negative singular value", lambda: erank([-1.0, 2.0]), match="non-negative"),
    # SPR
    Probe("spr_loss of mismatched shapes", lambda: spr_loss(torch.zeros(2, 3), torch.zeros(2, 4)), match="(K, D)"),
    Probe("spr_loss NaN in, NaN out", lambda: spr_loss(torch.full((2, 3), math.nan), torch.ones(2, 3)),
          returns=lambda v: bool(torch.isnan(v)), doc="NaN propagates into the loss"),
    Probe("TransitionModel n_actions=0", lambda: TransitionModel((4,), 0), match="n_actions"),
    Probe("TransitionModel of a 2-D latent", lambda: TransitionModel((4, 4), 2), match="latents"),
    Probe("TransitionModel action out of range", lambda: TransitionModel((4,), 2)(torch.zeros(1, 4), torch.tensor([5])),
          match="actions"),
    Probe("TransitionModel float actions", lambda: TransitionModel((4,), 2)(torch.zeros(1, 4), torch.tensor([0.5])),
          raises=TypeError, match="actions"),
    Probe("SPRHead projection_dim=0", lambda: SPRHead(Encoder((4,)), (128,), 2, projection_dim=0),
          match="projection_dim"),
    Probe("SPRHead target_init='zeros'", lambda: SPRHead(Encoder((4,)), (128,), 2, target_init="zeros"),
          match="target_init"),
    Probe("SPRHead window of the wrong length",
          lambda: (lambda m: m(torch.zeros(3, 8), torch.tensor([0])))(_SPRWithEncoder()), match="K\\+1"),
    Probe("SPRHead update_targets tau=nan",
          lambda: (lambda m: m.head.update_targets(m.encoder, math.nan))(_SPRWithEncoder()), match="tau"),
    Probe("SPRWindow depth=1.5", lambda: SPRWindow(1.5), raises=TypeError, match="depth"),
    Probe("SPRWindow alignment='x'", lambda: SPRWindow(2, "x"), match="alignment"),
    Probe("SPRWindow batch before it is full", lambda: SPRWindow(2).batch(), match="window holds"),
    Probe("SPRWindow push action=-1", lambda: SPRWindow(2).push(torch.zeros(3), -1), match="action"),
    Probe("LearningRates rl=nan", lambda: LearningRates(rl=math.nan, spr=1e-4), match="rl"),
    Probe("LearningRates spr=-1", lambda: LearningRates(rl=1.0, spr=-1.0), match="spr"),
    Probe("LR_PRESETS are the documented two", lambda: sorted(LR_PRESETS), returns=lambda v: v == ["elsayed", "official"],
          doc="official (stream-rep-rl) and elsayed presets"),
    # agents (a gymnasium CartPole stands in for any environment)
    Probe("StreamQ on a string", lambda: StreamQ("CartPole-v1"), raises=TypeError, match="env"),
    Probe("StreamQ on continuous actions", lambda: StreamQ(__import__("gymnasium").make("Pendulum-v1")),
          match="Discrete"),
    Probe("StreamQ epsilon_start=2", lambda: StreamQ(_env(), epsilon_start=2.0), match="epsilon"),
    Probe("StreamQ exploration_steps=0", lambda: StreamQ(_env(), exploration_steps=0), match="exploration_steps"),
    Probe("StreamQ seed=-1", lambda: StreamQ(_env(), seed=-1), match="seed"),
    Probe("StreamQ.learn(1.5)", lambda: StreamQ(_env()).learn(1.5), raises=TypeError, match="total_steps"),
    Probe("StreamQ.learn(-5)", lambda: StreamQ(_env()).learn(-5), match="total_steps"),
    Probe("StreamSarsa gamma=2", lambda: StreamSarsa(_env(), gamma=2.0), match="gamma"),
    Probe("StreamAC entropy_coeff=nan", lambda: StreamAC(_env(), entropy_coeff=math.nan), match="entropy_coeff"),
    Probe("StreamAC kappa_policy=-1", lambda: StreamAC(_env(), kappa_policy=-1.0), match="kappa"),
    Probe("StreamQSPR spr_weight=nan", lambda: StreamQSPR(_env(), spr_weight=math.nan), match="spr_weight"),
    Probe("StreamQSPR spr_tau=2", lambda: StreamQSPR(_env(), spr_tau=2.0), match="spr_tau"),
    Probe("StreamQSPR spr_depth=0", lambda: StreamQSPR(_env(), spr_depth=0), match="depth"),
    Probe("StreamQSPR lr_preset='x'", lambda: StreamQSPR(_env(), lr_preset="x"), match="lr_preset"),
    Probe("StreamQSPR projection_dim=0", lambda: StreamQSPR(_env(), projection_dim=0), match="projection_dim"),
    # gymnasium wrappers
    Probe("make_minatar of an unknown game", lambda: __import__("icml26.papers.stream_spr",
                                                                fromlist=["make_minatar"]).make_minatar("pong"),
          match="pong"),
    Probe("make_minatar sticky_action_prob=2", lambda: __import__(
        "icml26.papers.stream_spr", fromlist=["make_minatar"]).make_minatar("breakout", sticky_action_prob=2.0),
          match="sticky_action_prob"),
    Probe("stream_wrappers gamma=nan", lambda: __import__(
        "icml26.papers.stream_spr", fromlist=["stream_wrappers"]).stream_wrappers(_env(), math.nan), match="gamma"),
    Probe("RunningNorm epsilon=-1", lambda: __import__(
        "icml26.papers.stream_spr", fromlist=["RunningNorm"]).RunningNorm(_env(), -1.0), match="epsilon"),
    Probe("ScaleReward gamma=2", lambda: __import__(
        "icml26.papers.stream_spr", fromlist=["ScaleReward"]).ScaleReward(_env(), 2.0), match="gamma"),
    Probe("find_wrapper kind='x'", lambda: __import__(
        "icml26.papers.stream_spr", fromlist=["find_wrapper"]).find_wrapper(_env(), "x"), raises=TypeError,
          match="kind"),
    # Atari (the argument checks run before the extra is imported, so these need no ROMs)
    Probe("make_atari frame_skip=0", lambda: make_atari("breakout", frame_skip=0), match="frame_skip"),
    Probe("make_atari frame_skip=2.5", lambda: make_atari("breakout", frame_skip=2.5), raises=TypeError,
          match="frame_skip"),
    Probe("make_atari noop_max=-1", lambda: make_atari("breakout", noop_max=-1), match="noop_max"),
    Probe("make_atari stack=0", lambda: make_atari("breakout", stack=0), match="stack"),
    Probe("make_atari screen_size=4", lambda: make_atari("breakout", screen_size=4), match="screen_size"),
    Probe("make_atari sticky_action_prob=1.5", lambda: make_atari("breakout", sticky_action_prob=1.5),
          match="sticky_action_prob"),
    Probe("make_atari gamma=nan", lambda: make_atari("breakout", gamma=math.nan), match="gamma"),
    Probe("make_atari seed=-1", lambda: make_atari("breakout", seed=-1), match="seed"),
    Probe("make_atari of a number", lambda: make_atari(3), raises=TypeError, match="game"),
    Probe("build_network architecture='x'", lambda: build_network((4, 84, 84), 2, architecture="x"),
          match="architecture"),
    Probe("build_network architecture='atari' on vectors", lambda: build_network((6,), 2, architecture="atari"),
          match="architecture"),
    Probe("build_network architecture='atari' on 20x20 frames",
          lambda: build_network((4, 20, 20), 2, architecture="atari"), match="36x36"),
    Probe("StreamQSPR architecture='x'", lambda: StreamQSPR(_env(), architecture="x"), match="architecture"),
]
if extra_installed("atari"):
    HOSTILE += [
        Probe("make_atari of an unknown game", lambda: make_atari("pongg"), match="game"),
        Probe("make_atari of a gym id instead of a ROM id", lambda: make_atari("ALE/Pong-v5"), match="game"),
    ]


# ---------------------------------------------------------------------------
# the hostile-input walk (tests/test_hostile_walk.py)
# ---------------------------------------------------------------------------
def _wrappers(name: str):
    """A gymnasium wrapper export, imported on use (the ``rl`` extra)."""
    return getattr(__import__("icml26.papers.stream_spr", fromlist=[name]), name)


def _q_update_call() -> tuple:
    net = build_network((6,), 2, hidden=8)
    return ((ObGD(net.parameters()), net(torch.zeros(1, 6))[0, 0], 0.5, 1.0),
            {"gamma": 0.9, "terminated": False, "reset": False})


_AGENT = dict(lr=0.5, gamma=0.9, lamda=0.8, epsilon_start=1.0, epsilon_end=0.1, exploration_steps=100, seed=1)

VALID = {
    "AdaptiveObGD": lambda: ((nn.Linear(3, 1).parameters(),), {"lr": 0.5, "beta2": 0.99, "eps": 1e-8}),
    "LearningRates": lambda: ((), {"rl": 1.0, "spr": 1e-4}),
    "ObGD": lambda: ((nn.Linear(3, 1).parameters(),), {"lr": 0.5}),
    "SPRHead": lambda: ((Encoder((8,), width=16), (16,), 3),
                        {"projection_dim": 8, "transition_hidden": 4, "sparsity": 0.9}),
    "SPRWindow": lambda: ((2,), {}),
    "StreamAC": lambda: ((_env(),), dict(lr=0.5, gamma=0.9, lamda=0.8, seed=1)),
    "StreamNetwork": lambda: ((Encoder((6,), width=8), 3), {"hidden": 8}),
    "StreamQ": lambda: ((_env(),), _AGENT),
    "StreamQSPR": lambda: ((_env(),), {**_AGENT, "spr_lr": 1e-4, "spr_depth": 2, "projection_dim": 8,
                                       "projection_eps": 1e-8}),
    "StreamSarsa": lambda: ((_env(),), _AGENT),
    "TraceSGD": lambda: ((nn.Linear(3, 1).parameters(),), {}),
    "TransitionModel": lambda: (((8,), 3), {"hidden": 4}),
    "build_network": lambda: (((6,), 3), {"hidden": 8, "channels": 4}),
    "cosine": lambda: ((torch.tensor([1.0, 2.0]), torch.tensor([2.0, 1.0])), {}),
    "effective_rank": lambda: ((torch.randn(4, 3),), {"delta": 0.01}),
    "erank": lambda: ((np.array([3.0, 2.0, 1.0]),), {}),
    "init_streaming_": lambda: ((nn.Linear(3, 2),), {"sparsity": 0.5}),
    "project_out": lambda: ((torch.tensor([1.0, 2.0]), torch.tensor([2.0, 1.0])), {"eps": 1e-8}),
    "q_lambda_update": _q_update_call,
    "sparse_init_": lambda: ((torch.zeros(3, 4),), {"sparsity": 0.5}),
    "spr_loss": lambda: ((torch.randn(2, 3), torch.randn(2, 3)), {}),
    "srank": lambda: ((np.array([3.0, 2.0, 1.0]),), {"delta": 0.01}),
    "RunningNorm": lambda: ((_env(),), {}),
    "ScaleReward": lambda: ((_env(),), {}),
    "find_wrapper": lambda: ((_wrappers("stream_wrappers")(_env()), _wrappers("RunningNorm")), {}),
    "make_minatar": lambda: (("breakout",), {}),
    **({"make_atari": lambda: (("pong",), {"seed": 1, "frame_skip": 4, "noop_max": 2, "screen_size": 84,
                                           "stack": 2, "sticky_action_prob": 0.0, "gamma": 0.99})}
       if extra_installed("atari") else {}),
    "stream_wrappers": lambda: ((_env(),), {}),
}

NOT_WALKED = {
    **({} if extra_installed("atari") else {
        "make_atari": "needs the atari extra (ale-py ROMs), not installed here; its argument checks run before "
                      "the extra is imported and are HOSTILE probes ('make_atari frame_skip=0' ...)"}),
    "EffectiveRank": "a plain record (srank, erank, delta) that effective_rank fills; effective_rank, srank and "
                     "erank are walked",
    "LearnLog": "a plain record of episodes, steps and wall time that the agents' learn() fills; learn_loop checks "
                "total_steps (HOSTILE 'StreamQ.learn(1.5)', 'StreamQ.learn(-5)')",
    "ObGDStep": "a plain record of what one optimizer step did (step size, bound, TD error); the optimizers that "
                "fill it are walked and their step() refuses a non-finite td_error (HOSTILE 'ObGD step with a "
                "NaN TD error')",
    "SPROutput": "a plain record (loss, predictions, targets) that SPRHead.forward fills; SPRHead and spr_loss "
                 "are walked",
    "StepInfo": "a plain record of one environment step that the agents' step() fills; the agents are walked",
}

ALLOWED = {
    "cosine.a:nan": "NaN in, NaN out by documented design (HOSTILE 'cosine NaN in, NaN out'): a diagnostic "
                    "computed on the SPR agent's hot path, where a finiteness check would cost a sync per step",
    "cosine.b:nan": "as cosine.a: NaN in, NaN out by documented design",
    "project_out.update:nan": "NaN propagates by documented design (HOSTILE 'project_out NaN in, NaN out'); "
                              "OrthogonalMomentum is what guards its state, and orth² runs on every SPR step",
    "project_out.reference:nan": "as project_out.update: NaN propagates by documented design",
    "sparse_init_.weight:nan": "the weight is an output: sparse_init_ overwrites every entry and reads none, so "
                               "a NaN there is replaced",
    "spr_loss.predictions:nan": "NaN propagates into the loss by documented design, as in any torch loss "
                                "(HOSTILE 'spr_loss NaN in, NaN out'); it runs on every SPR step",
    "spr_loss.targets:nan": "as spr_loss.predictions: NaN propagates into the loss by documented design",
}
