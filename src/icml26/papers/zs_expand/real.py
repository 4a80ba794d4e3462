"""The real sanity section (report only): Animal-MNIST plus upsampled digits, 20 classes.

Two obvious super-groups (ten animal silhouettes, ten handwritten digits) with similar classes
inside each (horse/zebra/cow, cat/dog, 1/7, 3/8). A tiny CNN is trained on 14 seen classes; its
penultimate layer is the frozen feature extractor and its last layer the head ``[W | b]``. Each
class has three hand-written descriptions (a name template, an attribute sentence, a
paraphrase), crossed with the benchmark's nuisance sentences and embedded by MiniLM. Six
classes are unseen. Every arm gets the same inputs; the issue expects only a qualitative outcome
(the expander at least as good as the shared MLP), so no check is measured here.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from icml26.contract import Curve, RunContext
from icml26.papers.zs_expand.baselines import ICISExpander, SharedMLPExpander, WAvgExpander
from icml26.papers.zs_expand.config import Config
from icml26.papers.zs_expand.data import NUISANCES
from icml26.papers.zs_expand.scoring import score_rows
from icml26.papers.zs_expand.semantics import encode_descriptions
from icml26.papers.zs_expand.structure import GroupClusterer
from icml26.papers.zs_expand.synthesis import ClassifierExpander

__all__ = ["REAL_DESCRIPTIONS", "REAL_UNSEEN", "RealSection", "real_section"]

log = logging.getLogger(__name__)

#: Three descriptions per class: a name template, an attribute sentence, a paraphrase (ours).
REAL_DESCRIPTIONS: dict[str, tuple[str, str, str]] = {
    "bear": ("A photo of a bear, a large heavy animal with thick fur.",
             "A bear is a big four-legged mammal with a bulky body, a short tail and small round ears.",
             "You can recognise a bear by its massive rounded body, short legs and small rounded ears."),
    "bird": ("A photo of a bird, a small animal with feathers and wings.",
             "A bird has two thin legs, two wings, feathers and a pointed beak.",
             "You can recognise a bird by its wings, its beak and its light feathered body."),
    "cat": ("A photo of a cat, a small furry pet.",
            "A cat is a small four-legged mammal with pointed ears, whiskers and a long tail.",
            "You can recognise a cat by its slender body, pointed ears and long curling tail."),
    "cow": ("A photo of a cow, a large farm animal.",
            "A cow is a large four-legged grazing mammal with short horns, hooves and a long thin tail.",
            "You can recognise a cow by its bulky rectangular body, its udder and its short horns."),
    "dog": ("A photo of a dog, a furry pet.",
            "A dog is a four-legged mammal with a snout, floppy or pointed ears and a wagging tail.",
            "You can recognise a dog by its muzzle, its four legs and its tail."),
    "elephant": ("A photo of an elephant, a huge grey animal.",
                 "An elephant is a very large four-legged mammal with a long trunk, big ears and tusks.",
                 "You can recognise an elephant by its trunk, its large flapping ears and its thick legs."),
    "giraffe": ("A photo of a giraffe, a very tall animal.",
                "A giraffe is a tall four-legged mammal with a very long neck, long legs and a spotted coat.",
                "You can recognise a giraffe by its extremely long neck and legs."),
    "horse": ("A photo of a horse, a large riding animal.",
              "A horse is a large four-legged mammal with hooves, a long mane and a flowing tail.",
              "You can recognise a horse by its long head, its mane and its slender legs."),
    "sheep": ("A photo of a sheep, a woolly farm animal.",
              "A sheep is a four-legged grazing mammal with a thick woolly coat and short legs.",
              "You can recognise a sheep by its fluffy round woolly body and its small head."),
    "zebra": ("A photo of a zebra, a striped wild horse.",
              "A zebra is a horse-like four-legged mammal with black and white stripes, hooves and a mane.",
              "You can recognise a zebra by its striped coat and its horse-shaped body."),
    "zero": ("A handwritten digit zero.", "The digit zero is a single closed oval loop.",
             "The number 0 is written as a round ring with nothing inside."),
    "one": ("A handwritten digit one.", "The digit one is a single vertical straight stroke.",
            "The number 1 is written as one upright line, sometimes with a small flag at the top."),
    "two": ("A handwritten digit two.", "The digit two has a curved top hook, a diagonal stroke and a flat bottom line.",
            "The number 2 is written as a curve that sweeps down to a horizontal base."),
    "three": ("A handwritten digit three.", "The digit three has two stacked open curves bulging to the right.",
              "The number 3 is written as two bumps on the right side, open on the left."),
    "four": ("A handwritten digit four.",
             "The digit four has a vertical stroke crossed by a horizontal bar and a slanted line.",
             "The number 4 is written as an open triangle with a line down through it."),
    "five": ("A handwritten digit five.",
             "The digit five has a flat top bar, a short vertical stroke and a round bottom bulge.",
             "The number 5 is written as a hat line over a curved belly open on the left."),
    "six": ("A handwritten digit six.", "The digit six has a curved stem that ends in a closed loop at the bottom.",
            "The number 6 is written as a curl descending into a round lower loop."),
    "seven": ("A handwritten digit seven.", "The digit seven has a horizontal top bar and a long diagonal stroke.",
              "The number 7 is written as a flat line on top with a slanted line going down."),
    "eight": ("A handwritten digit eight.", "The digit eight is two closed loops stacked on top of each other.",
              "The number 8 is written as a snowman shape, one small ring above another."),
    "nine": ("A handwritten digit nine.", "The digit nine has a closed loop at the top and a straight stem going down.",
             "The number 9 is written as a round head with a tail below it on the right."),
}
#: The six unseen classes: members of similar pairs in both super-groups.
REAL_UNSEEN: tuple[str, ...] = ("dog", "zebra", "sheep", "five", "seven", "eight")
_DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


@dataclasses.dataclass
class RealSection:
    """What the section adds to the outcome: ``real_<arm>`` metrics, one curve and notes."""

    metrics: dict[str, dict[str, float]]
    curves: dict[str, Any]
    notes: list[str]


class _TinyCNN(nn.Module):
    """conv(1→16)–pool–conv(16→32)–pool–linear(1568→64): a 64-d feature extractor, plus a linear head."""

    def __init__(self, n_classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU())
        self.head = nn.Linear(64, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _images() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """20 classes of 28x28 images in [0, 1]: Animal-MNIST (labels 0-9) and upsampled digits (10-19)."""
    from sklearn.datasets import load_digits

    from icml26.common.data import load_animal_mnist

    animals = load_animal_mnist()
    digits = load_digits()
    up = nn.functional.interpolate(torch.as_tensor(digits.images, dtype=torch.float32)[:, None] / 16.0,
                                   size=(28, 28), mode="bilinear", align_corners=False)[:, 0].numpy()
    images = np.concatenate([animals.images.astype(np.float32) / 255.0, up])
    labels = np.concatenate([animals.labels, digits.target.astype(np.int64) + 10])
    return images, labels, tuple(animals.label_names) + _DIGIT_NAMES


def real_section(config: Config, ctx: RunContext, encoder: Any) -> RealSection | None:
    """Train the CNN on the seen classes, expand its head with every arm, score ZSL and GZSL."""
    from icml26.common.extras import extra_installed

    if not extra_installed("data"):
        return RealSection({}, {}, ["Real section skipped: animal-mnist is not installed (the data extra)."])
    ctx.stage("real section: Animal-MNIST + digits")
    images, labels, names = _images()
    rng = ctx.rng("real_split")
    train_idx, test_idx = [], []
    for c in range(len(names)):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_test = min(config.real_test_per_class, len(idx) // 3)
        test_idx.append(idx[:n_test])
        train_idx.append(idx[n_test:n_test + config.real_train_per_class])
    train_idx, test_idx = np.concatenate(train_idx), np.concatenate(test_idx)
    unseen = np.asarray([names.index(n) for n in REAL_UNSEEN])
    seen = np.setdiff1d(np.arange(len(names)), unseen)
    remap = {int(c): i for i, c in enumerate(seen)}

    device = ctx.device
    g = ctx.torch_generator("real_cnn")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        model = _TinyCNN(len(seen)).to(device)
    mask = np.isin(labels[train_idx], seen)
    x_tr = torch.as_tensor(images[train_idx][mask][:, None], device=device)
    y_tr = torch.as_tensor([remap[int(c)] for c in labels[train_idx][mask]], device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(config.real_epochs):
        for batch in torch.randperm(len(x_tr), generator=g).split(64):
            batch = batch.to(device)
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x_tr[batch]), y_tr[batch]).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        feats = model.features(torch.as_tensor(images[test_idx][:, None], device=device)).double().cpu().numpy()
    head = nn.Linear(64, len(seen), dtype=torch.float64)
    with torch.no_grad():
        head.weight.copy_(model.head.weight.double().cpu())
        head.bias.copy_(model.head.bias.double().cpu())
    seen_rows = torch.cat([head.weight, head.bias[:, None]], 1).detach()

    views = torch.as_tensor(encode_descriptions([REAL_DESCRIPTIONS[n] for n in names],
                                                NUISANCES[:config.n_nuisances], encoder))
    order = np.concatenate([seen, unseen])
    arms = {
        "zs_expand": ClassifierExpander(GroupClusterer(method=config.cluster_method, criterion=config.criterion,
                                                       neighbours=config.neighbours),
                                        "group", config.invariance, coarse_alpha=config.coarse_alpha,
                                        refiner_alpha=config.refiner_alpha, group_alpha=config.group_alpha,
                                        alpha_grid=tuple(config.alpha_grid) or None),
        "shared_mlp": SharedMLPExpander(config.mlp_hidden, steps=config.mlp_steps, lr=config.mlp_lr,
                                        weight_decay=config.mlp_weight_decay, seed=ctx.seed_for("mlp_init")),
        "icis": ICISExpander(config.icis_latent, steps=config.icis_steps, lr=config.icis_lr,
                             seed=ctx.seed_for("icis_init")),
        "wavg": WAvgExpander(config.wavg_temperature),
    }
    metrics: dict[str, dict[str, float]] = {}
    y_test = labels[test_idx]
    for arm, expander in arms.items():
        expander.fit(views[seen], seen_rows, all_semantics=views[order])
        rows = expander.expand(views[unseen]).double().numpy()
        r = score_rows(rows, head, feats, y_test, seen, unseen, unseen, np.asarray([], dtype=np.int64))
        metrics[f"real_{arm}"] = {"zsl": r["zsl"], "gzsl_seen": r["gzsl_seen"], "gzsl_unseen": r["gzsl_unseen"],
                                  "gzsl_h": r["gzsl_h"]}
        if arm == "zs_expand":
            metrics[f"real_{arm}"]["n_groups"] = float(expander.n_groups_)
    test_seen = np.isin(y_test, seen)
    logits = feats[test_seen] @ seen_rows[:, :-1].numpy().T + seen_rows[:, -1].numpy()
    seen_acc = float((seen[logits.argmax(1)] == y_test[test_seen]).mean())
    metrics["real_seen_head"] = {"seen_accuracy": seen_acc}
    curve = Curve(x=["ZSL", "GZSL S", "GZSL U", "GZSL H"],
                  series={arm: [m["zsl"], m["gzsl_seen"], m["gzsl_unseen"], m["gzsl_h"]]
                          for arm, m in metrics.items() if "zsl" in m},
                  xlabel="figure", ylabel="per-class accuracy",
                  title=f"Animal-MNIST + digits: {len(seen)} seen, unseen {', '.join(REAL_UNSEEN)}")
    me, mlp = metrics["real_zs_expand"], metrics["real_shared_mlp"]
    verdict = "at least as good as" if me["zsl"] >= mlp["zsl"] else "worse than"
    notes = [f"Real section (report only): CNN seen accuracy {seen_acc:.3f}; ZSL over the 6 unseen classes: "
             + ", ".join(f"{a[5:]} {m['zsl']:.3f}" for a, m in metrics.items() if "zsl" in m)
             + f" (chance {1 / len(unseen):.3f}); the expander is {verdict} the shared MLP here. GZSL H: "
             + ", ".join(f"{a[5:]} {m['gzsl_h']:.3f}" for a, m in metrics.items() if "gzsl_h" in m) + "."]
    if not math.isfinite(me["zsl"]):
        notes.append("Real section produced non-finite scores.")
    return RealSection(metrics, {"real_zsl": curve}, notes)
