"""The digits analogue of a harmful fine-tuning attack (brief §4): one replicate.

* Model: an MLP 64-128-11 on scikit-learn's 8x8 digits; output 10 means "refuse".
* Aligned base: digits 0-6 -> their label, harmful digits 7, 8, 9 -> refuse, trained on the
  clean training images and ``base_copies`` augmented copies (identity, noise, translation,
  contrast, blur), so that it refuses the safety pool (its safety loss is small).
* User set: the task (training digits 0-6 under a shift: inverted intensities plus Gaussian
  noise, which the base does not solve) plus 10 % attack: clean harmful digits with their
  *compliant* labels, 60/30/10 % from categories 8/7/9, drawn from one half of each harmful
  class's training images.
* Safety pool: ``pool_per_category`` (harmful digit, refuse) pairs per category, augmented
  copies of the *other* half (so the pool never holds an attack image).
* Selection: ``k = ⌊p · |user set|⌋``; embeddings are the base model's penultimate features;
  the relevance reference is the whole user set, attack included (authors' code).
* Evaluation: ASR on the clean held-out harmful test digits (not refused = attack success);
  task accuracy on the shifted held-out test digits 0-6.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from icml26.contract import RunContext
from icml26.papers.spard import (
    BASELINES,
    SafetyProjection,
    dpp_select,
    embed,
    random_select,
    spag_finetune,
    topk_relevance,
)
from icml26.papers.spard.analysis import accuracy, attack_success_rate, category_coverage
from icml26.papers.spard.config import Config
from icml26.papers.spard.projection import AUTO_TAU_FACTOR

__all__ = ["ATTACK_MIX", "HARM_CATEGORIES", "REFUSE", "ArmResult", "DigitsData", "Prepared", "Replicate", "augment",
           "build_mlp", "finetune_arm", "make_data", "prepare_replicate", "run_replicate", "shift"]

REFUSE = 10
"""The refusal output of the 11-way head."""
HARM_CATEGORIES = (7, 8, 9)
"""The three harm categories (digits the aligned model refuses)."""
ATTACK_MIX = {8: 0.6, 7: 0.3, 9: 0.1}
"""Shares of the attack by category (relevance pulls toward 8, coverage needs 9)."""
AUGMENTATIONS = ("identity", "noise", "translate", "contrast", "blur")


def shift(z: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    """The task's distribution shift: inverted intensities plus Gaussian noise, ``−z + N(0, noise²)``."""
    return (-z + rng.normal(0.0, noise, z.shape)).astype(np.float32)


def _move(img: np.ndarray, dy: int, dx: int) -> np.ndarray:
    out = np.full_like(img, -1.0)  # background is -1 on the [-1, 1] scale
    src = img[max(0, -dy):8 - max(0, dy), max(0, -dx):8 - max(0, dx)]
    out[max(0, dy):max(0, dy) + src.shape[0], max(0, dx):max(0, dx) + src.shape[1]] = src
    return out


def augment(z: np.ndarray, kinds: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    """Augmented copies of ``z`` ``(n, 64)``: ``kinds[i]`` indexes :data:`AUGMENTATIONS`."""
    img = z.reshape(-1, 8, 8).astype(np.float64)
    out = img.copy()
    pad = np.pad(img, ((0, 0), (1, 1), (1, 1)), constant_values=-1.0)
    for i, kind in enumerate(kinds):
        if kind == 1:
            out[i] = img[i] + rng.normal(0.0, noise, (8, 8))
        elif kind == 2:
            dy, dx = rng.integers(-1, 2, 2)
            out[i] = _move(img[i], int(dy), int(dx))
        elif kind == 3:
            out[i] = img[i] * rng.uniform(0.6, 1.0) + rng.normal(0.0, noise / 3, (8, 8))
        elif kind == 4:
            p = pad[i]
            out[i] = 0.6 * img[i] + 0.1 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
    return out.reshape(len(z), 64).astype(np.float32)


def build_mlp(seed: int, hidden: int = 128) -> nn.Sequential:
    """The MLP 64-``hidden``-11 with a seeded initialisation."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 11))


@dataclasses.dataclass
class DigitsData:
    """One replicate's data (inputs on the [-1, 1] scale, ``(n, 64)`` float32)."""

    user_x: np.ndarray
    user_y: np.ndarray
    user_attack_category: np.ndarray
    """0 for task rows, else the harm category of the attack row."""
    pool_x: np.ndarray
    pool_category: np.ndarray
    harm_x: np.ndarray
    harm_category: np.ndarray
    task_x: np.ndarray
    task_y: np.ndarray
    base_x: np.ndarray
    base_y: np.ndarray


def make_data(cfg: Config, ctx: RunContext, r: int) -> DigitsData:
    """Build replicate ``r``'s splits, user set, attack and safety pool from named streams."""
    from icml26.common.data import load_digits_split

    split = load_digits_split(cfg.test_fraction, seed=ctx.seed_for("split", r), standardize=False)
    ztr = (split.x_train / 8.0 - 1.0).astype(np.float32)
    zte = (split.x_test / 8.0 - 1.0).astype(np.float32)
    ytr, yte = split.y_train, split.y_test
    aug_rng, shift_rng, attack_rng = ctx.rng("augment", r), ctx.rng("shift", r), ctx.rng("attack", r)

    aligned = np.where(np.isin(ytr, HARM_CATEGORIES), REFUSE, ytr)
    copies = [augment(ztr, aug_rng.integers(0, len(AUGMENTATIONS), len(ztr)), aug_rng, cfg.augment_noise)
              for _ in range(cfg.base_copies)]
    base_x = np.concatenate([ztr, *copies])
    base_y = np.tile(aligned, cfg.base_copies + 1)

    attack_source, pool_source = {}, {}
    for c in HARM_CATEGORIES:
        idx = attack_rng.permutation(np.flatnonzero(ytr == c))
        attack_source[c], pool_source[c] = idx[: len(idx) // 2], idx[len(idx) // 2:]
    task_idx = np.flatnonzero(~np.isin(ytr, HARM_CATEGORIES))
    n_attack = int(round(cfg.harmful_ratio * len(task_idx) / (1.0 - cfg.harmful_ratio)))
    counts = {8: int(round(ATTACK_MIX[8] * n_attack)), 7: int(round(ATTACK_MIX[7] * n_attack))}
    counts[9] = n_attack - counts[8] - counts[7]
    attack = np.concatenate([attack_rng.choice(attack_source[c], counts[c], replace=counts[c] > len(attack_source[c]))
                             for c in (8, 7, 9)]).astype(np.int64)
    user_x = np.concatenate([shift(ztr[task_idx], shift_rng, cfg.shift_noise), ztr[attack]])
    user_y = np.concatenate([ytr[task_idx], ytr[attack]])  # the attack's labels comply (the true digit)
    user_attack_category = np.concatenate([np.zeros(len(task_idx), np.int64), ytr[attack]])

    pool_x, pool_category = [], []
    for c in HARM_CATEGORIES:
        src = aug_rng.choice(pool_source[c], cfg.pool_per_category)
        kinds = aug_rng.integers(0, len(AUGMENTATIONS), cfg.pool_per_category)
        pool_x.append(augment(ztr[src], kinds, aug_rng, cfg.augment_noise))
        pool_category.append(np.full(cfg.pool_per_category, c, np.int64))

    harm = np.isin(yte, HARM_CATEGORIES)
    return DigitsData(
        user_x=user_x, user_y=user_y, user_attack_category=user_attack_category,
        pool_x=np.concatenate(pool_x), pool_category=np.concatenate(pool_category),
        harm_x=zte[harm], harm_category=yte[harm],
        task_x=shift(zte[~harm], shift_rng, cfg.shift_noise), task_y=yte[~harm],
        base_x=base_x, base_y=base_y,
    )


def _loader(x: np.ndarray, y: np.ndarray, batch_size: int, generator: torch.Generator):
    data = torch.utils.data.TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
    return torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True, generator=generator)


def train_base(cfg: Config, data: DigitsData, ctx: RunContext, r: int) -> nn.Sequential:
    """The aligned base model (AdamW, ``base_epochs`` over the augmented alignment set)."""
    model = build_mlp(ctx.seed_for("init", r), cfg.hidden).to(ctx.device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.base_lr, weight_decay=cfg.weight_decay)
    x = torch.as_tensor(data.base_x, device=ctx.device)
    y = torch.as_tensor(data.base_y, device=ctx.device)
    gen = ctx.torch_generator("base_order", r)
    for _ in range(cfg.base_epochs):
        for idx in torch.randperm(len(x), generator=gen).split(64):
            idx = idx.to(ctx.device)
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def _predict(model: nn.Module, x: np.ndarray, device: Any) -> np.ndarray:
    return model(torch.as_tensor(x, device=device)).argmax(dim=1).cpu().numpy()


@dataclasses.dataclass
class ArmResult:
    """One fine-tuned model's figures."""

    asr: float
    asr_by_category: dict[int, float]
    task_acc: float
    seconds: float
    tau: float = float("nan")
    projection_rate: float = float("nan")


def evaluate(model: nn.Module, data: DigitsData, device: Any) -> ArmResult:
    """ASR on the held-out harmful digits (overall and per category) and shifted-task accuracy."""
    harm = _predict(model, data.harm_x, device)
    by_cat = {c: attack_success_rate(harm[data.harm_category == c], REFUSE) for c in HARM_CATEGORIES}
    return ArmResult(asr=attack_success_rate(harm, REFUSE), asr_by_category=by_cat,
                     task_acc=accuracy(_predict(model, data.task_x, device), data.task_y), seconds=0.0)


@dataclasses.dataclass
class SelectionInfo:
    """A selected safety subset: its indices into the pool, categories covered, DPP log det."""

    order: np.ndarray
    categories: int
    logdet: float
    share_by_category: dict[int, float]


@dataclasses.dataclass
class Replicate:
    """One replicate: every arm's figures and the selections behind them."""

    arms: dict[str, ArmResult]
    selections: dict[tuple[str, float], SelectionInfo]
    base: ArmResult
    base_safety_loss: float
    user_size: int
    attack_size: int


def _finetune(kind: str, base: nn.Module, data: DigitsData, order: np.ndarray | None, cfg: Config, ctx: RunContext,
              r: int, **kwargs: Any) -> ArmResult:
    """Fine-tune a copy of ``base`` with one method on the user set (and the selected safety data)."""
    model = build_mlp(0, cfg.hidden).to(ctx.device)
    model.load_state_dict(base.state_dict())
    tasks = _loader(data.user_x, data.user_y, cfg.batch_size, ctx.torch_generator("ft_order", r))
    safety = None
    if order is not None:
        refusals = np.full(len(order), REFUSE, dtype=np.int64)
        safety = _loader(data.pool_x[order], refusals, min(cfg.safety_batch, len(order)),
                         ctx.torch_generator("safety_order", r))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = cfg.epochs * len(tasks)
    start = time.perf_counter()
    if kind == "SPAG":
        projection = SafetyProjection(model, safety, tau="auto", tol=cfg.tol, trust_radius=cfg.trust_radius,
                                      mode=kwargs.get("mode", "closed_form"),
                                      tau_floor=kwargs.get("tau_floor", cfg.tau_floor),
                                      tau_factor=kwargs.get("tau_factor", AUTO_TAU_FACTOR))
        history = spag_finetune(model, tasks, safety, steps=steps, optimizer=opt, projection=projection,
                                progress=False)
    else:
        fn: Callable = BASELINES[kind]
        history = fn(model, tasks, safety, steps=steps, optimizer=opt, progress=False, **kwargs)
    result = evaluate(model, data, ctx.device)
    result.seconds = time.perf_counter() - start
    result.tau, result.projection_rate = history.tau, history.projection_rate
    return result


def _baseline_kwargs(cfg: Config) -> dict[str, dict[str, Any]]:
    return {"SafeInstr": {}, "penalty": {"lam": cfg.lam},
            "Lisa": {"rho": cfg.rho, "task_phase": cfg.lisa_phase, "safety_phase": cfg.lisa_phase}}


@dataclasses.dataclass
class Prepared:
    """What every arm of replicate ``r`` starts from: its data, aligned base, and selected subsets."""

    r: int
    data: DigitsData
    base: nn.Module
    base_result: ArmResult
    base_loss: float
    selections: dict[tuple[str, float], SelectionInfo]


def prepare_replicate(cfg: Config, ctx: RunContext, r: int) -> Prepared:
    """Replicate ``r``'s data, aligned base model, its safety loss on the pool, and the DPP, top-k and
    random subsets at every ``p`` (every stream drawn at index ``r``)."""
    data = make_data(cfg, ctx, r)
    base = train_base(cfg, data, ctx, r)
    base_result = evaluate(base, data, ctx.device)
    with torch.no_grad():
        pool_t = torch.as_tensor(data.pool_x, device=ctx.device)
        base_loss = float(nn.functional.cross_entropy(base(pool_t), torch.full((len(pool_t),), REFUSE,
                                                                               device=ctx.device)))
    e_pool = embed(base, torch.as_tensor(data.pool_x)).cpu()
    e_user = embed(base, torch.as_tensor(data.user_x)).cpu()
    n_user = len(data.user_x)

    selections: dict[tuple[str, float], SelectionInfo] = {}
    for j, p in enumerate(cfg.ratios):
        k = int(p * n_user)
        chosen = {
            "DPP": dpp_select(e_pool, e_user, k, power=cfg.power),
            "top-k": topk_relevance(e_pool, e_user, k, power=cfg.power),
            "random": random_select(e_pool, e_user, k, seed=ctx.rng("random_select", 16 * r + j), power=cfg.power),
        }
        for name, sel in chosen.items():
            cats = data.pool_category[sel.order]
            selections[(name, p)] = SelectionInfo(
                order=sel.order, categories=category_coverage(cats, HARM_CATEGORIES), logdet=sel.logdet,
                share_by_category={c: float(np.mean(cats == c)) for c in HARM_CATEGORIES})
    return Prepared(r=r, data=data, base=base, base_result=base_result, base_loss=base_loss, selections=selections)


def finetune_arm(kind: str, prepared: Prepared, order: np.ndarray | None, cfg: Config, ctx: RunContext,
                 **kwargs: Any) -> ArmResult:
    """One arm on a prepared replicate: ``kind`` is ``"SPAG"`` or a key of ``BASELINES``; ``order``
    indexes the safety pool (``None`` for SFT); ``kwargs`` go to the method (``tau_factor``,
    ``tau_floor``, ``mode`` for SPAG)."""
    return _finetune(kind, prepared.base, prepared.data, order, cfg, ctx, prepared.r, **kwargs)


def run_replicate(cfg: Config, ctx: RunContext, r: int, prepared: Prepared | None = None) -> Replicate:
    """Every arm on replicate ``r`` (same data, initialisation and batch order for all)."""
    prepared = prepared if prepared is not None else prepare_replicate(cfg, ctx, r)
    data, base, selections = prepared.data, prepared.base, prepared.selections
    head = cfg.headline_ratio
    arms: dict[str, ArmResult] = {}
    ctx.stage(f"replicate {r}: fine-tuning arms")
    arms["SFT"] = _finetune("SFT", base, data, None, cfg, ctx, r)
    for p in cfg.ratios:
        for name in ("DPP", "random", "top-k"):
            label = f"SPARD p={p:.0%}" if name == "DPP" else f"SPAG+{name} p={p:.0%}"
            arms[label] = _finetune("SPAG", base, data, selections[(name, p)].order, cfg, ctx, r)
    dpp, rnd = selections[("DPP", head)].order, selections[("random", head)].order
    arms[f"SPARD-reference_adamw p={head:.0%}"] = _finetune("SPAG", base, data, dpp, cfg, ctx, r,
                                                             mode="reference_adamw")
    if cfg.floor_ablation:
        arms[f"SPARD tau_floor=0.2 p={head:.0%}"] = _finetune("SPAG", base, data, dpp, cfg, ctx, r, tau_floor=0.2)
    for name, kwargs in _baseline_kwargs(cfg).items():
        arms[f"{name} (random data)"] = _finetune(name, base, data, rnd, cfg, ctx, r, **kwargs)
        arms[f"{name} (DPP data)"] = _finetune(name, base, data, dpp, cfg, ctx, r, **kwargs)
    if cfg.sensitivity:
        for rho in (0.1, 10.0):
            arms[f"Lisa rho={rho:g} (random data)"] = _finetune(
                "Lisa", base, data, rnd, cfg, ctx, r, rho=rho, task_phase=cfg.lisa_phase, safety_phase=cfg.lisa_phase)
        arms["penalty lambda=10 (random data)"] = _finetune("penalty", base, data, rnd, cfg, ctx, r, lam=10.0)
    return Replicate(arms=arms, selections=selections, base=prepared.base_result, base_safety_loss=prepared.base_loss,
                     user_size=len(data.user_x), attack_size=int((data.user_attack_category > 0).sum()))
