"""The on-manifold control study on SmolLM2 (a section of the reproduction, and its own further run).

At one layer of SmolLM2-135M-Instruct, over random prefixes of the stdlib text, every direction of
:func:`~icml26.papers.curvature.onmanifold.onmanifold_directions` is stepped at every size
``epsilon |x_t|``; per prefix and direction the initial slopes of ``Delta H`` and of ``Delta phi_{t-1}``
(:func:`~icml26.papers.curvature.analysis.initial_slope`), then per prefix the entropy change per
radian of angle change over the isotropic span directions
(:func:`~icml26.papers.curvature.analysis.entropy_per_angle`). The prefix is the unit: each is an
independent draw of text, and every direction is measured on the same prefixes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from icml26.contract import Curve, RunContext
from icml26.papers.curvature.analysis import entropy_per_angle, initial_slope
from icml26.papers.curvature.config import Config
from icml26.papers.curvature.onmanifold import onmanifold_sweep, top_components

__all__ = ["OnManifoldStudy", "onmanifold_study"]


def _mean_sem(values: np.ndarray) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if v.size < 2:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


@dataclasses.dataclass(frozen=True)
class OnManifoldStudy:
    """Per-prefix slopes of every direction at one layer (:func:`onmanifold_study`)."""

    layer: int
    names: list[str]
    epsilons: list[float]
    entropy_slopes: np.ndarray
    """``(directions, prefixes)``: ``d Delta H / d epsilon`` at 0 (nats per unit epsilon)."""
    angle_slopes: np.ndarray
    """``(directions, prefixes)``: ``d Delta phi_{t-1} / d epsilon`` at 0 (radians per unit epsilon)."""
    per_angle: np.ndarray
    """``(prefixes,)``: entropy change per radian of angle change over the ``span_k`` directions."""
    previous_passed: float
    """Share of prefixes whose largest toward-previous step passes ``x_{t-1}``."""

    def slopes(self, name: str) -> np.ndarray:
        """The entropy slopes ``(prefixes,)`` of one direction."""
        return self.entropy_slopes[self.names.index(name)]

    def angles(self, name: str) -> np.ndarray:
        return self.angle_slopes[self.names.index(name)]

    @property
    def pc_difference(self) -> np.ndarray:
        """Per prefix, the entropy slope of the straightest best-of-N step minus the curviest one's."""
        return self.slopes("pc_straightest") - self.slopes("pc_curviest")

    @property
    def rotation_per_angle(self) -> np.ndarray:
        """Per prefix, the rotation step's entropy slope over its angle slope (nats per radian): the
        same quantity as :attr:`per_angle` from one direction instead of a regression."""
        phi = self.angles("rotation")
        return np.where(phi != 0, self.slopes("rotation") / np.where(phi != 0, phi, 1.0), np.nan)

    def metrics(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for name in self.names:
            if name.startswith("span_"):
                continue
            h, h_sem = _mean_sem(self.slopes(name))
            phi, phi_sem = _mean_sem(self.angles(name))
            out[f"on-manifold {name}"] = {"mean_entropy_slope": h, "sem_entropy_slope": h_sem,
                                          "mean_angle_slope": phi, "sem_angle_slope": phi_sem}
        span = [i for i, n in enumerate(self.names) if n.startswith("span_")]
        h_span, _ = _mean_sem(self.entropy_slopes[span].mean(0))
        beta, beta_sem = _mean_sem(self.per_angle)
        rot, rot_sem = _mean_sem(self.rotation_per_angle)
        diff, diff_sem = _mean_sem(self.pc_difference)
        out["on-manifold summary"] = {
            "entropy_per_radian": beta, "sem_entropy_per_radian": beta_sem,
            "frac_positive_per_radian": float(np.mean(self.per_angle[np.isfinite(self.per_angle)] > 0)),
            "rotation_entropy_per_radian": rot, "sem_rotation_entropy_per_radian": rot_sem,
            "pc_straightest_minus_curviest": diff, "sem_pc_straightest_minus_curviest": diff_sem,
            "span_mean_entropy_slope": h_span, "previous_passed": self.previous_passed,
            "n_prefixes": float(np.isfinite(self.per_angle).sum()), "layer": float(self.layer)}
        return out

    def curve(self) -> Curve:
        names = [n for n in self.names if not n.startswith("span_")]
        return Curve(x=names, series={
            "entropy slope (nats per unit epsilon)": [_mean_sem(self.slopes(n))[0] for n in names],
            "angle slope (rad per unit epsilon)": [_mean_sem(self.angles(n))[0] for n in names]},
            xlabel="direction of the step epsilon |x_t| d", ylabel="mean initial slope over prefixes",
            title=f"SmolLM2 layer {self.layer}: entropy and angle per unit step, by direction")

    def summary(self) -> str:
        m = self.metrics()
        s = m["on-manifold summary"]
        parts = ", ".join(f"{n} {m[f'on-manifold {n}']['mean_entropy_slope']:+.3f} "
                          f"(angle {m[f'on-manifold {n}']['mean_angle_slope']:+.2f})"
                          for n in ("aligned", "rotation", "toward_previous", "shrink", "misaligned"))
        return (f"on-manifold controls at layer {self.layer} over {int(s['n_prefixes'])} prefixes: entropy slope "
                f"(nats per unit epsilon) and angle slope (rad per unit epsilon): {parts}; entropy per radian of "
                f"angle change over {sum(n.startswith('span_') for n in self.names)} random directions in "
                f"span(x_t-2, x_t-1, x_t): {s['entropy_per_radian']:+.3f} +/- {s['sem_entropy_per_radian']:.3f} "
                f"(rotation alone {s['rotation_entropy_per_radian']:+.3f} +/- "
                f"{s['sem_rotation_entropy_per_radian']:.3f}); best-of-N straightest minus curviest "
                f"{s['pc_straightest_minus_curviest']:+.3f} +/- {s['sem_pc_straightest_minus_curviest']:.3f}")


def onmanifold_study(config: Config, corpus, ctx: RunContext, layer: int) -> OnManifoldStudy:
    """The study on ``config.onmanifold_prefixes`` random prefixes of ``config.pretrained_perturb_length``
    tokens of the whole stdlib text (SmolLM2's tokenizer) at ``hidden_states[layer]``. The principal
    directions of the best-of-N rule are the top 10 of the layer's states over every position of the
    first batch."""
    from icml26.common.pretrained import load_pretrained_lm
    from icml26.common.tiny_lm import encode_corpus

    ctx.stage(f"SmolLM2: on-manifold controls at layer {layer}")
    lm = load_pretrained_lm(ctx.device, torch.float32)
    ctx.provenance["pretrained"] = lm.provenance
    model = lm.model.eval()
    stream = torch.cat(encode_corpus(lm.tokenizer, corpus))
    length, batch = config.pretrained_perturb_length, config.pretrained_perturb_batch
    starts = ctx.rng("onmanifold_prefixes").integers(0, stream.numel() - length, size=config.onmanifold_prefixes)
    prefixes = torch.stack([stream[s: s + length] for s in starts.tolist()])
    generator = ctx.torch_generator("onmanifold_directions")
    with torch.no_grad():
        first = model(input_ids=prefixes[:batch].to(ctx.device), output_hidden_states=True).hidden_states[layer]
    components = top_components(first.reshape(-1, first.shape[-1]).float(), 10)
    sweeps = [onmanifold_sweep(model, prefixes[i: i + batch], layer, config.epsilons, n_random=config.onmanifold_directions,
                               generator=generator, components=components, pc_draws=config.onmanifold_pc_draws)
              for i in ctx.progress(range(0, len(prefixes), batch), desc="SmolLM2 on-manifold controls")]
    eps, names = sweeps[0].epsilons, sweeps[0].names
    dh = torch.cat([s.delta_entropy for s in sweeps], dim=2).double().numpy()  # (directions, sizes, prefixes)
    dphi = torch.cat([s.delta_angle for s in sweeps], dim=2).double().numpy()
    h_slopes = np.stack([initial_slope(eps, dh[i]) for i in range(len(names))])
    phi_slopes = np.stack([initial_slope(eps, dphi[i]) for i in range(len(names))])
    span = [i for i, n in enumerate(names) if n.startswith("span_")]
    passed = torch.cat([s.previous_passed for s in sweeps]).double().numpy()
    return OnManifoldStudy(layer=layer, names=names, epsilons=eps, entropy_slopes=h_slopes, angle_slopes=phi_slopes,
                           per_angle=entropy_per_angle(h_slopes[span], phi_slopes[span]),
                           previous_passed=float(passed.mean()))
