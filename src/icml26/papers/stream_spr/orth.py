"""Orthogonal gradient transforms of Nilaksh et al. 2026 (arXiv 2602.09396), usable on any model.

**orth** (:class:`OrthogonalMomentum`; Han et al., CVPR 2025, arXiv 2504.01961): for one
parameter group G, flattened, with c₀ = 0,

    u_t = g_t − (⟨g_t, c_{t−1}⟩ / (‖c_{t−1}‖² + ε)) · c_{t−1}
    c_t = β·c_{t−1} + (1−β)·u_t          (``momentum_source="projected"``, stream-rep-rl's StreamQ)
    c_t = β·c_{t−1} + (1−β)·g_t          (``momentum_source="raw"``, its Stream AC and Han et al.)

Streaming samples are strongly correlated, so consecutive auxiliary gradients are nearly
collinear; removing their component along the running direction stops the auxiliary loss
from pushing the weights along one direction step after step. Fed the same g forever, the
projected variant gives u₁ = g and u_t = 0 afterwards: the parameters move by one step.

**orth²** (:func:`project_out`): the auxiliary (SPR) encoder update s is made orthogonal
to the RL optimizer's actual encoder update Δ of the same step, whatever the sign of
⟨s, Δ⟩ (unlike PCGrad, which acts only on conflicts):

    s ← s − (⟨s, Δ⟩ / (‖Δ‖² + ε)) · Δ.

Both treat a list of tensors as one flat vector.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Literal, Sequence, TypeVar

import torch

from icml26.common.argcheck import check_real

__all__ = ["OrthogonalMomentum", "cosine", "project_out", "project_out_cosines"]

log = logging.getLogger(__name__)

T = TypeVar("T", torch.Tensor, Sequence[torch.Tensor])
MomentumSource = Literal["projected", "raw"]


def _as_list(x) -> tuple[list[torch.Tensor], bool]:
    if isinstance(x, torch.Tensor):
        return [x], True
    try:
        out = list(x)
    except TypeError:
        raise TypeError(f"expected a tensor or a list of tensors, got {type(x).__name__}") from None
    if not all(isinstance(t, torch.Tensor) for t in out):
        raise TypeError("expected a tensor or a list of tensors")
    return out, False


def _dot(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> torch.Tensor:
    return sum((torch.vdot(x.reshape(-1), y.reshape(-1)) for x, y in zip(a, b)),
               start=torch.zeros((), dtype=a[0].dtype, device=a[0].device))


def _safe_ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num/den, and 0 where den is 0 (then num is 0 too: the reference vector is zero)."""
    return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(num))


def _all_finite(tensors: Sequence[torch.Tensor]) -> bool:
    """Whether every entry of every tensor is finite.

    A NaN or ±inf entry makes its tensor's sum NaN or ±inf (nothing cancels an infinity back to a
    finite number), so finite sums prove every entry finite: that cheap test (one vectorized sum
    per tensor) settles the common case, and the elementwise ``isfinite`` test (about 30 times
    slower on CPU) runs only when a sum is not finite, i.e. for a NaN/inf entry or a sum that
    overflowed. The answer is the elementwise test's in every case.
    """
    if bool(torch.isfinite(torch.stack([t.sum() for t in tensors])).all()):
        return True
    return bool(torch.stack([torch.isfinite(t).all() for t in tensors]).all())


def _projection_rescaled(g: Sequence[torch.Tensor], c: Sequence[torch.Tensor], eps: float) -> list[torch.Tensor]:
    """``g − (⟨g, c⟩ / (‖c‖² + ε)) c`` evaluated on ĉ = c / max|c| (the same value, no overflow):
    ``g − (⟨g, ĉ⟩ / (‖ĉ‖² + ε / m²)) ĉ`` with ``m = max|c|``."""
    m = torch.stack([x.abs().max() for x in c if x.numel()]).max() if any(x.numel() for x in c) else None
    if m is None or not bool(m > 0):
        return [x.clone() for x in g]  # c = 0: nothing to project out
    # the ratio of two maxima, not a square, so ĉ is exactly representable in scale
    unit = [x / m for x in c]
    gs = torch.stack([x.abs().max() for x in g if x.numel()]).max()
    scale = torch.where(gs > 0, gs, torch.ones_like(gs))
    # ⟨g, ĉ⟩ on g / max|g| as well, then scaled back: nothing squares a huge number
    coef = _safe_ratio(_dot([x / scale for x in g], unit), _dot(unit, unit) + eps / (m * m)) * scale
    return [x - coef * y for x, y in zip(g, unit)]


def cosine(a: T, b: T) -> float:
    """cos(a, b) of two tensors (or two lists of tensors taken as flat vectors); 0 if either is 0.

    NaN in either gives NaN.
    """
    la, _ = _as_list(a)
    lb, _ = _as_list(b)
    if len(la) != len(lb):
        raise ValueError(f"cosine: {len(la)} tensors against {len(lb)}")
    if not la:
        return 0.0
    na, nb = float(_dot(la, la)), float(_dot(lb, lb))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(_dot(la, lb)) / (na ** 0.5 * nb ** 0.5)


def project_out(update: T, reference: T, eps: float = 0.0) -> T:
    """orth²: ``update − (⟨update, reference⟩ / (‖reference‖² + eps))·reference``.

    Args:
        update: a tensor, or a list of tensors taken as one flat vector (e.g. the SPR
            encoder update, one tensor per encoder parameter).
        reference: same structure and shapes (e.g. the ObGD encoder update α̂·δ·z_enc).
        eps: added to ‖reference‖². The default 0 projects exactly (a zero reference leaves
            ``update`` unchanged); stream-rep-rl uses 1e-8, which leaks a parallel
            component once ‖reference‖² is comparable to 1e-8.

    Returns:
        The projected update, with the structure of ``update``. NaN in either input gives NaN
        (documented; :class:`OrthogonalMomentum` is the one that guards its state).
    """
    check_real(eps, "eps", low=0.0)
    lu, lr, single = _pair(update, reference, "project_out")
    if not lu:
        return []
    coef = _safe_ratio(_dot(lu, lr), _dot(lr, lr) + eps)
    out = [u - coef * r for u, r in zip(lu, lr)]
    return out[0] if single else out


def _pair(update: Any, reference: Any, fn: str) -> tuple[list[torch.Tensor], list[torch.Tensor], bool]:
    """``update`` and ``reference`` as lists of tensors with equal shapes, and whether ``update`` was
    a single tensor; a mismatch raises ``ValueError`` naming ``fn``."""
    lu, single = _as_list(update)
    lr, _ = _as_list(reference)
    if len(lu) != len(lr) or any(u.shape != r.shape for u, r in zip(lu, lr)):
        raise ValueError(f"{fn}: update and reference must have the same tensors and shapes")
    return lu, lr, single


def _cosine_of(aa: float, bb: float, ab: float) -> float:
    """:func:`cosine` from the inner products ``⟨a, a⟩``, ``⟨b, b⟩`` and ``⟨a, b⟩`` (as Python floats)."""
    if aa == 0.0 or bb == 0.0:
        return 0.0
    return ab / (aa ** 0.5 * bb ** 0.5)


def project_out_cosines(update: Sequence[torch.Tensor], reference: Sequence[torch.Tensor],
                        eps: float = 0.0) -> tuple[list[torch.Tensor], float, float]:
    """``project_out(update, reference, eps)`` with ``cosine(update, reference)`` before and after it.

    The same three values as the three calls, bit for bit (each inner product is computed by the
    same :func:`_dot` on the same tensors, the quotients by the same operations), with each inner
    product computed once instead of up to three times and one synchronization per stage: orth²'s
    hot path (one call per SPR update).

    Args:
        update, reference: lists of tensors taken as flat vectors, as :func:`project_out`.
        eps: as :func:`project_out`.

    Returns:
        ``(projected update, cos before, cos after)``.
    """
    check_real(eps, "eps", low=0.0)
    lu, lr, _ = _pair(update, reference, "project_out_cosines")
    if not lu:
        return [], 0.0, 0.0
    uu, rr, ur = _dot(lu, lu), _dot(lr, lr), _dot(lu, lr)
    den = rr + eps
    uu_v, rr_v, ur_v, den_v = torch.stack([uu, rr, ur, den]).tolist()
    # coef = _safe_ratio(⟨u, r⟩, ‖r‖² + eps): the same division where the denominator is positive, else 0
    coef = ur / den if den_v > 0 else torch.zeros_like(ur)
    out = torch._foreach_sub(lu, torch._foreach_mul(lr, coef))
    oo_v, or_v = torch.stack([_dot(out, out), _dot(out, lr)]).tolist()
    return out, _cosine_of(uu_v, rr_v, ur_v), _cosine_of(oo_v, rr_v, or_v)


class OrthogonalMomentum:
    """orth: project each gradient away from a running average of past ones.

    Args:
        beta: β, the momentum's decay (stream-rep-rl ``orth_beta`` = 0.99).
        eps: ε added to ‖c‖² (stream-rep-rl: 1e-8; with c₀ = 0 it makes the first u equal g).
        momentum_source: ``"projected"`` updates c with u (stream-rep-rl's StreamQ and
            QRC files, the default) or ``"raw"`` with g (its Stream AC file, Han et al.).

    Call it on one group's gradients (a tensor or a list of tensors, one flat vector)::

        orth = OrthogonalMomentum(0.99)
        loss.backward()
        orth.project_grads_(model.parameters())   # p.grad ← u, in place
        sgd.step()

    A step on which the auxiliary loss is off is ``orth(zeros)``, i.e. :meth:`decay`.

    **Non-finite gradients** (NaN or ±inf anywhere in the group) are skipped: the call returns
    zeros (no update) and leaves c untouched, so one bad step cannot poison the momentum for the
    rest of the run (c would stay NaN forever). Finite gradients so large that ⟨g, c⟩ or ‖c‖²
    overflow (entries above ~1e19 in float32) are projected exactly on rescaled vectors instead;
    a step whose u or new c would still not be finite is skipped the same way. ``skipped``
    counts the skipped steps; a warning is logged the first time.
    """

    def __init__(self, beta: float = 0.99, *, eps: float = 1e-8,
                 momentum_source: MomentumSource = "projected") -> None:
        check_real(beta, "beta", low=0.0, high=1.0, high_open=True)
        check_real(eps, "eps", low=0.0)
        if momentum_source not in ("projected", "raw"):
            raise ValueError(f"momentum_source={momentum_source!r} must be 'projected' or 'raw'")
        self.beta = beta
        self.eps = eps
        self.momentum_source = momentum_source
        self.momentum: list[torch.Tensor] | None = None
        """c, one tensor per gradient tensor (``None`` until the first call)."""
        self.skipped = 0
        """Calls whose gradients held NaN or ±inf (answered with zeros; c unchanged)."""

    def _init(self, grads: list[torch.Tensor]) -> list[torch.Tensor]:
        if self.momentum is None:
            self.momentum = [torch.zeros_like(g) for g in grads]
        elif len(self.momentum) != len(grads) or any(c.shape != g.shape for c, g in zip(self.momentum, grads)):
            raise ValueError("OrthogonalMomentum was called with gradients of different shapes than before; "
                             "use one instance per parameter group")
        return self.momentum

    @torch.no_grad()
    def __call__(self, grads: T) -> T:
        """u for the gradients ``grads``; updates the momentum c."""
        lg, single = _as_list(grads)
        if not lg:
            return []
        if not all(isinstance(g, torch.Tensor) and g.is_floating_point() for g in lg):
            raise TypeError("OrthogonalMomentum takes floating-point tensors (a tensor or a list of them)")
        c = self._init(lg)
        # u = g − (⟨g, c⟩ / (‖c‖² + ε)) c
        num, den = _dot(lg, c), _dot(c, c) + self.eps
        num_value, den_value = torch.stack([num, den]).tolist()  # one synchronization for both tests
        if math.isfinite(num_value) and math.isfinite(den_value):
            # c holds only finite values (nothing else is ever stored), so a NaN or inf entry of g would
            # have made ⟨g, c⟩ NaN or inf: g is finite. coef is _safe_ratio(num, den), the same division.
            coef = num / den if den_value > 0 else torch.zeros_like(num)
            u = torch._foreach_sub(lg, torch._foreach_mul(c, coef))
        else:
            if not _all_finite(lg):
                zeros = self._skip(lg, "a gradient holds NaN or inf")
                return zeros[0] if single else zeros
            # ⟨g, c⟩ or ‖c‖² overflowed (entries ≳ 1e19 in float32; inf/inf would make c NaN for
            # good, and a finite ⟨g, c⟩ over an infinite ‖c‖² would silently skip the projection):
            # the same projection evaluated on c / max|c| and g / max|g|
            u = _projection_rescaled(lg, c, self.eps)
        projected = self.momentum_source == "projected"
        source = u if projected else lg
        # c ← β c + (1 − β)·(u or g)
        new_c = torch._foreach_mul(c, self.beta)
        torch._foreach_add_(new_c, source, alpha=1.0 - self.beta)
        # With source u, a NaN or inf in u makes new c NaN or inf too (1 − β > 0), so one test covers both.
        if not (_all_finite(new_c) if projected else _all_finite(u) and _all_finite(new_c)):
            if not _all_finite(u):  # an entry of u can exceed every entry of g (by up to √n)
                zeros = self._skip(lg, "the projected gradient is not finite (overflow)")
            else:
                zeros = self._skip(lg, "the momentum update overflows")
            return zeros[0] if single else zeros
        self.momentum = new_c  # c ← new c (fresh tensors: nothing else holds the old ones)
        return u[0] if single else u

    def _skip(self, grads: list[torch.Tensor], why: str) -> list[torch.Tensor]:
        """No update (zeros) and c unchanged: a non-finite step would make c NaN for good."""
        if self.skipped == 0:
            log.warning("OrthogonalMomentum: %s; the step is skipped (zeros) and the momentum kept", why)
        self.skipped += 1
        return [torch.zeros_like(g) for g in grads]

    @torch.no_grad()
    def decay(self) -> None:
        """The step of a zero gradient: u = 0 and c ← β·c (when the auxiliary loss is gated off)."""
        if self.momentum is not None:
            torch._foreach_mul_(self.momentum, self.beta)

    @torch.no_grad()
    def project_grads_(self, params) -> None:
        """Replace every ``p.grad`` of ``params`` (one group) by its orthogonalized u."""
        params = [p for p in params if p.grad is not None]
        if not params:
            raise ValueError("project_grads_: no parameter has a gradient; call backward() first")
        u = self([p.grad for p in params])
        for p, new in zip(params, u):
            p.grad.copy_(new)
