"""The unlearning problem of the hamu reproduction: the data, the MLP, its training, the MIA samples.

Reproduction code (not part of the method's API): ``experiment.py`` draws one :class:`DataSplit`
per replicate (:func:`load_split`), builds one :class:`Problem` per (replicate, ρ) and evaluates
checkpoints with :func:`evaluate`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DATASETS", "DataSplit", "Problem", "evaluate", "kl_to_reference", "load_split", "matched_test_indices", "mlp",
           "train_mlp"]

DATASETS = ("animal_mnist", "digits")
"""``animal_mnist``: Animal-MNIST silhouettes (exact duplicates dropped) pooled 2x2 to 14x14 (196 features; harder: an MLP
reaches ~0.8 test accuracy from 2,000 samples, so a retrained model forgets measurably);
``digits``: scikit-learn's 8x8 digits (64 features; ~0.97; original and retrained reference differ by
only ~1 point of forget accuracy)."""


@dataclasses.dataclass(frozen=True)
class DataSplit:
    """Train / validation / test arrays of one replicate, standardised with training statistics.

    ``x_*``: ``(n, features)`` float32; ``y_*``: ``(n,)`` int64 in 0..9.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def _stratified(labels: np.ndarray, sizes: tuple[int, ...], rng: np.random.Generator) -> list[np.ndarray]:
    """Disjoint index sets of the given sizes, each with (near) equal counts per class."""
    classes = np.unique(labels)
    pools = {c: list(rng.permutation(np.flatnonzero(labels == c))) for c in classes}
    out = []
    for size in sizes:
        per = np.full(len(classes), size // len(classes))
        per[: size % len(classes)] += 1
        chosen = []
        for c, k in zip(classes, per):
            if len(pools[c]) < k:
                raise ValueError(f"class {c} has only {len(pools[c])} samples left, {k} needed; lower the split sizes")
            chosen += pools[c][:k]
            pools[c] = pools[c][k:]
        out.append(np.sort(np.asarray(chosen, dtype=np.int64)))
    return out


@functools.lru_cache(maxsize=None)
def _features(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of the whole data set before any split (read-only; cached: every replicate draws from it)."""
    if dataset == "animal_mnist":
        from icml26.common.data import load_animal_mnist

        images = load_animal_mnist()
        # 284 images occur twice (same label): keep one of each, so no forget sample has a copy elsewhere
        _, first = np.unique(images.images.reshape(len(images.labels), -1), axis=0, return_index=True)
        first = np.sort(first)
        # 28x28 -> 14x14 by 2x2 average pooling, scaled to [0, 1]
        x = images.images[first].astype(np.float32).reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4)).reshape(-1, 196) / 255.0
        y = images.labels[first]
    elif dataset == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        x, y = digits.data.astype(np.float32), digits.target.astype(np.int64)
    else:
        raise ValueError(f"dataset={dataset!r} must be one of {DATASETS}")
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def load_split(dataset: str, n_train: int, n_val: int, n_test: int, rng: np.random.Generator) -> DataSplit:
    """A stratified train / validation / test draw of ``dataset`` (one of :data:`DATASETS`)."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset={dataset!r} must be one of {DATASETS}")
    x, y = _features(dataset)
    train, val, test = _stratified(y, (n_train, n_val, n_test), rng)
    mean, std = x[train].mean(axis=0), x[train].std(axis=0) + 1e-3
    norm = lambda idx: ((x[idx] - mean) / std).astype(np.float32)  # noqa: E731
    return DataSplit(norm(train), y[train], norm(val), y[val], norm(test), y[test])


def mlp(hidden: tuple[int, ...], generator: torch.Generator, n_in: int = 64) -> nn.Sequential:
    """n_in → hidden … → 10 with ReLUs, initialised U(±1/√fan_in) from ``generator``."""
    widths = (n_in, *hidden, 10)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        linear = nn.Linear(a, b)
        bound = 1.0 / math.sqrt(a)
        with torch.no_grad():
            linear.weight.uniform_(-bound, bound, generator=generator)
            linear.bias.uniform_(-bound, bound, generator=generator)
        layers.append(linear)
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def train_mlp(x: torch.Tensor, y: torch.Tensor, generator: torch.Generator, *, hidden: tuple[int, ...],
              epochs: int, batch: int, lr: float) -> nn.Sequential:
    """An MLP features-hidden-10 (:func:`mlp`) trained with Adam on (x, y), in eval mode."""
    model = mlp(hidden, generator, n_in=x.shape[1]).to(x.device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator).to(x.device)
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def matched_test_indices(test_labels: np.ndarray, forget_labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Test samples with the forget set's label proportions (the non-members of the MIA)."""
    classes, counts = np.unique(forget_labels, return_counts=True)
    share = counts / counts.sum()
    available = np.array([(test_labels == c).sum() for c in classes])
    total = int(np.min(available / share))
    chosen = [rng.permutation(np.flatnonzero(test_labels == c))[: max(1, int(round(s * total)))]
              for c, s in zip(classes, share)]
    return np.sort(np.concatenate(chosen))


@dataclasses.dataclass
class Problem:
    """One (replicate, ρ) unlearning problem: tensors and the reference numbers.

    ``retain_val`` / ``retain_test``: validation / test samples of the classes other than the forget
    class; checkpoints are selected on the first and reported on the second. The retain metric
    leaves the forget class out, yet at ρ < 1 part of that class stays in the retain set, where an
    arm's harm concentrates: ``retained_class`` holds those training samples (the forget class's
    retained members), ``reference_retain_log_probs`` the reference's log-probabilities on
    ``retain`` (for the KL to the reference on retained data), and ``val_forget`` validation
    samples with the forget set's label proportions (the accuracy an unseen forget set would
    have: the target of the validation-forget stop rule). Each is optional; ``evaluate`` reports
    NaN for a metric whose data is absent or empty.
    """

    retain: tuple[torch.Tensor, torch.Tensor]
    forget: tuple[torch.Tensor, torch.Tensor]
    retain_val: tuple[torch.Tensor, torch.Tensor]
    retain_test: tuple[torch.Tensor, torch.Tensor]
    mia_test: tuple[torch.Tensor, torch.Tensor]
    reference_forget_acc: float
    reference_retain_acc: float
    reference_auc: float
    original_forget_acc: float
    retained_class: tuple[torch.Tensor, torch.Tensor] | None = None
    reference_retain_log_probs: torch.Tensor | None = None
    val_forget: tuple[torch.Tensor, torch.Tensor] | None = None


def _accuracy(model: nn.Module, data: tuple[torch.Tensor, torch.Tensor] | None) -> float:
    """Accuracy of ``model`` on ``data`` (NaN when there is none)."""
    if data is None or len(data[1]) == 0:
        return math.nan
    return float((model(data[0]).argmax(1) == data[1]).float().mean())


def kl_to_reference(reference_log_probs: torch.Tensor, log_probs: torch.Tensor) -> float:
    """Mean over samples of KL(reference ‖ model) = Σ_k p_ref,k (log p_ref,k − log p_k), in nats
    (0 exactly when the two predictive distributions agree on every sample)."""
    if reference_log_probs.shape != log_probs.shape:
        raise ValueError(f"log-probabilities of shapes {tuple(reference_log_probs.shape)} and "
                         f"{tuple(log_probs.shape)} differ")
    kl = (reference_log_probs.exp() * (reference_log_probs - log_probs)).sum(dim=1)
    return float(kl.mean())


def evaluate(model: nn.Module, problem: Problem) -> dict[str, Any]:
    """One checkpoint's accuracies (forget, retain validation and test, retained forget-class members,
    validation-forget), KL to the reference on the retain set, and the per-sample MIA losses."""
    xf, yf = problem.forget
    logits_f = model(xf)
    xv, yv = problem.retain_val
    xt, yt = problem.retain_test
    xm, ym = problem.mia_test
    ref = problem.reference_retain_log_probs
    retain_kl = (kl_to_reference(ref, F.log_softmax(model(problem.retain[0]), dim=1)) if ref is not None
                 else math.nan)
    return {
        "forget_acc": float((logits_f.argmax(1) == yf).float().mean()),
        "retain_val_acc": float((model(xv).argmax(1) == yv).float().mean()),
        "retain_acc": float((model(xt).argmax(1) == yt).float().mean()),
        "forget_losses": F.cross_entropy(logits_f, yf, reduction="none").cpu().numpy(),
        "test_losses": F.cross_entropy(model(xm), ym, reduction="none").cpu().numpy(),
        "retained_class_acc": _accuracy(model, problem.retained_class),
        "retain_kl": retain_kl,
        "val_forget_acc": _accuracy(model, problem.val_forget),
    }


