import numpy as np
import pytest

from icml26.common.metrics import binary_auc, loss_threshold_mia_auc


def test_auc_hand_computed():
    # Pairs (p, n): (3,1) win, (3,2) win, (2,1) win, (2,2) tie -> (3 + 0.5) / 4
    assert binary_auc([3, 2], [1, 2]) == pytest.approx(3.5 / 4)
    assert binary_auc([5, 6], [1, 2]) == 1.0


def test_mia_auc_low_loss_means_member():
    assert loss_threshold_mia_auc([0.1, 0.2], [1.0, 2.0]) == 1.0
    rng = np.random.default_rng(0)
    same = rng.exponential(size=(2, 20000))
    assert abs(loss_threshold_mia_auc(same[0], same[1]) - 0.5) < 0.01


def test_auc_errors():
    with pytest.raises(ValueError, match="both groups"):
        binary_auc([], [1.0])
    with pytest.raises(ValueError, match="finite"):
        binary_auc([np.nan], [1.0])
