"""The digits setting of the reproduction: images in [-1, 1] and a classifier that scores samples.

FID needs Inception weights, which cannot be downloaded here; the brief's stand-in (§4.4) is a
digits classifier (scikit-learn ``MLPClassifier``, ~97 % accurate on held-out digits):

* **class accuracy** of class-conditional samples (does a sample of class ``c`` look like a ``c``?);
* the **Fréchet distance** between its penultimate-layer features of samples and of real held-out
  digits (FID's formula on a small feature space).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from icml26.common.data import load_digits_split
from icml26.papers.robuq.analysis import class_accuracy, frechet_distance, mlp_penultimate

__all__ = ["DigitImages", "DigitScorer", "load_digit_images"]


@dataclasses.dataclass(frozen=True)
class DigitImages:
    """scikit-learn's 8×8 digits scaled to [-1, 1]: ``x_*`` ``(n, 1, 8, 8)`` float32, ``y_*`` ``(n,)`` int64."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digit_images(test_fraction: float = 0.25, seed: int = 0) -> DigitImages:
    """The 1,797 digits (pixel values 0-16) as ``x / 8 − 1``, split stratified by class."""
    split = load_digits_split(test_fraction, seed=seed, standardize=False)

    def images(x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(x / 8.0 - 1.0, dtype=torch.float32).view(-1, 1, 8, 8)

    return DigitImages(images(split.x_train), torch.as_tensor(split.y_train),
                       images(split.x_test), torch.as_tensor(split.y_test))


@dataclasses.dataclass
class DigitScorer:
    """A ReLU MLP classifier of digits, fitted on training images; scores generated ones.

    Attributes:
        classifier: the fitted ``sklearn.neural_network.MLPClassifier``.
        reference: penultimate features of the real reference images ``(n, k)``.
        accuracy: its accuracy on the reference (held-out) images.
    """

    classifier: object
    reference: np.ndarray
    accuracy: float

    @classmethod
    def fit(cls, train: DigitImages, *, hidden: tuple[int, ...] = (128, 64), seed: int = 0,
            max_iter: int = 500) -> "DigitScorer":
        """Fit on ``train.x_train``; the reference features and accuracy are on ``train.x_test``."""
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from threadpoolctl import threadpool_limits

        clf = MLPClassifier(hidden, max_iter=max_iter, random_state=seed)
        # one BLAS thread: thousands of tiny matmuls, where more threads only contend (6× slower here)
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(train.x_train.reshape(len(train.x_train), -1).numpy(), train.y_train.numpy())
        scorer = cls(clf, np.zeros((0, hidden[-1])), 0.0)
        x_ref = train.x_test.reshape(len(train.x_test), -1).numpy()
        scorer.reference = scorer.features(train.x_test)
        scorer.accuracy = class_accuracy(clf.predict(x_ref), train.y_test.numpy())
        return scorer

    def features(self, images: torch.Tensor) -> np.ndarray:
        """Penultimate-layer features ``(n, k)`` of images ``(n, 1, 8, 8)``."""
        x = images.detach().cpu().reshape(len(images), -1).double().numpy()
        return mlp_penultimate(self.classifier.coefs_, self.classifier.intercepts_, x)  # type: ignore[attr-defined]

    def score(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
        """``(class accuracy, Fréchet distance to the reference)`` of samples with their labels.

        Non-finite samples are scored as they are: NaN pixels give a NaN distance.
        """
        x = images.detach().cpu().reshape(len(images), -1).double().numpy()
        finite = bool(np.isfinite(x).all())
        pred = self.classifier.predict(np.nan_to_num(x)) if finite else np.full(len(x), -1)  # type: ignore[attr-defined]
        accuracy = class_accuracy(pred, labels.cpu().numpy())
        distance = frechet_distance(self.features(images), self.reference) if finite else float("nan")
        return accuracy, distance
