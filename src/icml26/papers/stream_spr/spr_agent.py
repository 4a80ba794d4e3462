"""Stream Q(λ) + SPR with orthogonal gradients: the method of Nilaksh et al. 2026 (arXiv 2602.09396).

"Squeezing more from the stream: learning representation online for streaming RL"
(code: chandar-lab/stream-rep-rl, ``algorithms/streamq-spr-ortho.py``). Every step:

1. act ε-greedily with the Q-network; push (o_t, a_t) into the SPR window;
2. Stream Q(λ) update with ObGD, applied first; keep its encoder slice Δ_RL^enc = α̂·δ·z_enc;
3. SPR gradients g_G at the post-RL parameters for four groups G (encoder, transition,
   projection, predictor), only when the window holds K+1 frames of this episode and the
   step is not terminal, truncated or non-greedy (otherwise g = 0);
4. **orth**: u_G = g_G − (⟨g_G, c_G⟩/(‖c_G‖²+ε))·c_G,  c_G ← β·c_G + (1−β)·u_G;
5. heads: θ_G ← θ_G − α_SPR·w·u_G;  encoder: s = −α_SPR·w·u_enc, then **orth²**
   s ← s − (⟨s, Δ_RL^enc⟩/‖Δ_RL^enc‖²)·Δ_RL^enc, and θ_enc ← θ_enc + s;
6. EMA targets ξ ← τξ + (1−τ)θ (every step); clear the window at episode end.

``orth=False, orth2=False`` is "naive SPR". Learning rates: α_RL (ObGD) and α_SPR are
separate; :data:`LR_PRESETS` holds the stream-rep-rl defaults (both 1e-4, its single
``q_lr``) and Elsayed's ObGD step (α_RL = 1.0, with α_SPR = 1e-4).

Flags that reproduce stream-rep-rl's behaviour where we default to the correct one:
``action_alignment="official"`` (step k uses the action taken at the predicted state),
``target_init="independent"`` (targets not copied from the online weights),
``head_activation="relu"`` (the SPR network's head differs from the baseline's),
``projection_eps=1e-8`` (the leaky orth² denominator).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Literal

import torch

from .agents import (
    LearnLog,
    StepInfo,
    _EpsilonGreedyAgent,
    _torch_generator,
    epsilon_greedy,
    learn_loop,
    q_lambda_update,
)
from .networks import ARCHITECTURE_WIDTH, Architecture, HeadActivation, StreamNetwork
from icml26.common.argcheck import check_int, check_real

from .orth import MomentumSource, OrthogonalMomentum, cosine, project_out_cosines
from .spr import Alignment, SPRHead, SPRWindow, TargetInit

__all__ = ["LR_PRESETS", "LearningRates", "StreamQSPR"]


@dataclasses.dataclass(frozen=True)
class LearningRates:
    rl: float
    """α of ObGD for the Q(λ) update."""
    spr: float
    """α_SPR, the SGD step of the SPR update (multiplied by the weight w)."""

    def __post_init__(self) -> None:
        check_real(self.rl, "rl", low=0.0, low_open=True)
        check_real(self.spr, "spr", low=0.0)


#: ``"official"``: stream-rep-rl's Args (``q_lr = 1e-4`` serves as both); ``"elsayed"``:
#: Elsayed et al.'s ObGD α = 1.0 for the RL update, α_SPR = 1e-4 kept.
LR_PRESETS: dict[str, LearningRates] = {
    "official": LearningRates(rl=1e-4, spr=1e-4),
    "elsayed": LearningRates(rl=1.0, spr=1e-4),
}


class StreamQSPR(_EpsilonGreedyAgent):
    """Stream Q(λ) with an SPR auxiliary loss, orth and orth² (Nilaksh et al. 2026).

    Args:
        env: a gymnasium environment with a Discrete action space (image or vector
            observations), ideally wrapped with ``stream_wrappers``.
        orth: project each SPR group's gradient away from its running momentum.
        orth2: project the SPR encoder update away from the same step's ObGD encoder update.
        lr_preset: ``"elsayed"`` (α_RL 1.0, α_SPR 1e-4; default) or ``"official"`` (1e-4, 1e-4).
        lr, spr_lr: override the preset's α_RL and α_SPR.
        gamma, lamda, kappa: γ, λ, κ (0.99, 0.8, 2.0 in both codes).
        epsilon_start, epsilon_end, exploration_steps: linear ε schedule.
        spr_depth: K, prediction steps (5).
        spr_weight: w, the SPR loss weight (2).
        spr_tau: τ of the EMA targets (0.99).
        orth_beta: β of the orth momentum (0.99).
        orth_eps: ε in orth's denominator (1e-8, as in stream-rep-rl).
        momentum_source: ``"projected"`` (StreamQ file, default) or ``"raw"`` (Stream AC file).
        projection_eps: ε in orth²'s denominator (default 0: exact; stream-rep-rl: 1e-8).
        projection_dim: width of projection and predictor (default: 128 on MinAtar, 256 on Atari).
        action_alignment: ``"correct"`` or ``"official"`` (off-by-one) window actions.
        target_init: ``"copy"`` or ``"independent"`` (stream-rep-rl) target networks.
        head_activation: the Q-head's hidden activation; keep the baseline's for a fair
            comparison (``"relu"`` is stream-rep-rl's SPR network).
        gate_nongreedy: skip SPR on non-greedy steps (stream-rep-rl does).
        network: a :class:`StreamNetwork` to use instead of the default.
        architecture: the default network's size, ``"minatar"`` or ``"atari"`` (Nature trunk, 256-unit
            head; the transition model follows the latent's 64 channels).
        seed, device: as :class:`~icml26.papers.stream_spr.agents.StreamQ`.
    """

    def __init__(self, env: Any, *, orth: bool = True, orth2: bool = True,
                 lr_preset: Literal["elsayed", "official"] = "elsayed", lr: float | None = None,
                 spr_lr: float | None = None, gamma: float = 0.99, lamda: float = 0.8, kappa: float = 2.0,
                 epsilon_start: float = 1.0, epsilon_end: float = 0.01, exploration_steps: int = 1_000_000,
                 spr_depth: int = 5, spr_weight: float = 2.0, spr_tau: float = 0.99, orth_beta: float = 0.99,
                 orth_eps: float = 1e-8, momentum_source: MomentumSource = "projected",
                 projection_eps: float = 0.0, projection_dim: int | None = None,
                 action_alignment: Alignment = "correct", target_init: TargetInit = "copy",
                 head_activation: HeadActivation = "layernorm_leaky_relu", gate_nongreedy: bool = True,
                 network: StreamNetwork | None = None, seed: int = 0,
                 device: torch.device | str | None = None, architecture: Architecture = "minatar") -> None:
        if architecture not in ARCHITECTURE_WIDTH:
            raise ValueError(f"architecture={architecture!r} must be one of {', '.join(ARCHITECTURE_WIDTH)}")
        if projection_dim is None:
            projection_dim = ARCHITECTURE_WIDTH[architecture]
        if lr_preset not in LR_PRESETS:
            raise ValueError(f"lr_preset={lr_preset!r} must be one of {', '.join(LR_PRESETS)}")
        check_real(spr_weight, "spr_weight", low=0.0)
        if spr_lr is not None:
            check_real(spr_lr, "spr_lr", low=0.0)
        if lr is not None:
            check_real(lr, "lr", low=0.0, low_open=True)
        check_real(projection_eps, "projection_eps", low=0.0)
        check_real(spr_tau, "spr_tau", low=0.0, high=1.0)
        check_int(spr_depth, "spr_depth", low=1)
        check_real(orth_beta, "orth_beta", low=0.0, high=1.0, high_open=True)
        check_real(orth_eps, "orth_eps", low=0.0)
        check_int(seed, "seed", low=0)
        preset = LR_PRESETS[lr_preset]
        self.lr = preset.rl if lr is None else lr
        self.spr_lr = preset.spr if spr_lr is None else spr_lr
        gen = _torch_generator(seed)
        self._init_value_agent(env, network, lr=self.lr, gamma=gamma, lamda=lamda, kappa=kappa,
                               epsilon_start=epsilon_start, epsilon_end=epsilon_end,
                               exploration_steps=exploration_steps, seed=seed, device=device, generator=gen,
                               head_activation=head_activation, architecture=architecture)
        encoder = self.network.encoder
        self.spr = SPRHead(encoder, encoder.latent_shape, self.n_actions, projection_dim=projection_dim,
                           target_init=target_init, generator=gen)
        self.window = SPRWindow(spr_depth, action_alignment)
        self.groups: dict[str, list[torch.nn.Parameter]] = {"encoder": list(encoder.parameters()),
                                                            **self.spr.groups()}
        self.orth = ({name: OrthogonalMomentum(orth_beta, eps=orth_eps, momentum_source=momentum_source)
                      for name in self.groups} if orth else None)
        self.orth2 = orth2
        self.projection_eps = projection_eps
        self.spr_weight, self.spr_tau = spr_weight, spr_tau
        self.gate_nongreedy = gate_nongreedy

    def step(self) -> StepInfo:
        """One interaction: act, Q(λ) update (first), SPR update (orth, orth²), EMA targets."""
        obs = self.io.current()
        q_all = self.network(obs)[0]
        action, nongreedy = epsilon_greedy(q_all, self.epsilon, self.rng)
        self.window.push(obs[0], action)
        next_obs, reward, terminated, truncated, ret, length = self.io.advance(action)
        done = terminated or truncated
        with torch.no_grad():
            next_max = self.network(next_obs)[0].max()
        delta, rl = q_lambda_update(self.optimizer, q_all[action], next_max, reward, gamma=self.gamma,
                                    terminated=terminated, reset=done or nongreedy, return_updates=True)
        info = StepInfo(self.t, action, reward, terminated, truncated, nongreedy, delta, rl.step_size, ret, length)
        active = self.window.full and not done and not (self.gate_nongreedy and nongreedy)
        if active:
            rl_encoder = [rl.updates[p] for p in self.groups["encoder"]]
            self._spr_update(rl_encoder, info)
        elif self.orth is not None:
            for transform in self.orth.values():  # g = 0: u = 0 and c ← βc
                transform.decay()
        self.spr.update_targets(self.network.encoder, self.spr_tau)
        if done:
            self.window.clear()
        self.io.finish(next_obs, done)
        self.t += 1
        return info

    def _spr_update(self, rl_encoder: list[torch.Tensor], info: StepInfo) -> None:
        observations, actions = self.window.batch()
        out = self.spr(self.network.encoder, observations, actions)
        names = list(self.groups)
        flat = [p for name in names for p in self.groups[name]]
        grads = torch.autograd.grad(out.loss, flat, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(flat, grads)]
        per_group: dict[str, list[torch.Tensor]] = {}
        i = 0
        for name in names:
            n = len(self.groups[name])
            g = grads[i:i + n]
            i += n
            # orth: u = g − (⟨g, c⟩/(‖c‖² + ε)) c, per group
            per_group[name] = self.orth[name](g) if self.orth is not None else list(g)
        scale = self.spr_lr * self.spr_weight
        with torch.no_grad():
            # s = −α_SPR · w · u_enc
            encoder_step = [-scale * u for u in per_group["encoder"]]
            if self.orth2:
                # orth²: s ← s − (⟨s, Δ_RL⟩ / ‖Δ_RL‖²) Δ_RL, with cos(s, Δ_RL) before and after
                encoder_step, info.cos_before, info.cos_after = project_out_cosines(
                    encoder_step, rl_encoder, self.projection_eps)
            else:
                info.cos_before = info.cos_after = cosine(encoder_step, rl_encoder)
            torch._foreach_add_(self.groups["encoder"], encoder_step)
            for name in names[1:]:
                # θ_G ← θ_G − α_SPR · w · u_G
                torch._foreach_add_(self.groups[name], per_group[name], alpha=-scale)
        info.spr_active = True
        info.spr_loss = float(out.loss.detach())

    def learn(self, total_steps: int, *, progress: bool | None = None,
              callback: Callable[[StepInfo], None] | None = None) -> LearnLog:
        """Run ``total_steps`` steps (a progress bar on a terminal); return the episodes seen."""
        return learn_loop(self.step, total_steps, progress=progress, desc="StreamQ+SPR", callback=callback)
