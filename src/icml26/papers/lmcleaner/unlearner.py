"""Serving deletion requests while training runs (LMCleaner's online setting).

:class:`OnlineUnlearner` sits beside a training loop that draws its batches from a
:class:`DataPool` and records its steps with a
:class:`~.trajectory.TrajectoryRecorder`. A request names sample ids D_u; when it
is served at step τ:

1. the affected steps {t : S_t ∩ D_u ≠ ∅, t < τ} are found in the recorder;
2. their updates are removed by the unlearner's *remover*: by default LMCleaner's truncated
   propagation, θ̂ = θ[τ] − Σ_j v_j (:func:`~.propagation.truncated_correction`); any
   :class:`Remover` can take its place (e.g. :class:`ReplayRemover`, the exact counterfactual
   replay), with the same bookkeeping below;
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
from typing import Literal, Protocol, Sequence

import torch
from torch import Tensor

from ._checks import integer
from ._checks import sample_ids as _ids
from .accountant import RDPAccountant
from .hvp import HVP
from .privacy import (
    Certificate,
    _check_basis,
    add_isotropic_noise,
    add_subspace_noise,
    isotropic_noise_scale,
    subspace_noise_scales,
)
from .problem import SupervisedProblem
from .propagation import _check_hvp, truncated_correction
from .trajectory import TrajectoryRecorder

__all__ = ["DataPool", "NoiseSpec", "OnlineUnlearner", "Removal", "Remover", "ReplayRemover", "ServedRequest",
           "TruncatedRemover"]

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
        ids = _ids("sample_ids", sample_ids)
        if ids.numel() == 0:
            raise ValueError("the pool needs at least one sample id")
        batch_size, epochs = integer("batch_size", batch_size, low=1), integer("epochs", epochs, low=1)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
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
        ids = _ids("ids", ids)
        self._active = self._active[~torch.isin(self._active, ids)]
        self._pending = self._pending[~torch.isin(self._pending, ids)]

    def requeue(self, ids: Tensor | Sequence[int]) -> None:
        """Return ``ids`` to the current epoch's unused samples (deferred re-learning)."""
        ids = _ids("ids", ids)
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
        if self.basis is not None:
            _check_basis(self.basis, self.basis.shape[0] if isinstance(self.basis, Tensor) and self.basis.ndim else -1)
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


@dataclasses.dataclass(frozen=True)
class Removal:
    """What a remover did to the parameters for one request.

    Attributes:
        params: θ̂ ``(p,)`` after removing the deleted batches' influence (before any noise).
        grad_equivalents: compute in mini-batch gradients.
        hvp_calls: Hessian-vector products (0 for a replay).
        windows: K* per deleted batch (empty for a replay).
        correction_norm: ‖θ[τ] − θ̂‖.
    """

    params: Tensor
    grad_equivalents: float
    hvp_calls: int = 0
    windows: tuple[int, ...] = ()
    correction_norm: float = 0.0


class Remover(Protocol):
    """``remover(recorder, params_now, steps, now_step, sample_ids) -> Removal``: removes the
    recorded batches ``steps`` (all before ``now_step``, each holding some of ``sample_ids``)."""

    def __call__(self, recorder: TrajectoryRecorder, params_now: Tensor, steps: list[int], now_step: int,
                 sample_ids: Tensor) -> Removal: ...


@dataclasses.dataclass
class TruncatedRemover:
    """LMCleaner's removal: θ̂ = θ[τ] − Σ_j v_j by truncated propagation over ``window`` steps."""

    hvp: HVP
    window: int

    def __post_init__(self) -> None:
        _check_hvp(self.hvp)
        self.window = integer("window", self.window)

    def __call__(self, recorder: TrajectoryRecorder, params_now: Tensor, steps: list[int], now_step: int,
                 sample_ids: Tensor) -> Removal:
        correction = truncated_correction(recorder, params_now, steps, now_step, window=self.window, hvp=self.hvp)
        # θ̂ = θ[τ] − Σ_j v_j
        return Removal(params=params_now - correction.vector, grad_equivalents=correction.grad_equivalents,
                       hvp_calls=correction.hvp_calls, windows=correction.windows,
                       correction_norm=float(correction.vector.norm()))


@dataclasses.dataclass
class ReplayRemover:
    """The exact counterfactual: replay from the first deleted step without the deleted batches
    (:func:`~.baselines.replay_counterfactual`); θ̂ = θ_ideal, cost τ − t_z − #deleted gradients."""

    problem: SupervisedProblem

    def __post_init__(self) -> None:
        if not isinstance(self.problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem, got {type(self.problem).__name__}")

    def __call__(self, recorder: TrajectoryRecorder, params_now: Tensor, steps: list[int], now_step: int,
                 sample_ids: Tensor) -> Removal:
        from .baselines import replay_counterfactual

        exact = replay_counterfactual(self.problem, recorder, params_now, sample_ids, now_step)
        return Removal(params=exact.params, grad_equivalents=exact.grad_equivalents,
                       correction_norm=float((params_now - exact.params).norm()))


class OnlineUnlearner:
    """Serves a queue of deletion requests during training with LMCleaner.

    Args:
        problem: the model, loss and data.
        recorder: the recorder attached to the training loop (dense or checkpoint mode).
        hvp: HVP backend (:func:`~.hvp.make_hvp`) of the default remover.
        window: truncation window K of the default remover.
        remover: how the deleted batches' influence is removed (default:
            ``TruncatedRemover(hvp, window)``, LMCleaner); e.g. ``ReplayRemover(problem)`` serves
            requests by exact replay with the same pool, ledger and recorder bookkeeping.
        pool: the :class:`DataPool` the loop draws from (``None``: nothing is removed
            from or returned to a pool).
        noise: noise for certification (``None``: no noise, no certificate).
        accountant: the privacy ledger (a fresh :class:`RDPAccountant` by default).
        generator: torch generator for the noise.
    """

    def __init__(self, problem: SupervisedProblem, recorder: TrajectoryRecorder, *, hvp: HVP | None = None,
                 window: int | None = None, remover: Remover | None = None, pool: DataPool | None = None,
                 noise: NoiseSpec | None = None, accountant: RDPAccountant | None = None,
                 generator: torch.Generator | None = None) -> None:
        if not isinstance(problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
        if not isinstance(recorder, TrajectoryRecorder):
            raise TypeError(f"recorder must be a TrajectoryRecorder, got {type(recorder).__name__}")
        if remover is None:
            if hvp is None or window is None:
                raise ValueError("pass hvp= and window= (LMCleaner's truncated removal) or a remover=")
            window = integer("window", window, low=-(2**62))
            if window < 0:
                raise ValueError(f"window={window} must be non-negative")
            remover = TruncatedRemover(hvp, window)
        elif not callable(remover):
            raise TypeError(f"remover must be a callable Remover, got {type(remover).__name__}")
        if pool is not None and not isinstance(pool, DataPool):
            raise TypeError(f"pool must be a DataPool or None, got {type(pool).__name__}")
        if noise is not None and noise.basis is not None and noise.basis.shape[0] != problem.num_params:
            raise ValueError(f"noise.basis has {noise.basis.shape[0]} rows but the model has {problem.num_params} "
                             "parameters; build it with random_basis(problem.num_params, k)")
        if noise is not None and recorder.approximate:
            raise ValueError("the recorded run is not plain SGD (allow_approximation=True); "
                             "no certificate can be issued, so do not pass noise=")
        self.problem = problem
        self.recorder = recorder
        self.hvp = hvp
        self.window = window
        self.remover = remover
        self.pool = pool
        self.noise = noise
        self.accountant = accountant or RDPAccountant()
        self.generator = generator
        self._queue: list[tuple[int, Tensor]] = []
        self._next_id = 0
        self.served: list[ServedRequest] = []

    def request(self, sample_ids: Tensor | Sequence[int]) -> int:
        """Queue a request to delete ``sample_ids``; they leave the pool at once. Returns its id."""
        ids = _ids("sample_ids", sample_ids)
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
            removal = None
            new_params = params_now
        else:
            removal = self.remover(rec, params_now, steps, now, ids)
            new_params = removal.params
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
            windows=removal.windows if removal else (), hvp_calls=removal.hvp_calls if removal else 0,
            grad_equivalents=removal.grad_equivalents if removal else 0.0, requeued=requeued,
            correction_norm=removal.correction_norm if removal else 0.0,
            certificate=certificate, epsilon_spent=eps_spent)
