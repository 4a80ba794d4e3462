"""ReViT reproduction: one-step Navier–Stokes prediction tested at all four rotations.

Setting (brief §4): 2D periodic Navier–Stokes with a uniform background
flow whose direction is drawn near +x, so the training set is orientation-biased.
Three models of about 0.21 M parameters are trained for the same number of steps on
the same pairs, with several seeds each:

* ReViT (:class:`~icml26.papers.revit.model.ReViT2d`),
* a plain Swin-style ViT (:class:`~icml26.papers.revit.baselines.PlainViT`),
* the same ViT trained with random C4 augmentation (the strongest simple baseline);

plus the identity ("no change") predictor. Each is evaluated on a held-out test set
rotated by 0°, 90°, 180° and 270°; steps/s are measured side by side in the same run.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import torch

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.revit.analysis import relative_gain, rotation_spread, summarize_rotations
from icml26.papers.revit.baselines import PlainViT
from icml26.papers.revit.claims import ARMS as CLAIM_ARMS
from icml26.papers.revit.claims import CHECKS
from icml26.papers.revit.config import Config
from icml26.papers.revit.figures import plot
from icml26.papers.revit.group import rotate_field
from icml26.papers.revit.model import ReViT2d
from icml26.papers.revit.navier_stokes import make_navier_stokes_pairs
from icml26.papers.revit.training import fit, rotated_mse

__all__ = ["ARMS", "CHECKS", "Config", "STREAMS", "plot", "run"]

log = logging.getLogger(__name__)

ARMS = ("ReViT", "ViT", "ViT+aug")
EQUAL_TIME = "ViT+aug equal time"
"""ViT+aug trained for about ReViT's wall time (:func:`equal_time_steps`) at ViT+aug's chosen rate."""
BUDGET_ARMS = ("ReViT", "ViT+aug")
"""The arms of the budget curve (``Config.budgets``)."""
ARM_IDS = {"ReViT": "revit", "ViT": "vit", "ViT+aug": "vit_aug", EQUAL_TIME: "vit_aug_equal_time"}
"""Result name -> declared arm id (claims.ARMS)."""
ROTATIONS = (0, 1, 2, 3)

STREAMS: dict[str, str] = {
    "data": "the Navier-Stokes training and test sets (one generator, train drawn first)",
    "init": "model initialisation; index = replicate + arm 2^32 (see _init_seed)",
    "batches": "minibatch order and augmentation; index = replicate",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


def _model(arm: str, config: Config) -> torch.nn.Module:
    common = dict(patch=config.patch, dim=config.dim, heads=config.heads, depths=config.depths,
                  decoder_depth=config.decoder_depth, window=config.window, residual=True)
    # Inputs: vorticity (scalar) + velocity (vector); output: next velocity.
    if arm == "ReViT":
        return ReViT2d(1, 1, 0, 1, local_kernel=config.local_kernel, **common)
    return PlainViT(1, 1, 0, 1, grid_size=config.grid, **common)


def _init_seed(ctx: RunContext, replicate: int, arm: int) -> int:
    """The torch seed of one model: stream ``init``, index ``replicate + arm·2³²``.

    SeedSequence reads the entropy ``[seed, crc32("init"), replicate + arm·2³²]`` as the 32-bit
    words ``[seed, crc32("init"), replicate, arm]``: one stream per (replicate, arm).
    """
    return ctx.seed_for("init", replicate + (arm << 32))


@torch.no_grad()
def _equivariance_error(model: torch.nn.Module, x: torch.Tensor) -> float:
    """max_k ‖Φ(L_k x) − L_k Φ(x)‖_∞ / ‖Φ(x)‖_∞ over k = 1, 2, 3 (float32)."""
    model.eval()
    y = model(x)
    err = max(float((model(rotate_field(x, k, 1, 1)) - rotate_field(y, k, 0, 1)).abs().max()) for k in (1, 2, 3))
    return err / float(y.abs().max())


@dataclasses.dataclass
class ArmRuns:
    """One arm's replicates: per-rotation physical test MSE, speed, loss curves, equivariance error,
    the chosen learning rate and, per further budget, the mean rotated-test MSE."""

    per_rotation: list[list[float]] = dataclasses.field(default_factory=list)
    steps_per_s: list[float] = dataclasses.field(default_factory=list)
    losses: list[list[float]] = dataclasses.field(default_factory=list)
    equivariance: list[float] = dataclasses.field(default_factory=list)
    lr: list[float] = dataclasses.field(default_factory=list)
    budget_rotated: dict[int, list[float]] = dataclasses.field(default_factory=dict)
    params: int = 0


@dataclasses.dataclass
class Data:
    """Normalised training, validation and test pairs, the physical velocity scale and the identity MSE."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    u_scale: float
    identity_mse: float
    x_val: torch.Tensor | None = None
    y_val: torch.Tensor | None = None


def _data(config: Config, ctx: RunContext) -> Data:
    """One orientation-biased training set, a test set and a validation set drawn like the training
    set (after the test set), normalised rotation-invariantly with the training set's scales."""
    gen = ctx.torch_generator("data")
    sim = dict(grid=config.grid, generator=gen, nu=config.nu, dt=config.dt, substeps=config.substeps,
               angle_spread=config.angle_spread)
    train = make_navier_stokes_pairs(config.train_trajectories, config.pairs_per_trajectory, **sim)
    test = make_navier_stokes_pairs(config.test_trajectories, config.pairs_per_trajectory, **sim)
    val = make_navier_stokes_pairs(config.val_trajectories, config.pairs_per_trajectory, **sim)
    # Rotation-invariant normalisation: one scale for the scalar, one for the whole vector.
    w_scale = float(train.inputs[:, 0].std())
    u_scale = float(train.inputs[:, 1:].pow(2).sum(1).mean().sqrt())
    in_scale = torch.tensor([1 / w_scale, 1 / u_scale, 1 / u_scale]).view(1, 3, 1, 1)
    identity = float(((test.inputs[:, 1:] - test.targets) ** 2).mean())
    ctx.provenance["revit_data"] = {"train_pairs": int(train.inputs.shape[0]), "test_pairs": int(test.inputs.shape[0]),
                                    "validation_pairs": int(val.inputs.shape[0]),
                                    "vorticity_std": w_scale, "velocity_rms": u_scale}
    return Data(train.inputs * in_scale, train.targets / u_scale, test.inputs * in_scale, test.targets / u_scale,
                u_scale, identity, val.inputs * in_scale, val.targets / u_scale)


def validation_score(arm: str, per_rotation: list[float]) -> float:
    """What the tuner minimises: the validation MSE on the arm's own training distribution.

    Rotation 0 for the plain ViT (it is given no rotation information, so it is not selected on
    rotated flows either); the mean over the four rotations for ViT+aug (trained on all four) and
    ReViT (equal at every rotation by construction, so the same as its rotation-0 MSE).
    """
    return float(per_rotation[0]) if arm == "ViT" else float(np.mean(per_rotation))


def lr_grid(config: Config) -> tuple[float, ...]:
    """The peak learning rates every trained arm tries: ``config.lrs``, or ``(config.lr,)``."""
    return tuple(config.lrs) or (config.lr,)


def equal_time_steps(config: Config) -> int:
    """Steps of ViT+aug (equal time): ``round(equal_time_factor · steps)``, at least 1."""
    return max(1, round(config.equal_time_factor * config.steps))


def _train(arm: str, config: Config, ctx: RunContext, data: Data, replicate: int, *, steps: int, lr: float):
    """One model of ``arm`` (ViT+aug's initialisation for its equal-time run) trained for ``steps``
    at peak rate ``lr`` on the same minibatch order as every other run of the replicate."""
    base = "ViT+aug" if arm == EQUAL_TIME else arm
    torch.manual_seed(_init_seed(ctx, replicate, ARMS.index(base)))
    model = _model(base, config).to(ctx.device)
    result = fit(model, data.x_train, data.y_train, steps=steps, batch_size=config.batch_size, lr=lr,
                 weight_decay=config.weight_decay, augment=(base == "ViT+aug"),
                 generator=ctx.torch_generator("batches", replicate), show_progress=ctx.show_progress,
                 desc=f"{arm} seed {replicate} ({steps} steps, lr {lr:g})")
    return model, result


def _mse(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, u_scale: float) -> list[float]:
    """Physical MSE at the four rotations."""
    mse = rotated_mse(model, x, y, n_scalar_in=1, n_vector_in=1, n_scalar_out=0, n_vector_out=1)
    return [m * u_scale**2 for m in mse]


def _record(runs: ArmRuns, model: torch.nn.Module, result, data: Data, ctx: RunContext) -> None:
    runs.params = sum(p.numel() for p in model.parameters())
    runs.per_rotation.append(_mse(model, data.x_test, data.y_test, data.u_scale))
    runs.steps_per_s.append(result.steps_per_s)
    runs.losses.append(result.losses)
    runs.equivariance.append(_equivariance_error(model, data.x_test[:8].to(ctx.device)))


def _train_arms(config: Config, ctx: RunContext, data: Data) -> dict[str, ArmRuns]:
    """Every arm, every replicate: each trained arm at every rate of :func:`lr_grid`, the rate chosen
    by the shared tuner on the validation split; then, at that rate, ViT+aug's equal-time run and
    ReViT's and ViT+aug's further budgets."""
    runs = {arm: ArmRuns() for arm in (*ARMS, EQUAL_TIME)}
    grid = lr_grid(config)
    for seed in range(config.seeds):
        for arm in ARMS:
            trials = {}
            for lr in grid:
                model, result = _train(arm, config, ctx, data, seed, steps=config.steps, lr=lr)
                trials[lr] = (model, result, _mse(model, data.x_val, data.y_val, data.u_scale))
            declared = CLAIM_ARMS[ARM_IDS[arm]]
            spec = dataclasses.replace(declared, space={**declared.space, "lr": grid}, trials=len(grid))
            chosen = float(ctx.tune(spec, lambda p, a=arm: validation_score(a, trials[p["lr"]][2]),
                                    maximize=False, index=seed)["lr"])
            model, result, _ = trials[chosen]
            runs[arm].lr.append(chosen)
            _record(runs[arm], model, result, data, ctx)
            log.info("%s seed %d (lr %g): per-rotation MSE %s, %.1f steps/s", arm, seed, chosen,
                     ", ".join(f"{m:.3g}" for m in runs[arm].per_rotation[-1]), result.steps_per_s)
            if arm == "ViT+aug":
                model, result = _train(EQUAL_TIME, config, ctx, data, seed, steps=equal_time_steps(config),
                                       lr=chosen)
                runs[EQUAL_TIME].lr.append(chosen)
                _record(runs[EQUAL_TIME], model, result, data, ctx)
            if arm in BUDGET_ARMS:
                for budget in config.budgets:
                    model, _ = _train(arm, config, ctx, data, seed, steps=budget, lr=chosen)
                    mse = _mse(model, data.x_test, data.y_test, data.u_scale)
                    runs[arm].budget_rotated.setdefault(budget, []).append(float(np.mean(mse[1:])))
    return runs


def budget_curve(config: Config, runs: dict[str, ArmRuns], metrics: dict[str, dict[str, float]]):
    """``(steps, {arm: mean rotated-test MSE per budget})`` for ReViT and ViT+aug, budgets ascending;
    the main budget (``config.steps``) is read from ``metrics``, the others from the further runs."""
    steps = tuple(sorted((config.steps, *config.budgets)))
    curve = {arm: [metrics[arm]["mse_rotated"] if b == config.steps else float(np.mean(runs[arm].budget_rotated[b]))
                   for b in steps] for arm in BUDGET_ARMS}
    return steps, curve


def crossover_steps(steps, ratios) -> int | None:
    """The smallest budget from which ReViT / ViT+aug stays above 1 (ReViT behind at it and every
    larger budget on the curve); None when ReViT is not behind at the largest budget."""
    found = None
    for b, r in zip(reversed(tuple(steps)), reversed(tuple(ratios))):
        if not r > 1:
            break
        found = b
    return found


def run(config: Config, ctx: RunContext) -> Outcome:
    ctx.stage("flows and their rotations")
    data = _data(config, ctx)
    ctx.stage("training every arm")
    runs = _train_arms(config, ctx, data)
    ctx.stage("scoring, the budget curve")

    # --- metrics -------------------------------------------------------------------------
    metrics: dict[str, dict[str, float]] = {}
    for arm in (*ARMS, EQUAL_TIME):
        summary = summarize_rotations(runs[arm].per_rotation)
        metrics[arm] = {
            **{f"mse_rot{90 * k}": summary.per_rotation[k] for k in ROTATIONS},
            "mse_rotated": summary.rotated,
            "mse_rotated_seed_std": summary.rotated_std,
            "mse_all": summary.overall,
            "equivariance_error": float(max(runs[arm].equivariance)),
            "params": float(runs[arm].params),
            "lr": float(np.exp(np.mean(np.log(runs[arm].lr)))),
            "steps": float(equal_time_steps(config) if arm == EQUAL_TIME else config.steps),
        }
    identity = data.identity_mse
    metrics["identity"] = {**{f"mse_rot{90 * k}": identity for k in ROTATIONS},
                           "mse_rotated": identity, "mse_all": identity}
    spread = rotation_spread(runs["ReViT"].per_rotation)
    ratio_vit = metrics["ReViT"]["mse_rotated"] / metrics["ViT"]["mse_rotated"]
    gain_identity = relative_gain(metrics["ReViT"]["mse_all"], identity)
    ratio_aug_rot0 = metrics["ReViT"]["mse_rot0"] / metrics["ViT+aug"]["mse_rot0"]
    # Wall-clock speed is not reproducible bit for bit, so it stays out of `metrics` (which the
    # contract requires to be identical for the same seed): provenance, a curve and a note.
    steps_per_s = {arm: float(np.mean(runs[arm].steps_per_s)) for arm in ARMS}
    speed_ratio = steps_per_s["ReViT"] / steps_per_s["ViT"]
    ctx.provenance["revit_steps_per_s"] = {**steps_per_s, "ReViT/ViT": speed_ratio}
    metrics["ReViT"]["rot0_mse_over_vit_aug"] = ratio_aug_rot0
    ratio_equal_time = metrics["ReViT"]["mse_rotated"] / metrics[EQUAL_TIME]["mse_rotated"]
    metrics["ReViT"]["rotated_over_vit_aug_equal_time"] = ratio_equal_time
    curve_steps, curve = budget_curve(config, runs, metrics)
    for b, (revit_b, aug_b) in zip(curve_steps, zip(curve["ReViT"], curve["ViT+aug"])):
        if b != config.steps:
            metrics["ReViT"][f"mse_rotated_steps{b}"] = revit_b
            metrics["ViT+aug"][f"mse_rotated_steps{b}"] = aug_b
            metrics["ReViT"][f"rotated_over_vit_aug_steps{b}"] = revit_b / aug_b
    crossover = crossover_steps(curve_steps, [r / a for r, a in zip(curve["ReViT"], curve["ViT+aug"])])

    checks = [
        CHECKS["rotation_spread"].measure(spread, note="exact C4 equivariance in float32"),
        CHECKS["rotated_mse_ratio"].measure(ratio_vit),
        CHECKS["gain_vs_identity"].measure(gain_identity),
        CHECKS["rot0_vs_vit_aug"].measure(ratio_aug_rot0, note=f"ReViT local kernel: {config.local_kernel}"),
        CHECKS["rotated_vs_vit_aug"].measure(metrics["ReViT"]["mse_rotated"] / metrics["ViT+aug"]["mse_rotated"],
                                             note="the strongest baseline on the rotated test flows"),
        CHECKS["rotated_vs_vit_aug_equal_time"].measure(
            ratio_equal_time, note=f"ViT+aug trained {equal_time_steps(config)} steps to ReViT's {config.steps} "
                                   f"(measured ReViT/ViT speed {speed_ratio:.2f})"),
    ]

    # --- curves --------------------------------------------------------------------------
    degrees = [90 * k for k in ROTATIONS]
    series = {arm: [metrics[arm][f"mse_rot{d}"] for d in degrees] for arm in (*ARMS, "identity")}
    series[EQUAL_TIME] = [metrics[EQUAL_TIME][f"mse_rot{d}"] for d in degrees]
    by_seed = {f"{arm} seed {s}": runs[arm].per_rotation[s] for arm in (*ARMS, EQUAL_TIME)
               for s in range(config.seeds)}
    stride = max(1, config.steps // 100)
    xs = list(range(1, config.steps + 1, stride))
    loss_series = {arm: [float(np.mean([run_[i - 1] for run_ in runs[arm].losses])) for i in xs] for arm in ARMS}
    curves = {
        "per_rotation_mse": Curve(x=degrees, series=series, xlabel="test rotation (degrees)",
                                  ylabel="test MSE (velocity)", title="Test MSE per rotation (mean of seeds)",
                                  logy=True),
        "per_rotation_mse_by_seed": Curve(x=degrees, series=by_seed, xlabel="test rotation (degrees)",
                                          ylabel="test MSE (velocity)", logy=True),
        "training_loss": Curve(x=xs, series=loss_series, xlabel="step",
                               ylabel="training MSE (normalised units)", title="Training loss (mean of seeds)",
                               logy=True),
        "steps_per_s": Curve(x=[0], series={arm: [steps_per_s[arm]] for arm in ARMS},
                             ylabel="training steps/s"),
        "budget_curve": Curve(x=list(curve_steps), series={f"{arm} rotated MSE": ys for arm, ys in curve.items()},
                              xlabel="training steps (one-cycle run of that length)",
                              ylabel="mean rotated-test MSE", title="Budget curve", logy=True),
    }
    notes = [
        f"ReViT vs ViT+augmentation at rotation 0 (reported, not gated): MSE {metrics['ReViT']['mse_rot0']:.3g} vs "
        f"{metrics['ViT+aug']['mse_rot0']:.3g} (ratio {ratio_aug_rot0:.2f}); plain ViT "
        f"{metrics['ViT']['mse_rot0']:.3g}.",
        f"Speed, same run and machine: ReViT {steps_per_s['ReViT']:.1f} steps/s, ViT "
        f"{steps_per_s['ViT']:.1f}, ViT+aug {steps_per_s['ViT+aug']:.1f} "
        f"(ReViT/ViT = {speed_ratio:.2f}); ViT+aug (equal time) trains {equal_time_steps(config)} steps, "
        f"rotated MSE {metrics[EQUAL_TIME]['mse_rotated']:.3g} (ReViT / it = {ratio_equal_time:.3g}).",
        "Budget curve, ReViT / ViT+aug mean rotated-test MSE: " + ", ".join(
            f"{b} steps {r / a:.3g}" for b, r, a in zip(curve_steps, curve["ReViT"], curve["ViT+aug"]))
        + (f"; ReViT is behind from {crossover} steps on" if crossover is not None
           else "; ReViT is not behind at any budget on the curve") + ".",
        "Learning rates chosen on the validation split (geometric mean over replicates): "
        + ", ".join(f"{arm} {metrics[arm]['lr']:.3g}" for arm in ARMS) + f" from {list(lr_grid(config))}.",
    ]
    if ratio_aug_rot0 > 1.3:
        notes.append("ReViT learns more slowly in distribution than ViT+augmentation at this CPU budget "
                     "(the target is at most 1.3x); its advantage here is exact equivariance and "
                     "rotated generalisation.")
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
