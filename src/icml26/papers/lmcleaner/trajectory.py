"""Recording an SGD trajectory so that any step's batch can later be deleted.

LMCleaner treats a mini-batch as the atomic unit of deletion: removing the batch
used at step t_z means removing its update u[t_z] = θ[t_z+1] − θ[t_z] and the
update's effect on later steps. :class:`TrajectoryRecorder` attaches to a plain
SGD loop and keeps, for every step t,

* the learning rate η_t and the batch's sample ids S_t;
* either every update u[t] (``checkpoint_every=None``; memory T·p numbers), with
  intermediate parameters rebuilt as θ[s] = θ[τ] − Σ_{t=s}^{τ−1} u[t];
* or a parameter checkpoint every C steps (``checkpoint_every=C``; memory
  ⌈T/C⌉·p numbers), with θ[s] rebuilt by replaying at most C−1 SGD steps from the
  checkpoint before s (this needs the :class:`~.problem.SupervisedProblem`).

Besides ordinary steps the recorder keeps *edit* steps: a change of the parameters
made outside the optimizer (an unlearning correction, added noise). An edit has no
batch, occupies one step index, and propagates as the identity. Steps whose batch
was deleted are *removed*; they stay in the history (they did happen) but the
counterfactual skips them.

Under ``torch.distributed`` (``group``, or the default group when one is initialised) the
recorder is built and driven on every rank in lockstep, as DDP training is: each step's batch
is the union of the ranks' sample ids (gathered), and the history is *sharded by parameters*:
rank r keeps only its contiguous ⌈p/W⌉ slice of every update and checkpoint (per-rank history
memory 1/W). Queries that return full vectors (:meth:`update`, :meth:`params_at`,
:meth:`iter_params`) are collectives that all-gather the slices, so the corrections built on
them come out the same on every rank, and equal to one process's on the union batches.

Only plain SGD (no momentum, no Nesterov) has P[t] = I − η_t·H[t]; any other
optimizer is refused unless ``allow_approximation=True``, in which case the
recorded updates are the optimizer's real updates but propagation still uses
I − η·H (the preconditioner is ignored) and no certificate should be claimed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from typing import Iterator, Literal, Sequence

import torch
from torch import Tensor, nn

from icml26.common.distributed import all_gather_objects, all_gather_slices, shard_bounds, world

from ._checks import finite_vector, integer, number
from ._checks import sample_ids as _sample_ids
from .problem import SupervisedProblem

__all__ = ["StepRecord", "TrajectoryRecorder"]

log = logging.getLogger(__name__)


@dataclasses.dataclass
class StepRecord:
    """What is kept for one step of the trajectory.

    Attributes:
        kind: ``"sgd"`` (an optimizer step on a batch) or ``"edit"`` (a change made
            outside the optimizer).
        lr: η_t (0 for an edit).
        batch_ids: sample ids of S_t, a 1-D CPU ``long`` tensor (empty for an edit).
        removed: the batch was deleted; the counterfactual skips this step.
    """

    kind: Literal["sgd", "edit"]
    lr: float
    batch_ids: Tensor
    removed: bool = False


def _flat(params: Sequence[nn.Parameter]) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in params]).clone()


class TrajectoryRecorder:
    """Records an SGD training run for later batch deletion.

    Use it around each optimizer step::

        recorder = TrajectoryRecorder(model, optimizer)
        for ids in batches:
            with recorder.step(ids):
                loss = F.cross_entropy(model(x[ids]), y[ids])   # the batch's mean loss
                optimizer.zero_grad(); loss.backward(); optimizer.step()

    Args:
        model: the model being trained; θ is its parameters with ``requires_grad``,
            flattened in ``named_parameters()`` order.
        optimizer: the optimizer (its learning rate is read at every step and its
            type is checked); ``None`` means the caller passes ``lr`` to :meth:`step`.
        checkpoint_every: ``None`` stores every update u[t] (T·p numbers);
            an integer C stores θ every C steps (⌈T/C⌉·p numbers) and needs ``problem``.
        problem: the :class:`SupervisedProblem` used to replay SGD steps in
            checkpoint mode.
        allow_approximation: accept a non-SGD optimizer (Adam, momentum) and
            propagate with I − η·H anyway; the result carries no guarantee.
        storage_device: where updates and checkpoints are kept (default: the
            parameters' device; ``"cpu"`` saves accelerator memory).
        group: the ``torch.distributed`` process group of a data-parallel run (default: the
            default group when one is initialised): batch ids are gathered from every rank and
            the history is sharded across ranks (see the module docstring).
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        checkpoint_every: int | None = None,
        problem: SupervisedProblem | None = None,
        allow_approximation: bool = False,
        storage_device: str | torch.device | None = None,
        group=None,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self._params = [p for _, p in model.named_parameters() if p.requires_grad]
        if not self._params:
            raise ValueError("the model has no parameter with requires_grad=True")
        if checkpoint_every is not None:
            if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
                raise ValueError(f"checkpoint_every={checkpoint_every} must be a positive integer or None")
            if problem is None:
                raise ValueError("checkpoint_every needs problem=SupervisedProblem(...) to replay SGD steps")
            if allow_approximation:
                raise ValueError("checkpoint mode replays plain SGD and cannot rebuild a non-SGD run; "
                                 "use checkpoint_every=None with allow_approximation=True")
        self.optimizer = optimizer
        self.checkpoint_every = checkpoint_every
        self.problem = problem
        self.approximate = self._check_optimizer(optimizer, allow_approximation, problem)
        self.storage_device = torch.device(storage_device) if storage_device is not None else self._params[0].device
        self.steps: list[StepRecord] = []
        self._updates: dict[int, Tensor] = {}      # u[t] (every step in dense mode, edits always)
        self._checkpoints: dict[int, Tensor] = {}  # θ[t] for t % C == 0 (checkpoint mode)
        self._theta_last = _flat(self._params)     # θ[num_steps]
        self._steps_of_sample: dict[int, list[int]] = {}  # sample id -> steps whose batch held it
        self._open = False
        self.group = group
        self.rank, self.world_size = world(group)
        self._p = self._theta_last.numel()
        self._lo, self._hi = shard_bounds(self._p, group)  # this rank's slice of every stored vector

    # -- validation ---------------------------------------------------------
    @staticmethod
    def _check_optimizer(optimizer, allow_approximation: bool, problem) -> bool:
        if optimizer is None:
            return False
        reasons = []
        if not isinstance(optimizer, torch.optim.SGD):
            reasons.append(f"the optimizer is {type(optimizer).__name__}, not torch.optim.SGD")
        else:
            for group in optimizer.param_groups:
                if group.get("momentum", 0.0) != 0.0 or group.get("nesterov", False):
                    reasons.append("SGD uses momentum or Nesterov")
                if group.get("maximize", False):
                    reasons.append("SGD maximizes")
                if problem is not None and group.get("weight_decay", 0.0) != problem.l2:
                    raise ValueError(
                        f"optimizer weight_decay={group.get('weight_decay', 0.0)} differs from "
                        f"problem.l2={problem.l2}; set them equal so that recomputed steps match"
                    )
        if reasons and not allow_approximation:
            raise ValueError(
                "LMCleaner's propagator P[t] = I − η_t·H[t] holds for plain SGD only, but "
                + "; ".join(sorted(set(reasons)))
                + ". Train with torch.optim.SGD(momentum=0), or pass allow_approximation=True to "
                "propagate with I − η·H anyway (no certificate)."
            )
        if reasons:
            log.warning("recording a non-SGD run (%s): corrections are approximate, no certificate",
                        "; ".join(sorted(set(reasons))))
        return bool(reasons)

    # -- recording ----------------------------------------------------------
    @property
    def num_steps(self) -> int:
        """τ, the number of recorded steps (the current step index)."""
        return len(self.steps)

    def current_params(self) -> Tensor:
        """θ[τ] as recorded after the last step, shape ``(p,)``."""
        return self._theta_last.clone()

    def _read_model(self) -> Tensor:
        return _flat(self._params)

    def _check_unchanged(self) -> Tensor:
        theta = self._read_model()
        if not torch.equal(theta, self._theta_last.to(theta.device)):
            raise ValueError(
                "the model's parameters changed outside a recorded step; record the change "
                "with recorder.record_edit(new_params) before the next step"
            )
        return theta

    def _store(self, tensor: Tensor) -> Tensor:
        """Keep this rank's slice of a full ``(p,)`` vector (the whole vector on one process)."""
        return tensor.detach()[self._lo:self._hi].to(self.storage_device, copy=True)

    def _full(self, piece: Tensor) -> Tensor:
        """The full vector from every rank's slice (a collective under distributed)."""
        return all_gather_slices(piece, self._p, self.group)

    @contextlib.contextmanager
    def step(self, batch_ids: Tensor | Sequence[int], lr: float | None = None) -> Iterator[None]:
        """Record the optimizer step taken inside the ``with`` block on batch ``batch_ids``.

        Args:
            batch_ids: the sample ids of the batch, 1-D.
            lr: η_t; read from the optimizer when omitted.
        """
        if self._open:
            raise ValueError("recorder.step blocks cannot be nested")
        ids = _sample_ids("batch_ids", batch_ids)
        if ids.numel() == 0:
            raise ValueError("a recorded step needs a non-empty batch of sample ids")
        if self.world_size > 1:  # the step's batch is the union of every rank's batch
            parts = all_gather_objects(ids, self.group)
            sizes = [int(part.numel()) for part in parts]
            if len(set(sizes)) > 1:  # every rank sees the same sizes, so every rank raises (no deadlock)
                raise ValueError(f"the ranks' batches have different sizes {sizes}: DDP averages per-rank mean "
                                 "gradients, so the update is not the union batch's mean that LMCleaner's "
                                 "corrections assume; give every rank the same batch size (DistributedSampler "
                                 "pads to equal shards; drop or pad a short last batch)")
            ids = torch.cat(parts)
        if lr is None:
            if self.optimizer is None:
                raise ValueError("pass lr=... to recorder.step (no optimizer was given)")
            lrs = {float(g["lr"]) for g in self.optimizer.param_groups}
            if len(lrs) != 1:
                raise ValueError(f"parameter groups have different learning rates {sorted(lrs)}; "
                                 "LMCleaner needs one η per step")
            lr = lrs.pop()
        lr = number("lr", lr, low=0.0)
        theta_before = self._check_unchanged()
        t = self.num_steps
        if self.checkpoint_every is not None and t % self.checkpoint_every == 0:
            self._checkpoints[t] = self._store(theta_before)
        self._open = True
        try:
            yield
        finally:
            self._open = False
        theta_after = self._read_model()
        if self.checkpoint_every is None:
            # u[t] = θ[t+1] − θ[t]
            self._updates[t] = self._store(theta_after - theta_before)
        self.steps.append(StepRecord(kind="sgd", lr=float(lr), batch_ids=ids))
        for i in ids.tolist():
            self._steps_of_sample.setdefault(i, []).append(t)
        self._theta_last = theta_after

    @torch.no_grad()
    def record_edit(self, new_params: Tensor) -> None:
        """Write ``new_params`` ``(p,)`` into the model and record the change as an edit step."""
        self._check_unchanged()
        if isinstance(new_params, Tensor) and new_params.numel() != self._theta_last.numel():
            raise ValueError(f"new_params must have {self._theta_last.numel()} entries, got {new_params.numel()}")
        new_params = finite_vector("new_params", new_params, self._theta_last.numel())
        t = self.num_steps
        if self.checkpoint_every is not None and t % self.checkpoint_every == 0:
            self._checkpoints[t] = self._store(self._theta_last)
        theta_old = self._theta_last
        offset = 0
        for p in self._params:
            n = p.numel()
            p.copy_(new_params[offset:offset + n].view_as(p).to(p.device, p.dtype))
            offset += n
        theta_new = self._read_model()
        self._updates[t] = self._store(theta_new - theta_old.to(theta_new.device))
        self.steps.append(StepRecord(kind="edit", lr=0.0, batch_ids=torch.empty(0, dtype=torch.long)))
        self._theta_last = theta_new

    def mark_removed(self, steps: Sequence[int]) -> None:
        """Mark the batches of ``steps`` as deleted (the counterfactual skips them)."""
        for s in steps:
            integer("step", s)
            self._check_step(s)
            if self.steps[s].kind != "sgd":
                raise ValueError(f"step {s} is an edit, not a batch; only batches can be removed")
            self.steps[s].removed = True

    # -- queries ------------------------------------------------------------
    def _check_step(self, s: int, *, upper: int | None = None) -> None:
        integer("step", s, low=-(2**62))
        upper = self.num_steps - 1 if upper is None else upper
        if not 0 <= s <= upper:
            raise ValueError(f"step {s} is outside the recorded range 0..{upper}")

    def lr(self, s: int) -> float:
        """η_s."""
        self._check_step(s)
        return self.steps[s].lr

    def batch_ids(self, s: int) -> Tensor:
        """Sample ids S_s of step s (CPU ``long``; empty for an edit)."""
        self._check_step(s)
        return self.steps[s].batch_ids

    def is_identity(self, s: int) -> bool:
        """Whether step s propagates as the identity (an edit, or a removed batch)."""
        record = self.steps[s]
        return record.kind == "edit" or record.removed

    def steps_using(self, sample_ids: Tensor | Sequence[int], *, include_removed: bool = False) -> list[int]:
        """Steps whose batch contains any of ``sample_ids`` (removed ones only if asked), sorted."""
        wanted = _sample_ids("sample_ids", sample_ids).tolist()
        found = {s for i in wanted for s in self._steps_of_sample.get(i, ())}
        return sorted(s for s in found if include_removed or not self.steps[s].removed)

    def memory_bytes(self) -> int:
        """Bytes held (on this rank) for updates, checkpoints, the last θ and the batch ids (not the id index)."""
        tensors = [self._theta_last] + [r.batch_ids for r in self.steps]
        return self.history_bytes() + int(sum(t.numel() * t.element_size() for t in tensors))

    def history_bytes(self) -> int:
        """Bytes of the stored updates and checkpoints on this rank (1/W of one process's under W ranks)."""
        tensors = [*self._updates.values(), *self._checkpoints.values()]
        return int(sum(t.numel() * t.element_size() for t in tensors))

    # -- rebuilding the trajectory -------------------------------------------
    def update(self, s: int) -> Tensor:
        """u[s] = θ[s+1] − θ[s], shape ``(p,)`` (replayed from a checkpoint in checkpoint mode)."""
        self._check_step(s)
        if s in self._updates:
            return self._full(self._updates[s])
        theta = self.params_at(s)
        return self._advance(theta, s) - theta

    def _advance(self, theta: Tensor, s: int) -> Tensor:
        """θ[s+1] from θ[s], replaying step s as it happened."""
        if s in self._updates:
            return theta + self._full(self._updates[s]).to(theta.device)
        record = self.steps[s]
        device = self._params[0].device
        return self.problem.sgd_step(theta.to(device), record.batch_ids, record.lr).to(theta.device)

    def params_at(self, s: int, params_now: Tensor | None = None, now_step: int | None = None) -> Tensor:
        """θ[s] for 0 ≤ s ≤ τ, shape ``(p,)``.

        Dense mode: θ[s] = θ[τ'] − Σ_{t=s}^{τ'−1} u[t], where θ[τ'] is ``params_now`` at step
        τ' = ``now_step`` (default: the recorded last parameters and step). Checkpoint mode:
        replay from the last checkpoint at or before s (at most C−1 gradient evaluations);
        ``params_now`` is not used.
        """
        return next(self.iter_params(s, s, params_now, now_step))

    def iter_params(self, start: int, stop: int, params_now: Tensor | None = None,
                    now_step: int | None = None) -> Iterator[Tensor]:
        """Yield θ[s] for s = start … stop (inclusive), each ``(p,)``; see :meth:`params_at`.

        The rebuild costs O((τ' − start)·p) additions in dense mode (no gradients) and at
        most C − 1 + (stop − start) SGD replays in checkpoint mode.
        """
        now = self.num_steps if now_step is None else now_step
        self._check_step(now, upper=self.num_steps)
        self._check_step(start, upper=now)
        self._check_step(stop, upper=now)
        if stop < start:
            return
        if self.checkpoint_every is None:
            if params_now is None:
                if now != self.num_steps:
                    raise ValueError(f"now_step={now} is not the last step: pass params_now=θ[{now}] with it")
                params_now = self._theta_last
            # on this rank's slice: θ[start] = θ[τ'] − Σ_{t=start}^{τ'−1} u[t]
            piece = params_now.detach().reshape(-1)[self._lo:self._hi].to(self.storage_device, copy=True)
            for t in range(now - 1, start - 1, -1):
                piece -= self._updates[t]
            for s in range(start, stop + 1):
                yield self._full(piece) if self.world_size > 1 else piece
                if s < stop:
                    piece = piece + self._updates[s]
            return
        c = (start // self.checkpoint_every) * self.checkpoint_every
        if c == self.num_steps and c not in self._checkpoints:
            theta = self._theta_last.clone()
        else:
            theta = self._full(self._checkpoints[c]).clone()
        for t in range(c, start):
            theta = self._advance(theta, t)
        for s in range(start, stop + 1):
            yield theta
            if s < stop:
                theta = self._advance(theta, s)
