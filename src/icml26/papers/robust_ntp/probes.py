"""Hostile calls to the robust_ntp API and what each must do (run by ``tests/test_hostile.py``),
and its one ``nn.Module`` for the module matrix."""

from __future__ import annotations

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.robust_ntp import (
    Cycling,
    DistillConfig,
    EpsilonGreedy,
    Greedy,
    IIDModel,
    ImitateThenSwitch,
    MarkovModel,
    PlayResult,
    RandomTokens,
    Robustified,
    TinyCausalTransformer,
    TorchNextTokenModel,
    Windowed,
    azuma_trigger_bound,
    conditionals,
    distill,
    hedge_weights,
    log_likelihood,
    per_position_tv,
    play,
    regret,
    regret_bound,
    rock_paper_scissors_loss,
    running_regret,
    sample_sequences,
    smoothed_best_response,
    training_histories,
    tv_distance_mc,
    unrobustified,
    windowed,
    windowed_robustified,
)

L = rock_paper_scissors_loss()
_NAN = float("nan")
_UNIFORM = np.full(3, 1 / 3)


def _sticky():
    return MarkovModel.sticky(3, 0.8)


class _Fixed:
    """A user's model that always predicts the same vector (possibly not a distribution)."""

    n_tokens = 3

    def __init__(self, p):
        self.p = np.asarray(p, dtype=float)

    def conditional(self, history):
        return self.p


MODULES = [
    ModuleCase("TinyCausalTransformer",
               build=lambda: TinyCausalTransformer(3, 8, d_model=16, n_layers=1, n_heads=2),
               inputs=lambda g: (torch.randint(0, 4, (2, 6), generator=g),)),
]

HOSTILE = [
    # the learner
    Probe("smoothed_best_response: negative beta", lambda: smoothed_best_response(_UNIFORM, L, -1.0), match="beta"),
    Probe("smoothed_best_response: NaN beta", lambda: smoothed_best_response(_UNIFORM, L, _NAN), match="beta"),
    Probe("smoothed_best_response: infinite beta", lambda: smoothed_best_response(_UNIFORM, L, float("inf")),
          match="beta"),
    Probe("smoothed_best_response: NaN p", lambda: smoothed_best_response(np.full(3, _NAN), L, 1.0), match="p"),
    Probe("smoothed_best_response: p of the wrong length", lambda: smoothed_best_response(np.ones(2) / 2, L, 1.0),
          match="3 tokens"),
    Probe("smoothed_best_response: loss outside [0, 1]", lambda: smoothed_best_response(_UNIFORM, 2 * L, 1.0),
          match="loss"),
    Probe("smoothed_best_response: torch p accepted", lambda: smoothed_best_response(torch.ones(3) / 3, L, 1.0),
          returns=lambda q: isinstance(q, np.ndarray) and np.allclose(q, 1 / 3),
          doc="a torch distribution is accepted; the mixture comes back as a NumPy array"),
    Probe("hedge_weights: negative eta", lambda: hedge_weights([0, 1], L, -1.0), match="eta"),
    Probe("hedge_weights: NaN eta", lambda: hedge_weights([0, 1], L, _NAN), match="eta"),
    Probe("hedge_weights: negative token (would wrap around)", lambda: hedge_weights([-1], L, 1.0), match="token -1"),
    Probe("hedge_weights: token out of range", lambda: hedge_weights([3], L, 1.0), match="token 3"),
    Probe("hedge_weights: fractional token", lambda: hedge_weights([0.5], L, 1.0), match="tokens"),
    Probe("regret: negative token", lambda: regret(np.array([0]), [-1], L), match="token -1"),
    Probe("regret: negative action", lambda: regret(np.array([-1]), [0], L), match="plays"),
    Probe("regret: fractional action", lambda: regret(np.array([0.7]), [0], L), match="plays"),
    Probe("regret: NaN mixture", lambda: regret(np.full((1, 3), _NAN), [0], L), match="plays"),
    Probe("regret: unnormalised mixture", lambda: regret(np.ones((1, 3)), [0], L), match="sum to 1"),
    Probe("regret: more plays than tokens", lambda: regret(np.array([0, 1]), [0], L), match="plays"),
    Probe("regret: an empty game has regret 0", lambda: regret(np.zeros(0, dtype=int), [], L),
          returns=lambda r: r == 0.0, doc="no rounds, no regret"),
    Probe("running_regret: negative token", lambda: running_regret(np.ones((2, 3)) / 3, np.array([-1, 0]), L, 1.0),
          match="token -1"),
    Probe("running_regret: p and tokens disagree", lambda: running_regret(np.ones((2, 3)) / 3, np.zeros(3, int), L, 1.0),
          match="shape"),
    Probe("regret_bound: horizon 0", lambda: regret_bound(0, 1.0, 1.0, 3), match="horizon"),
    Probe("regret_bound: beta 0", lambda: regret_bound(10, 1.0, 0.0, 3), match="beta"),
    Probe("regret_bound: NaN threshold", lambda: regret_bound(10, _NAN, 1.0, 3), match="threshold"),
    Probe("regret_bound: no action", lambda: regret_bound(10, 1.0, 1.0, 0), match="n_actions"),
    Probe("azuma_trigger_bound: horizon 0", lambda: azuma_trigger_bound(0, 1.0, 1.0, 3), match="horizon"),
    Probe("azuma_trigger_bound: beta 0", lambda: azuma_trigger_bound(10, 1.0, 0.0, 3), match="beta"),
    Probe("azuma_trigger_bound: NaN threshold", lambda: azuma_trigger_bound(10, _NAN, 1.0, 3), match="threshold"),
    # the robustified model (every model conditional is checked)
    Probe("Robustified: NaN threshold", lambda: Robustified(_sticky(), L, 1.0, _NAN), match="threshold"),
    Probe("Robustified: negative threshold", lambda: Robustified(_sticky(), L, 1.0, -1.0), match="threshold"),
    Probe("Robustified: NaN beta", lambda: Robustified(_sticky(), L, _NAN, 1.0), match="beta"),
    Probe("Robustified: zero beta", lambda: Robustified(_sticky(), L, 0.0, 1.0), match="beta"),
    Probe("Robustified: not a model", lambda: Robustified(3, L, 1.0, 1.0), match="NextTokenModel"),
    Probe("Robustified: loss with the wrong token count", lambda: Robustified(_sticky(), L[:, :2], 1.0, 1.0),
          match="token columns"),
    Probe("Robustified: a model predicting NaN", lambda: Robustified(_Fixed([_NAN] * 3), L, 1.0, 1.0).conditionals([0, 1]),
          match="NaN"),
    Probe("Robustified: an unnormalised model", lambda: Robustified(_Fixed([1.0] * 3), L, 1.0, 1.0).conditionals([0]),
          match="sum to 1"),
    Probe("Robustified: a negative probability", lambda: Robustified(_Fixed([1.5, -0.5, 0]), L, 1.0, 1.0).conditional([0]),
          match="non-negative"),
    Probe("Robustified: a conditional of the wrong length",
          lambda: Robustified(_Fixed([0.5, 0.5]), L, 1.0, 1.0).conditionals([0]), match="shape"),
    Probe("Robustified: negative token", lambda: Robustified(_sticky(), L, 1.0, 1.0).conditionals([-1, 0]),
          match="token -1"),
    Probe("Robustified.trigger_time: token out of range", lambda: Robustified(_sticky(), L, 1.0, 1.0).trigger_time([3]),
          match="token 3"),
    Probe("Robustified stream: a NaN model", lambda: play(Robustified(_Fixed([_NAN] * 3), L, 1.0, 1.0), Greedy(), 3, L, 1.0),
          match="NaN"),
    # play and the adversaries
    Probe("play: horizon 0", lambda: play(_sticky(), Greedy(), 0, L, 1.0), match="horizon"),
    Probe("play: fractional horizon", lambda: play(_sticky(), Greedy(), 2.5, L, 1.0), match="horizon"),
    Probe("play: negative beta", lambda: play(_sticky(), Greedy(), 5, L, -1.0), match="beta"),
    Probe("play: NaN beta", lambda: play(_sticky(), Greedy(), 5, L, _NAN), match="beta"),
    Probe("play: a model predicting NaN", lambda: play(_Fixed([_NAN] * 3), Greedy(), 5, L, 1.0), match="round 0"),
    Probe("play: an unnormalised model", lambda: play(_Fixed([1.0] * 3), Greedy(), 5, L, 1.0), match="sum to 1"),
    Probe("play: a conditional of the wrong length", lambda: play(_Fixed([0.5, 0.5]), Greedy(), 5, L, 1.0),
          match="3 tokens"),
    Probe("play: loss with the wrong token count", lambda: play(_sticky(), Greedy(), 5, np.full((3, 2), 0.5), 1.0),
          match="token columns"),
    Probe("play: not an adversary", lambda: play(_sticky(), "greedy", 5, L, 1.0), match="adversary"),
    Probe("play: an adversary playing a token out of range", lambda: play(_sticky(), Cycling([5]), 3, L, 1.0),
          match="token 5"),
    Probe("Cycling: negative token", lambda: Cycling([-1, 0]), match="pattern"),
    Probe("Cycling: empty pattern", lambda: Cycling([]), match="pattern"),
    Probe("EpsilonGreedy: NaN epsilon", lambda: EpsilonGreedy(_NAN), match="epsilon"),
    Probe("EpsilonGreedy: epsilon above 1", lambda: EpsilonGreedy(2.0), match="epsilon"),
    Probe("ImitateThenSwitch: negative switch", lambda: ImitateThenSwitch(_sticky(), -1), match="switch"),
    Probe("Greedy: plays the costliest token", lambda: Greedy().next_token([], np.array([1.0, 0.0, 0.0]), L, None),
          returns=lambda y: y == 1, doc="against pure rock the greedy token is paper"),
    Probe("RandomTokens: a token in range", lambda: RandomTokens().next_token([], _UNIFORM, L, np.random.default_rng(0)),
          returns=lambda y: 0 <= y < 3, doc="a uniformly random token id"),
    Probe("PlayResult: rounds disagree", lambda: PlayResult(np.zeros(3, int), np.zeros((2, 3)), np.zeros(3), None),
          match="rounds"),
    # models
    Probe("IIDModel: NaN probability", lambda: IIDModel([_NAN, 0.5, 0.5]), match="sum to 1"),
    Probe("IIDModel: negative probability", lambda: IIDModel([1.5, -0.5]), match="non-negative"),
    Probe("IIDModel: a matrix", lambda: IIDModel(np.ones((2, 2)) / 2), match="vector"),
    Probe("IIDModel.conditionals: token out of range", lambda: IIDModel([0.5, 0.5]).conditionals([7]), match="token 7"),
    Probe("MarkovModel: NaN transition", lambda: MarkovModel(np.full((2, 2), _NAN)), match="transition"),
    Probe("MarkovModel: non-square transition", lambda: MarkovModel(np.ones((2, 3)) / 3), match="square"),
    Probe("MarkovModel: initial of the wrong length", lambda: MarkovModel(np.eye(2), [1 / 3] * 3), match="initial"),
    Probe("MarkovModel.sticky: NaN stay", lambda: MarkovModel.sticky(3, _NAN), match="stay"),
    Probe("MarkovModel.sticky: one token", lambda: MarkovModel.sticky(1, 0.5), match="n_tokens"),
    Probe("MarkovModel.conditional: negative token (would wrap around)", lambda: _sticky().conditional([-1]),
          match="token -1"),
    Probe("MarkovModel.conditionals: token out of range", lambda: _sticky().conditionals([0, 5]), match="token 5"),
    Probe("MarkovModel.sample: negative count", lambda: _sticky().sample(-1, 5, 0), match="n"),
    Probe("TorchNextTokenModel: no tokens", lambda: TorchNextTokenModel(torch.nn.Linear(2, 2), 0), match="n_tokens"),
    Probe("TorchNextTokenModel: not a module", lambda: TorchNextTokenModel(lambda ids: ids, 3), match="module"),
    Probe("Windowed: negative window", lambda: Windowed(_sticky(), -1), match="window"),
    Probe("windowed: fractional window", lambda: windowed(_sticky(), 2.5), match="window"),
    Probe("conditionals: negative token", lambda: conditionals(_sticky(), [-1]), match="token -1"),
    Probe("conditionals: not a model", lambda: conditionals("model", [0]), match="NextTokenModel"),
    Probe("log_likelihood: negative token", lambda: log_likelihood(_sticky(), [-1]), match="token -1"),
    Probe("log_likelihood: impossible sequence is -inf", lambda: log_likelihood(IIDModel([1.0, 0.0]), [1]),
          returns=lambda v: v == float("-inf"), doc="a sequence of probability 0 has log-likelihood -inf"),
    Probe("sample_sequences: negative length", lambda: sample_sequences(_sticky(), 2, -1, 0), match="length"),
    Probe("sample_sequences: text rng", lambda: sample_sequences(_sticky(), 2, 3, "seed"), match="rng"),
    Probe("tv_distance_mc: one sample", lambda: tv_distance_mc(_sticky(), _sticky(), 5, 1, 0), match="n"),
    Probe("tv_distance_mc: horizon 0", lambda: tv_distance_mc(_sticky(), _sticky(), 0, 5, 0), match="horizon"),
    Probe("tv_distance_mc: vocabularies differ", lambda: tv_distance_mc(_sticky(), IIDModel([0.5, 0.5]), 5, 5, 0),
          match="tokens"),
    Probe("per_position_tv: no sequence", lambda: per_position_tv(_sticky(), _sticky(), np.zeros((0, 5), int)),
          match="sequences"),
    Probe("per_position_tv: negative token", lambda: per_position_tv(_sticky(), _sticky(), np.array([[-1, 0]])),
          match="token -1"),
    # distillation
    Probe("TinyCausalTransformer: d_model not divisible by n_heads", lambda: TinyCausalTransformer(3, 8, d_model=10),
          match="n_heads"),
    Probe("TinyCausalTransformer: no tokens", lambda: TinyCausalTransformer(0, 8), match="n_tokens"),
    Probe("TinyCausalTransformer: id out of range", lambda: TinyCausalTransformer(3, 8)(torch.tensor([[5]])),
          match="input_ids"),
    Probe("TinyCausalTransformer: negative id", lambda: TinyCausalTransformer(3, 8)(torch.tensor([[-1]])),
          match="input_ids"),
    Probe("TinyCausalTransformer: float ids", lambda: TinyCausalTransformer(3, 8)(torch.tensor([[0.5]])),
          match="input_ids"),
    Probe("TinyCausalTransformer: too long", lambda: TinyCausalTransformer(3, 4)(torch.zeros(1, 9, dtype=torch.long)),
          match="max_len"),
    Probe("DistillConfig: negative steps", lambda: DistillConfig(steps=-1), match="steps"),
    Probe("DistillConfig: NaN lr", lambda: DistillConfig(lr=_NAN), match="lr"),
    Probe("DistillConfig: heads do not divide width", lambda: DistillConfig(d_model=10, n_heads=4), match="n_heads"),
    Probe("distill: no histories", lambda: distill(_sticky(), np.zeros((0, 4), int), DistillConfig(horizon=4, steps=1)),
          match="histories"),
    Probe("distill: negative token", lambda: distill(_sticky(), -np.ones((3, 4), int), DistillConfig(horizon=4, steps=1)),
          match="token -1"),
    Probe("distill: histories longer than the horizon",
          lambda: distill(_sticky(), np.zeros((3, 9), int), DistillConfig(horizon=4, steps=1)), match="horizon"),
    Probe("training_histories: NaN beta",
          lambda: training_histories(_sticky(), _sticky(), L, _NAN, DistillConfig(horizon=4, n_sequences=3), 0),
          match="beta"),
    # baselines
    Probe("unrobustified: NaN beta", lambda: unrobustified(_sticky(), L, _NAN, 1.0), match="beta"),
    Probe("windowed_robustified: negative window", lambda: windowed_robustified(_sticky(), L, 1.0, 1.0, window=-2),
          match="window"),
]


def _tiny_cfg() -> DistillConfig:
    return DistillConfig(horizon=4, n_sequences=3, d_model=8, n_layers=1, n_heads=2, steps=1, batch_size=2)


VALID = {
    "DistillConfig": lambda: ((), {"horizon": 4, "n_sequences": 3, "d_model": 8, "n_layers": 1, "n_heads": 2,
                                   "steps": 1, "batch_size": 2, "lr": 1e-3}),
    "EpsilonGreedy": lambda: ((0.1,), {}),
    "IIDModel": lambda: ((np.array([0.2, 0.3, 0.5]),), {}),
    "ImitateThenSwitch": lambda: ((_sticky(), 2), {}),
    "MarkovModel": lambda: ((np.full((3, 3), 1 / 3),), {"initial": np.array([0.2, 0.3, 0.5])}),
    "Robustified": lambda: ((_sticky(), L.copy(), 1.0, 2.0), {}),
    "TinyCausalTransformer": lambda: ((3, 8), {"d_model": 16, "n_layers": 1, "n_heads": 2}),
    "TorchNextTokenModel": lambda: ((TinyCausalTransformer(3, 8, d_model=8, n_layers=1, n_heads=2), 3),
                                    {"bos": 3}),
    "Windowed": lambda: ((_sticky(), 2), {}),
    "azuma_trigger_bound": lambda: ((10, 5.0, 2.0, 3), {}),
    "conditionals": lambda: ((_sticky(), [0, 1, 2]), {}),
    "distill": lambda: ((_sticky(), np.zeros((3, 4), dtype=np.int64), _tiny_cfg()), {"seed": 0}),
    "hedge_weights": lambda: (([0, 1], L.copy(), 0.5), {}),
    "log_likelihood": lambda: ((_sticky(), [0, 1]), {}),
    "per_position_tv": lambda: ((_sticky(), IIDModel(_UNIFORM), np.array([[0, 1, 2]])), {}),
    "play": lambda: ((_sticky(), Greedy(), 4, L.copy(), 1.0), {"rng": 0}),
    "regret": lambda: ((np.full((2, 3), 1 / 3), [0, 1], L.copy()), {}),
    "regret_bound": lambda: ((10, 5.0, 2.0, 3), {}),
    "running_regret": lambda: ((np.full((2, 3), 1 / 3), np.array([0, 1]), L.copy(), 1.0), {}),
    "sample_sequences": lambda: ((_sticky(), 2, 3, 0), {}),
    "smoothed_best_response": lambda: ((_UNIFORM.copy(), L.copy(), 1.0), {}),
    "training_histories": lambda: ((_sticky(), Robustified(_sticky(), L, 1.0, 2.0), L.copy(), 1.0, _tiny_cfg(), 0),
                                   {}),
    "tv_distance_mc": lambda: ((_sticky(), _sticky(), 3, 2, 0), {}),
    "unrobustified": lambda: ((_sticky(), L.copy(), 1.0, 2.0), {}),
    "windowed": lambda: ((_sticky(), 2), {}),
    "windowed_robustified": lambda: ((_sticky(), L.copy(), 1.0, 2.0), {"window": 2}),
}

NOT_WALKED = {
    "Adversary": "a typing.Protocol (the interface of an opponent), not instantiable; the adversaries "
                 "(Cycling, EpsilonGreedy, ImitateThenSwitch) and play are walked",
    "NextTokenModel": "a typing.Protocol (the interface of a model), not instantiable; IIDModel, MarkovModel, "
                      "TorchNextTokenModel, Windowed and Robustified are walked",
    "PlayResult": "a result record filled by play() (walked); HOSTILE 'PlayResult: rounds disagree' checks "
                  "that its arrays cover the same rounds",
}
