"""The two training objectives of InstEmb: InfoNCE on the anchor state and look-ahead distillation.

* :func:`info_nce`: in-batch InfoNCE on cosine similarities, ``keys[i]`` the positive of
  ``queries[i]`` and every other row a negative (the paper's input-intrinsic contrastive loss;
  τ = 0.05 is our default, the paper does not give it).
* :func:`distill_loss`: the output-aware self-distillation that pulls the student's
  look-ahead states toward the teacher's states over the gold output. ``"mse"``: squared
  distance between the L2-normalised means over positions (plus an optional position-wise
  term); ``"kl"``: KL(teacher ‖ student) between the LM-head distributions, position by
  position. The mapping between the K look-ahead and the L output positions is not published;
  ours is documented on each function.

:func:`instemb_loss` combines them over the student, teacher and answer passes of an
:class:`~icml26.papers.instemb.model.InstEmbModel` (its :meth:`~InstEmbModel.loss`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.papers.instemb.data import Example

if TYPE_CHECKING:
    from icml26.papers.instemb.model import InstEmbModel

__all__ = ["InstEmbLoss", "distill_loss", "info_nce", "instemb_loss"]


def info_nce(queries: Tensor, keys: Tensor, tau: float = 0.05) -> Tensor:
    """In-batch InfoNCE: ``mean_i -log softmax_j(cos(q_i, k_j) / tau)[i]``.

    Args:
        queries: ``(B, d)`` query embeddings (any norm; cosine similarity is used).
        keys: ``(B, d)`` keys; ``keys[i]`` is the positive of ``queries[i]``, the other rows its
            negatives.
        tau: temperature τ > 0.

    Returns:
        The scalar loss, ``ln B`` when all similarities are equal. NaN in the inputs propagates.
    """
    if not isinstance(queries, Tensor) or not isinstance(keys, Tensor):
        raise TypeError("queries and keys must be torch tensors")
    if queries.ndim != 2 or keys.ndim != 2 or queries.shape != keys.shape:
        raise ValueError(f"queries {tuple(queries.shape)} and keys {tuple(keys.shape)} must both be (B, d), same shape")
    if queries.shape[0] < 1:
        raise ValueError("queries must hold at least one row")
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not math.isfinite(tau) or tau <= 0:
        raise ValueError(f"tau={tau!r} must be a positive finite temperature")
    # s_ij = cos(q_i, k_j) / tau
    logits = F.normalize(queries, dim=-1) @ F.normalize(keys, dim=-1).T / tau
    # L = mean_i -log( e^{s_ii} / sum_j e^{s_ij} )
    labels = torch.arange(queries.shape[0], device=queries.device)
    return F.cross_entropy(logits, labels)


def _masked_mean(x: Tensor, mask: Tensor | None) -> Tensor:
    if mask is None:
        return x.mean(dim=1)
    m = mask.to(x.dtype).unsqueeze(-1)
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)


def distill_loss(student_la: Tensor, teacher_out: Tensor, kind: str = "mse", *,
                 teacher_mask: Tensor | None = None, positionwise: float = 0.0,
                 temperature: float = 1.0) -> Tensor:
    """Self-distillation of the look-ahead states toward the teacher's output states.

    Args:
        student_la: ``(B, K, d)`` hidden states of the student at the K look-ahead positions
            (``kind="kl"``: ``(B, K, V)`` LM-head logits there).
        teacher_out: ``(B, L, d)`` hidden states of the teacher at the L gold-output positions
            (``kind="kl"``: ``(B, L, V)`` logits); gradients are not taken through it (detached).
        kind: ``"mse"`` or ``"kl"``.
        teacher_mask: ``(B, L)``, 1 where the output position is real, 0 where it is padding
            (default: all real).
        positionwise: ``"mse"`` only: weight of the added position-wise term, look-ahead ``k``
            against output token ``k`` for ``k < min(K, L_b)``.
        temperature: ``"kl"`` only: softmax temperature T (the loss is scaled by T²).

    Returns:
        The scalar loss, averaged over the batch.

        * ``"mse"``: ``mean_b |n(mean_k s_bk) - n(mean_j t_bj)|²`` (= 2 - 2 cos), zero iff the two
          normalised means coincide, plus ``positionwise * mean_{b,k} |n(s_bk) - n(t_bk)|²``.
        * ``"kl"``: ``T² mean_{b,k} KL(softmax(t_bk / T) ‖ softmax(s_bk / T))`` over
          ``k < min(K, L_b)``: look-ahead ``k`` predicts what the teacher predicts after output
          token ``k``. Zero iff those distributions match.

        NaN in the inputs propagates.
    """
    if not isinstance(student_la, Tensor) or not isinstance(teacher_out, Tensor):
        raise TypeError("student_la and teacher_out must be torch tensors")
    if kind not in ("mse", "kl"):
        raise ValueError(f"kind={kind!r} must be 'mse' or 'kl'")
    if student_la.ndim != 3 or teacher_out.ndim != 3:
        raise ValueError(f"student_la {tuple(student_la.shape)} and teacher_out {tuple(teacher_out.shape)} "
                         "must be 3-D: (B, K, d) and (B, L, d)")
    if student_la.shape[0] != teacher_out.shape[0] or student_la.shape[2] != teacher_out.shape[2]:
        raise ValueError(f"student_la {tuple(student_la.shape)} and teacher_out {tuple(teacher_out.shape)} "
                         "must agree in batch and last dimension")
    if student_la.shape[1] < 1:
        raise ValueError("student_la has K = 0 look-ahead positions; distillation needs num_lookahead >= 1")
    if teacher_out.shape[1] < 1:
        raise ValueError("teacher_out has no output position; the gold output must have at least one token")
    B, L = teacher_out.shape[:2]
    if teacher_mask is None:
        teacher_mask = torch.ones(B, L, dtype=torch.bool, device=teacher_out.device)
    elif teacher_mask.shape != (B, L):
        raise ValueError(f"teacher_mask {tuple(teacher_mask.shape)} must be (B, L) = {(B, L)}")
    teacher_mask = teacher_mask.bool()
    if not teacher_mask.any(dim=1).all():
        raise ValueError("teacher_mask has a row without any output position")
    for name, w in (("positionwise", positionwise), ("temperature", temperature)):
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"{name}={w!r} must be a finite non-negative number")
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be positive")
    teacher_out = teacher_out.detach()
    K = student_la.shape[1]
    # position k is compared when k < min(K, L_b)
    pos_mask = teacher_mask[:, :K]
    if pos_mask.shape[1] < K:
        pos_mask = F.pad(pos_mask, (0, K - pos_mask.shape[1]), value=False)
    paired_t = teacher_out[:, :K]
    if paired_t.shape[1] < K:
        paired_t = F.pad(paired_t, (0, 0, 0, K - paired_t.shape[1]))
    if kind == "mse":
        # L_mse = | n(mean_k h_LA) - n(mean_j h_out) |^2
        s = F.normalize(student_la.mean(dim=1), dim=-1)
        t = F.normalize(_masked_mean(teacher_out, teacher_mask), dim=-1)
        loss = (s - t).pow(2).sum(-1).mean()
        if positionwise > 0:
            per = (F.normalize(student_la, dim=-1) - F.normalize(paired_t, dim=-1)).pow(2).sum(-1)
            loss = loss + positionwise * (per * pos_mask).sum() / pos_mask.sum().clamp_min(1)
        return loss
    # L_kl = T^2 KL( softmax(t/T) || softmax(s/T) ), position-wise
    log_p_t = F.log_softmax(paired_t / temperature, dim=-1)
    log_p_s = F.log_softmax(student_la / temperature, dim=-1)
    kl = (log_p_t.exp() * (log_p_t - log_p_s)).sum(-1)
    return temperature ** 2 * (kl * pos_mask).sum() / pos_mask.sum().clamp_min(1)


@dataclasses.dataclass
class InstEmbLoss:
    """The parts of :meth:`InstEmbModel.loss` (``total = contrastive + λ distill``)."""

    total: Tensor
    contrastive: Tensor
    distill: Tensor
    per_view: dict[str, Tensor]


def _out_index(eos_at: list[int], outputs: list[list[int]], like: Any) -> Tensor:
    """Positions of the gold output tokens after each prompt's anchor, ``(B, max output length)``."""
    L = max(len(o) for o in outputs)
    device = like.device if isinstance(like, Tensor) else like.hidden.device
    return torch.tensor([[e + 1 + j for j in range(L)] for e in eos_at], device=device)


def instemb_loss(model: InstEmbModel, batch: Sequence[Example], return_parts: bool = False) -> Tensor | InstEmbLoss:
    """InstEmb's training loss of ``model`` on a batch of :class:`Example` (instruction, input, gold output).

    ``L = mean_v InfoNCE(h_eos, view_v) + λ · L_dist(h_LA, teacher output states)``.
    Returns the scalar ``L`` (``return_parts=True``: an :class:`InstEmbLoss`).
    """
    batch = list(batch)
    if len(batch) < 2:
        raise ValueError(f"batch has {len(batch)} example(s); in-batch negatives need at least 2")
    if not all(isinstance(e, Example) for e in batch):
        raise TypeError("batch must hold icml26.papers.instemb.Example objects")
    s = model.settings
    needs_teacher = "teacher" in s.views or s.distill_weight > 0
    if needs_teacher and not model.has_teacher:
        raise ValueError("the teacher view and distillation need a teacher; wrap with with_teacher=True")
    K = model.num_lookahead
    prompts = [model._prompt_ids(model.prompt(e.text, e.instruction)) for e in batch]
    outputs = [model._output_ids(e.output) for e in batch]
    eos_at = [len(r) - 1 for r in prompts]

    # 1. student: [instruction + input] <eos> [LA_1..LA_K]
    student = model._run(model.backbone, prompts, lookahead=True)
    h_eos, h_la = model._anchors(student, eos_at, K)
    per_view: dict[str, Tensor] = {}
    teacher_pass = None
    if needs_teacher:
        # 2. teacher: [instruction + input] <eos> [gold output] (frozen)
        closing = [model._anchor_id()] if model.kind == "encoder" else []
        with model.teacher_scope() as teacher:
            teacher_pass = model._run(teacher, [p + o + closing for p, o in zip(prompts, outputs)], lookahead=False)
            head_t = teacher.get_output_embeddings() if s.distill == "kl" and s.distill_weight > 0 else None
            teacher_logits = head_t(model._take(teacher_pass, _out_index(eos_at, outputs, teacher_pass))) \
                if head_t is not None else None
    for view in s.views:
        if view == "dropout":
            # a second, dropout-perturbed pass of the student (SimCSE)
            drop = model._run(model.backbone, prompts, lookahead=True, dropout=s.embedding_dropout)
            key = model._anchors(drop, eos_at, 0)[0]
        elif view == "teacher":
            key = model._anchors(teacher_pass, eos_at, 0)[0]
        else:
            # 3. answer encoder: [output] <eos>, the student itself
            answers = [model._prompt_ids(e.output) for e in batch]
            key = model._anchors(model._run(model.backbone, answers, lookahead=False),
                                [len(a) - 1 for a in answers], 0)[0]
        per_view[view] = info_nce(h_eos, key, s.tau)
    contrastive = torch.stack(list(per_view.values())).mean()
    distill = h_eos.new_zeros(())
    if s.distill_weight > 0:
        L = max(len(o) for o in outputs)
        out_idx = _out_index(eos_at, outputs, h_eos)
        out_mask = torch.tensor([[j < len(o) for j in range(L)] for o in outputs], device=h_eos.device)
        t_out = model._take(teacher_pass, out_idx)
        if s.distill == "kl":
            head_s = model.backbone.get_output_embeddings()
            distill = distill_loss(head_s(h_la), teacher_logits, "kl", teacher_mask=out_mask,
                                   temperature=s.kl_temperature)
        else:
            distill = distill_loss(h_la, t_out, "mse", teacher_mask=out_mask, positionwise=s.positionwise)
    # L = L_con + λ L_dist
    total = contrastive + s.distill_weight * distill
    if return_parts:
        return InstEmbLoss(total=total, contrastive=contrastive, distill=distill, per_view=per_view)
    return total
