"""Serving deletion requests while training runs (LMCleaner's online setting).

:class:`OnlineUnlearner` sits beside a training loop that draws its batches from a
:class:`DataPool` and records its steps with a
:class:`~.trajectory.TrajectoryRecorder`. A request names sample ids D_u; when it
is served at step τ:

1. the affected steps {t : S_t ∩ D_u ≠ ∅, t < τ} are found in the recorder;
2. their updates are removed by truncated propagation,
   θ̂ = θ[τ] − Σ_j v_j (:func:`~.propagation.truncated_correction`);
3. optionally subspace-aware (or isotropic) noise is added, and the release's
   Gaussian shift μ is entered in the Rényi-DP ledger;
4. θ̂ is written into the model as a recorded edit, the affected steps are marked
   removed, D_u leaves the pool for good, and the *benign* samples of the removed
   batches (S_t ∖ D_u) go back to the pool to be learned again (deferred re-learning).

Requests are served one at a time, each as one Gaussian release.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Literal, Sequence

import torch
from torch import Tensor

from .accountant import RDPAccountant
from .hvp import HVP
from .privacy import (
    Certificate,
    add_isotropic_noise,
    add_subspace_noise,
    isotropic_noise_scale,
    subspace_noise_scales,
)
from .problem import SupervisedProblem
from .propagation import truncated_correction
from .trajectory import TrajectoryRecorder

__all__ = ["DataPool", "NoiseSpec", "OnlineUnlearner", "ServedRequest"]

log = logging.getLogger(__name__)


class DataPool:
    """Sample ids served in shuffled mini-batches over one or more epochs.

    ``remove(ids)`` takes samples out for good; ``requeue(ids)`` returns samples to
    the current epoch's unused pool (reshuffled with the rest of it).

    Args:
        sample_ids: the training sample ids.
        batch_size: B.
        epochs: passes over the data (1 = the paper's single-pass setting).
        generator: torch generator for the shuffles (``None``: no shuffling).
    """

    def __init__(self, sample_ids: Tensor | Sequence[int], batch_size: int, *, epochs: int = 1,
                 generator: torch.Generator | None = None) -> None:
        ids = torch.as_tensor(sample_ids, dtype=torch.long).reshape(-1).cpu()
        if ids.numel() == 0:
            raise ValueError("the pool needs at least one sample id")
        if batch_size < 1 or epochs < 1:
            raise ValueError(f"batch_size={batch_size} and epochs={epochs} must be positive")
        self.batch_size = batch_size
        self.epochs_left = epochs
        self.generator = generator
        self._active = ids
        self._pending = torch.empty(0, dtype=torch.long)
        self.epoch = 0

    def _shuffle(self, ids: Tensor) -> Tensor:
        if self.generator is None:
            return ids.clone()
        return ids[torch.randperm(ids.numel(), generator=self.generator)]

    def next_batch(self) -> Tensor | None:
        """The next batch of ids (the last one of an epoch may be smaller), or ``None`` at the end."""
        if self._pending.numel() == 0:
            if self.epochs_left == 0 or self._active.numel() == 0:
                return None
            self.epochs_left -= 1
            self.epoch += 1
            self._pending = self._shuffle(self._active)
        batch, self._pending = self._pending[: self.batch_size], self._pending[self.batch_size:]
        return batch

    def remove(self, ids: Tensor | Sequence[int]) -> None:
        """Never serve ``ids`` again."""
        ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1).cpu()
        self._active = self._active[~torch.isin(self._active, ids)]
        self._pending = self._pending[~torch.isin(self._pending, ids)]

    def requeue(self, ids: Tensor | Sequence[int]) -> None:
        """Return ``ids`` to the current epoch's unused samples (deferred re-learning)."""
        ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1).cpu()
        ids = ids[torch.isin(ids, self._active) & ~torch.isin(ids, self._pending)]
        if ids.numel():
            self._pending = self._shuffle(torch.cat([self._pending, ids]))

    @property
    def remaining(self) -> int:
        """Samples left in the current epoch."""
        return int(self._pending.numel())


@dataclasses.dataclass(frozen=True)
class NoiseSpec:
    """Noise added to every served request.

    Attributes:
        sensitivity: the public bound Δ̄ (required for any certificate).
        epsilon, delta: the per-request (ε, δ).
        mode: ``"subspace"`` (needs ``basis`` and ``beta``) or ``"isotropic"``.
        basis: Q ``(p, k)`` orthonormal, chosen without private data.
        beta: concentration factor β ∈ (0, 1].
    """

    sensitivity: float
    epsilon: float
    delta: float
    mode: Literal["subspace", "isotropic"] = "subspace"
    basis: Tensor | None = None
    beta: float = 0.1

    def __post_init__(self) -> None:
        if self.mode not in ("subspace", "isotropic"):
            raise ValueError(f"mode={self.mode!r} must be 'subspace' or 'isotropic'")
        if self.mode == "subspace" and self.basis is None:
            raise ValueError("subspace noise needs basis=Q (random_basis or hessian_basis)")
        # refuse a missing Δ̄ or a bad (ε, δ, β) here, not half-way through serving a request
        if self.mode == "subspace":
            subspace_noise_scales(self.sensitivity, self.epsilon, self.delta, self.beta)
        else:
            isotropic_noise_scale(self.sensitivity, self.epsilon, self.delta)


@dataclasses.dataclass
class ServedRequest:
    """What serving one request did.

    Attributes:
        request_id: order of arrival (0, 1, …).
        sample_ids: D_u.
        now_step: τ at which it was served.
        deleted_steps: the removed batches' steps t_j, and ``windows`` their K*.
        hvp_calls, grad_equivalents: compute spent.
        requeued: benign samples returned to the pool.
        correction_norm: ‖Σ v_j‖.
        certificate: the release's (ε, δ) statement, or ``None`` without noise.
        epsilon_spent: the ledger's ε at δ = ``NoiseSpec.delta`` over all requests so far (RDP),
            ``None`` without noise.
    """

    request_id: int
    sample_ids: Tensor
    now_step: int
    deleted_steps: tuple[int, ...]
    windows: tuple[int, ...]
    hvp_calls: int
    grad_equivalents: float
    requeued: Tensor
    correction_norm: float
    certificate: Certificate | None
    epsilon_spent: float | None


class OnlineUnlearner:
    """Serves a queue of deletion requests during training with LMCleaner.

    Args:
        problem: the model, loss and data.
        recorder: the recorder attached to the training loop (dense or checkpoint mode).
        hvp: HVP backend (:func:`~.hvp.make_hvp`).
        window: truncation window K.
        pool: the :class:`DataPool` the loop draws from (``None``: nothing is removed
            from or returned to a pool).
        noise: noise for certification (``None``: no noise, no certificate).
        accountant: the privacy ledger (a fresh :class:`RDPAccountant` by default).
        generator: torch generator for the noise.
    """

    def __init__(self, problem: SupervisedProblem, recorder: TrajectoryRecorder, *, hvp: HVP, window: int,
                 pool: DataPool | None = None, noise: NoiseSpec | None = None,
                 accountant: RDPAccountant | None = None, generator: torch.Generator | None = None) -> None:
        if window < 0:
            raise ValueError(f"window={window} must be non-negative")
        if noise is not None and recorder.approximate:
            raise ValueError("the recorded run is not plain SGD (allow_approximation=True); "
                             "no certificate can be issued, so do not pass noise=")
        self.problem = problem
        self.recorder = recorder
        self.hvp = hvp
        self.window = window
        self.pool = pool
        self.noise = noise
        self.accountant = accountant or RDPAccountant()
        self.generator = generator
        self._queue: list[tuple[int, Tensor]] = []
        self._next_id = 0
        self.served: list[ServedRequest] = []

    def request(self, sample_ids: Tensor | Sequence[int]) -> int:
        """Queue a request to delete ``sample_ids``; they leave the pool at once. Returns its id."""
        ids = torch.as_tensor(sample_ids, dtype=torch.long).reshape(-1).cpu()
        if ids.numel() == 0:
            raise ValueError("a deletion request needs at least one sample id")
        if self.pool is not None:
            self.pool.remove(ids)
        rid = self._next_id
        self._next_id += 1
        self._queue.append((rid, ids))
        return rid

    @property
    def pending(self) -> int:
        """Requests waiting to be served."""
        return len(self._queue)

    def serve(self) -> list[ServedRequest]:
        """Serve every queued request at the current step; returns what was done."""
        done = []
        while self._queue:
            rid, ids = self._queue.pop(0)
            done.append(self._serve_one(rid, ids))
        self.served.extend(done)
        return done

    def _serve_one(self, rid: int, ids: Tensor) -> ServedRequest:
        rec = self.recorder
        now = rec.num_steps
        params_now = rec.current_params()
        steps = rec.steps_using(ids)
        if not steps:
            log.info("request %d: no recorded batch used these samples; nothing to remove", rid)
            correction = None
            new_params = params_now
        else:
            correction = truncated_correction(rec, params_now, steps, now, window=self.window, hvp=self.hvp)
            # θ̂ = θ[τ] − Σ_j v_j
            new_params = params_now - correction.vector
        certificate, eps_spent = None, None
        if self.noise is not None:
            spec = self.noise
            if spec.mode == "subspace":
                release = add_subspace_noise(new_params, spec.basis, sensitivity=spec.sensitivity,
                                             epsilon=spec.epsilon, delta=spec.delta, beta=spec.beta,
                                             generator=self.generator)
            else:
                release = add_isotropic_noise(new_params, sensitivity=spec.sensitivity, epsilon=spec.epsilon,
                                              delta=spec.delta, generator=self.generator)
            new_params = release.params
            certificate = release.certificate
            self.accountant.add_gaussian(certificate.mu)
            eps_spent, _ = self.accountant.epsilon(spec.delta)
        if steps:
            rec.mark_removed(steps)
        rec.record_edit(new_params)
        requeued = torch.empty(0, dtype=torch.long)
        if steps:
            batch_ids = torch.cat([rec.batch_ids(s) for s in steps]).unique()
            requeued = batch_ids[~torch.isin(batch_ids, ids)]
            if self.pool is not None:
                self.pool.requeue(requeued)
        return ServedRequest(
            request_id=rid, sample_ids=ids, now_step=now, deleted_steps=tuple(steps),
            windows=correction.windows if correction else (), hvp_calls=correction.hvp_calls if correction else 0,
            grad_equivalents=correction.grad_equivalents if correction else 0.0, requeued=requeued,
            correction_norm=float(correction.vector.norm()) if correction else 0.0,
            certificate=certificate, epsilon_spent=eps_spent)
