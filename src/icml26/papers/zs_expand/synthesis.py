"""Stage 3: granularity-aware weight synthesis, and the expander that runs all three stages.

No paper text or code is public: everything here is **our interpretation** of the abstract's
third stage and of its lineage (ICIS, Christensen et al. 2023; brief §1). The weight model is

    ŵ_c = f₀(s̄_c) + f_g(s̄_c − μ_g),      g = g(c),

* ``f₀``, the shared coarse map (general attributes): a ridge map fitted on every seen class;
* ``f_g``, the refiner of group ``g`` (subtle attributes), on within-group-centred semantics
  (``μ_g`` = mean ``s̄`` of the group's seen classes; of all its classes when it has none):
  ``f_g(x) = ρ_g + B_shared x + B_g x``, fitted on the residual ``w_c − f₀(s̄_c)``: ``ρ_g`` is the
  group's mean residual (what ``f₀`` misses of the group-mean weight), ``B_shared`` a refiner
  shared by every group, ``B_g`` the group's own (ridge) correction.

Each map minimises a group-balanced loss (the mean within each group, then across groups, so
a large group of distinct classes cannot dominate) plus the invariance penalty
``λ Var_n[ŵ(s_c^(m,n))]`` and a ridge penalty whose strength is relative to the variance of
that stage's own inputs (between-group for ``f₀``, within-group for the refiners: this is what
makes the synthesis granularity-aware). For linear maps these are closed forms (a generalised
ridge: the variance penalty is ``λ tr(Bᵀ P B)`` with ``P`` the mean nuisance covariance). An
optional L-BFGS stage then adds the cosine loss to the targets, and expansion applies ICIS's
norm-scale heuristic (predicted rows rescaled to the mean seen-row norm).

With ``alpha_grid`` the ridge strengths (and whether to use the refiners at all) are chosen by
leave-one-seen-class-out error on the seen classes: each held-out seen class plays an unseen
sibling of its group. The reproduction uses this; without it the strengths are fixed.

The losses and penalties are in :mod:`.losses`, the closed-form ridge in :mod:`.ridge`; their names
still import from here.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Literal, Sequence

import numpy as np
import torch

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite
from icml26.papers.zs_expand.losses import (
    _class_covariances,
    _groups_array,
    cosine_loss,
    group_balanced_loss,
    group_balanced_weights,
    invariance_penalty,
    nuisance_covariance,
)
from icml26.papers.zs_expand.ridge import LinearMap, fit_ridge
from icml26.papers.zs_expand.semantics import as_views
from icml26.papers.zs_expand.structure import GroupClusterer, GroupStructure

__all__ = [
    "ClassifierExpander",
    "LinearMap",
    "cosine_loss",
    "fit_ridge",
    "group_balanced_loss",
    "group_balanced_weights",
    "invariance_penalty",
    "norm_scale",
    "nuisance_covariance",
]

log = logging.getLogger(__name__)
Refiner = Literal["group", "shared", "none"]


# ---------------------------------------------------------------------------
# ICIS's norm-scale heuristic (the losses are in losses.py, the ridge solver in ridge.py)
# ---------------------------------------------------------------------------
def norm_scale(weights: torch.Tensor, reference: torch.Tensor, factor: float = 1.0) -> torch.Tensor:
    """ICIS's norm-scale heuristic: ``weights · factor · mean_r‖reference_r‖ / mean_u‖weights_u‖``.

    ``weights`` ``(U, D)`` and ``reference`` ``(S, D)`` (the seen rows). One factor for all rows, so
    a ZSL argmax is unchanged; GZSL is not. ICIS divides by 10 in its GZSL runs (``factor=0.1``
    relative to ICIS's absolute scale). All-zero ``weights`` are returned unchanged; NaN or inf in
    either is refused.
    """
    if not isinstance(weights, torch.Tensor) or not isinstance(reference, torch.Tensor):
        raise TypeError("weights and reference must be torch.Tensors")
    if weights.ndim != 2 or reference.ndim != 2 or weights.shape[1] != reference.shape[1]:
        raise ValueError(f"weights {tuple(weights.shape)} and reference {tuple(reference.shape)} must be (U, D) "
                         "and (S, D)")
    factor = check_real(factor, "factor", low=0.0, low_open=True)
    require_finite(weights, "weights")
    require_finite(reference, "reference")
    current = weights.norm(dim=1).mean()
    if float(current) == 0.0:
        return weights
    return weights * (factor * reference.to(weights.dtype).norm(dim=1).mean() / current)


# ---------------------------------------------------------------------------
# The expander
# ---------------------------------------------------------------------------
ClustererLike = GroupClusterer | Callable[[np.ndarray], Any] | None


class ClassifierExpander:
    """Expand a trained linear head to unseen classes from their descriptions alone.

    Our interpretation of *Granularity-Aware Adaptive Classifier Expansion via Zero-Shot
    Learning* (ICML 2026; no paper text or code is public): nuisance-averaged semantics
    (stage 1), transductive group discovery (stage 2), ``ŵ_c = f₀(s̄_c) + f_g(s̄_c − μ_g)``
    (stage 3; see the module docstring).

    Args:
        clusterer: ``"auto"`` (default: a :class:`~icml26.papers.zs_expand.structure.GroupClusterer`,
            agglomerative, eigengap group count), a ``GroupClusterer``, any callable
            ``(C, d) array -> labels`` or a :class:`~icml26.papers.zs_expand.structure.GroupStructure`,
            or None (one group: no granularity, the plain shared map).
        refiner: ``"group"`` (``ρ_g + B_shared + B_g``), ``"shared"`` (``ρ_g + B_shared``) or
            ``"none"`` (``f₀`` alone, group-balanced).
        invariance: ``λ`` of the nuisance-variance penalty (0 disables it); needs views
            ``(C, N, d)`` or ``(C, M, N, d)`` to have an effect.
        coarse_alpha: relative ridge strength of ``f₀``.
        refiner_alpha: relative ridge strength of ``B_shared``.
        group_alpha: relative ridge strength of each ``B_g`` (default ``refiner_alpha``).
        group_shrinkage: ``κ`` in ``ρ_g = n_g/(n_g + κ) · mean residual`` (0: the plain mean).
        cosine_weight: ``γ`` of the cosine loss added in the L-BFGS stage (0 or
            ``cosine_steps=0``: closed form only).
        cosine_steps: L-BFGS iterations of that stage.
        norm_scale: apply ICIS's norm-scale heuristic in :meth:`expand`.
        scale_factor: the heuristic's factor (1: the mean seen-row norm).
        balance: ``"group"`` (mean within groups, then across) or ``"class"`` (plain mean).
        alpha_grid: candidate relative ridge strengths. When given, :meth:`fit` chooses ``coarse_alpha``
            and then the refiners' strength (``refiner_alpha = group_alpha``, or no refiner at all) from
            the grid by leave-one-seen-class-out error: each seen class in turn is held out, the maps are
            refitted on the others (groups fixed) and its row predicted; the criterion is the
            group-balanced mean of ``‖ŵ_c − w_c‖²``. Seen classes only: no unseen data is used. The
            choice is in ``alphas_``. None (default): the given strengths.

    After :meth:`fit`: ``structure_`` (the groups of every clustered class), ``seen_groups_``,
    ``coarse_``, ``shared_``, ``group_maps_``, ``group_offsets_``, ``group_means_``, ``alphas_`` (the
    strengths and refiner used), ``selection_`` (the leave-one-out error of each candidate, with
    ``alpha_grid``).
    """

    def __init__(self, clusterer: ClustererLike | GroupStructure | str | None = "auto", refiner: Refiner = "group",
                 invariance: float = 1.0, *, coarse_alpha: float = 0.1, refiner_alpha: float = 0.01,
                 group_alpha: float | None = None, group_shrinkage: float = 0.0, cosine_weight: float = 0.0,
                 cosine_steps: int = 0, norm_scale: bool = True, scale_factor: float = 1.0,
                 balance: Literal["group", "class"] = "group",
                 alpha_grid: Sequence[float] | None = None) -> None:
        if isinstance(clusterer, str):
            if clusterer != "auto":
                raise ValueError(f"clusterer={clusterer!r}: the only name is 'auto' (GroupClusterer())")
            clusterer = GroupClusterer()
        if clusterer is not None and not callable(clusterer) and not isinstance(clusterer, GroupStructure):
            raise TypeError(f"clusterer must be a GroupClusterer, a callable (C, d) -> labels, a GroupStructure or "
                            f"None, got {type(clusterer).__name__}")
        if refiner not in ("group", "shared", "none"):
            raise ValueError(f"refiner={refiner!r} must be 'group', 'shared' or 'none'")
        if balance not in ("group", "class"):
            raise ValueError(f"balance={balance!r} must be 'group' or 'class'")
        if not isinstance(norm_scale, bool):
            raise TypeError(f"norm_scale={norm_scale!r} must be True or False")
        self.clusterer = clusterer
        self.refiner = refiner
        self.invariance = check_real(invariance, "invariance", low=0.0)
        self.coarse_alpha = check_real(coarse_alpha, "coarse_alpha", low=0.0)
        self.refiner_alpha = check_real(refiner_alpha, "refiner_alpha", low=0.0)
        self.group_alpha = self.refiner_alpha if group_alpha is None else check_real(group_alpha, "group_alpha",
                                                                                     low=0.0)
        self.group_shrinkage = check_real(group_shrinkage, "group_shrinkage", low=0.0)
        self.cosine_weight = check_real(cosine_weight, "cosine_weight", low=0.0)
        self.cosine_steps = check_int(cosine_steps, "cosine_steps", low=0)
        self.norm_scale = norm_scale
        self.scale_factor = check_real(scale_factor, "scale_factor", low=0.0, low_open=True)
        self.balance = balance
        if alpha_grid is not None:
            if isinstance(alpha_grid, (str, bytes)) or not isinstance(alpha_grid, Sequence) or not alpha_grid:
                raise TypeError(f"alpha_grid must be a non-empty sequence of non-negative numbers or None, got "
                                f"{alpha_grid!r}")
            alpha_grid = tuple(check_real(v, "alpha_grid", low=0.0) for v in alpha_grid)
        self.alpha_grid = alpha_grid
        self._fitted = False

    # -- stage 2: groups -----------------------------------------------------------------
    def _structure(self, points: np.ndarray) -> GroupStructure:
        c = self.clusterer
        if c is None:
            return GroupStructure(labels=np.zeros(len(points), dtype=np.int64), n_groups=1,
                                  centroids=points.mean(0, keepdims=True))
        if isinstance(c, GroupStructure):
            out = c
        else:
            out = c(points)
        if not isinstance(out, GroupStructure):
            labels = _groups_array(out, len(points), "the clusterer's labels")
            _, labels = np.unique(labels, return_inverse=True)
            g = int(labels.max()) + 1
            out = GroupStructure(labels=labels.astype(np.int64), n_groups=g,
                                 centroids=np.stack([points[labels == k].mean(0) for k in range(g)]))
        if len(out.labels) != len(points):
            raise ValueError(f"the clusterer labelled {len(out.labels)} classes but {len(points)} were clustered "
                             "(a GroupStructure must cover all_semantics, or the seen classes without it)")
        return out

    def _assign(self, sbar: np.ndarray) -> np.ndarray:
        """Group of each row: the clustered row it equals (cosine > 1 − 1e-9), else the nearest centroid."""
        unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-300)  # noqa: E731
        pts, cen = unit(self._points), unit(np.asarray(self.structure_.centroids, dtype=np.float64))
        u = unit(sbar)
        sim_pts = u @ pts.T
        best = sim_pts.argmax(1)
        nearest = (u @ cen.T).argmax(1)
        exact = sim_pts[np.arange(len(u)), best] > 1 - 1e-9
        return np.where(exact, self.structure_.labels[best], nearest).astype(np.int64)

    # -- fit -----------------------------------------------------------------------------
    def fit(self, seen_semantics: Any, seen_weights: Any, all_semantics: Any = None) -> "ClassifierExpander":
        """Fit on the seen classes.

        Args:
            seen_semantics: ``(S, d)``, ``(S, N, d)`` or ``(S, M, N, d)`` semantics of the seen classes
                (views are averaged into ``s̄``; they also feed the invariance penalty).
            seen_weights: ``(S, D)`` their rows of the trained head (append the bias as a last
                column to synthesise biases too).
            all_semantics: semantics of every class to cluster (seen and unseen: transductive,
                descriptions only); it must contain the seen classes. Default: the seen ones.
        """
        views = as_views(seen_semantics, "seen_semantics")
        w = as_tensor(seen_weights, "seen_weights")
        if w.ndim != 2:
            raise ValueError(f"seen_weights must be (S, D), got shape {tuple(w.shape)}")
        if w.shape[0] != views.shape[0]:
            raise ValueError(f"seen_semantics has {views.shape[0]} classes but seen_weights has {w.shape[0]} rows; "
                             "give one weight row per seen class, in the same order")
        require_finite(w, "seen_weights")
        device = views.device
        w = w.to(device).double()
        views = views.double()
        sbar = views.mean(dim=(1, 2))
        self._dtype = as_tensor(seen_weights, "seen_weights").dtype
        sbar_np = sbar.cpu().numpy()
        if all_semantics is None:
            points = sbar_np
        else:
            points = as_views(all_semantics, "all_semantics").double().mean(dim=(1, 2)).cpu().numpy()
            if points.shape[1] != sbar_np.shape[1]:
                raise ValueError(f"all_semantics has width {points.shape[1]} but seen_semantics {sbar_np.shape[1]}")
        for name, rows in (("seen_semantics", sbar_np), ("all_semantics", points)):
            zero = np.flatnonzero(np.linalg.norm(rows, axis=1) == 0)
            if zero.size:  # a zero s̄ has no direction: its cosine to anything is NaN
                raise ValueError(f"{name} has all-zero (nuisance-averaged) rows {zero[:5].tolist()}; each class needs "
                                 "a non-zero semantic vector")
        self._points = points
        self.structure_ = self._structure(points)
        if all_semantics is not None:
            pts = points / np.linalg.norm(points, axis=1, keepdims=True)
            u = sbar_np / np.linalg.norm(sbar_np, axis=1, keepdims=True)
            if (np.max(u @ pts.T, axis=1) < 1 - 1e-6).any():
                raise ValueError("all_semantics must contain every seen class (a seen s̄ has no matching row)")
        groups = self._assign(sbar_np)
        self.seen_groups_ = groups
        lam = self.invariance
        # per-class nuisance covariances C_c = mean_m Cov_n(s_c^(m,·)): P = Σ a_c C_c / Σ a_c for any subset
        covs = _class_covariances(views) if lam > 0 and views.shape[2] > 1 else None
        chosen = dict(coarse=self.coarse_alpha, refiner=self.refiner_alpha, group=self.group_alpha,
                      kind=self.refiner)
        self.selection_: dict[str, dict[str, float]] = {}
        if self.alpha_grid is not None:
            chosen = self._select(sbar, w, groups, covs)
        self.alphas_ = chosen
        self._fit_maps(sbar, w, groups, covs, chosen)
        self._seen_weights = w
        self._fitted = True
        if self.cosine_weight > 0 and self.cosine_steps > 0:
            a_np = group_balanced_weights(groups) if self.balance == "group" else np.full(len(groups), 1 / len(groups))
            self._cosine_stage(views, w, groups, torch.as_tensor(a_np, dtype=torch.float64, device=w.device))
        return self

    def _fit_maps(self, sbar: torch.Tensor, w: torch.Tensor, groups: np.ndarray, covs: torch.Tensor | None,
                  alphas: dict[str, Any], rows: np.ndarray | None = None) -> None:
        """``f₀``, ``ρ_g``, ``B_shared`` and ``B_g`` on seen ``sbar`` ``(S, d)``, ``w`` ``(S, D)`` (closed forms).

        ``covs``: :func:`_class_covariances` of all seen classes; ``rows``: which of them ``sbar`` holds
        (default all)."""
        device = sbar.device
        d = sbar.shape[1]

        def mean_cov(weights: torch.Tensor, mask: np.ndarray | None = None) -> torch.Tensor:
            # Σ_c a_c C_c / Σ a_c over the classes in use, without copying the (C, d·d) block
            full = torch.zeros(covs.shape[0], dtype=torch.float64, device=covs.device)
            idx = np.arange(len(groups)) if mask is None else np.flatnonzero(mask)
            target_rows = idx if rows is None else rows[idx]
            full[torch.as_tensor(target_rows, device=covs.device)] = weights / weights.sum()
            return (full @ covs).reshape(d, d)

        a_np = group_balanced_weights(groups) if self.balance == "group" else np.full(len(groups), 1 / len(groups))
        a = torch.as_tensor(a_np, dtype=torch.float64, device=device)
        lam, kind = self.invariance, alphas["kind"]
        # invariance: λ tr(Bᵀ P B) with P = Σ_c a_c C_c (the balanced mean nuisance covariance)
        penalty = lam * mean_cov(a) if covs is not None else None

        # f₀: the shared coarse map, group-balanced
        self.coarse_ = fit_ridge(sbar, w, alpha=alphas["coarse"], sample_weights=a, penalty=penalty)
        residual = w - self.coarse_(sbar)
        k = w.shape[1]
        self.group_means_: dict[int, torch.Tensor] = {}
        self.group_offsets_: dict[int, torch.Tensor] = {}
        for g in range(self.structure_.n_groups):
            mask = torch.as_tensor(groups == g, device=device)
            if bool(mask.any()):
                n_g = int(mask.sum())
                self.group_means_[g] = sbar[mask].mean(0)
                shrink = n_g / (n_g + self.group_shrinkage)
                # ρ_g: what f₀ misses of the group's mean weight
                self.group_offsets_[g] = shrink * residual[mask].mean(0) if kind != "none" else \
                    torch.zeros(k, dtype=torch.float64, device=device)
            else:  # no seen class: centre on the group's clustered classes, no offset
                self.group_means_[g] = torch.as_tensor(self.structure_.centroids[g], dtype=torch.float64,
                                                       device=device)
                self.group_offsets_[g] = torch.zeros(k, dtype=torch.float64, device=device)
        self.shared_ = LinearMap.zeros(d, k, device)
        self.group_maps_: dict[int, LinearMap] = {}
        if kind != "none":
            mu = torch.stack([self.group_means_[int(g)] for g in groups])
            rho = torch.stack([self.group_offsets_[int(g)] for g in groups])
            # refiners on within-group-centred semantics s̄ − μ_g, target the residual w − f₀(s̄) − ρ_g
            centred, target = sbar - mu, residual - rho
            self.shared_ = fit_ridge(centred, target, alpha=alphas["refiner"], sample_weights=a, penalty=penalty,
                                     intercept=False)
            if kind == "group":
                target = target - self.shared_(centred)
                for g in np.unique(groups).tolist():
                    mask = torch.as_tensor(groups == g, device=device)
                    if int(mask.sum()) < 2:  # one seen class: its centred input is 0, nothing to fit
                        continue
                    pen = lam * mean_cov(torch.ones(int(mask.sum()), dtype=torch.float64, device=device),
                                         groups == g) if covs is not None else None
                    self.group_maps_[g] = fit_ridge(centred[mask], target[mask], alpha=alphas["group"],
                                                    penalty=pen, intercept=False)
        self._kind = kind

    def _loo_error(self, sbar: torch.Tensor, w: torch.Tensor, groups: np.ndarray, covs: torch.Tensor | None,
                   alphas: dict[str, Any]) -> float:
        """Group-balanced mean of ``‖ŵ_c − w_c‖²`` with each seen class held out of the fit in turn."""
        errors = np.empty(len(groups))
        for i in range(len(groups)):
            keep = np.arange(len(groups)) != i
            probe = copy.copy(self)
            probe._fit_maps(sbar[keep], w[keep], groups[keep], covs, alphas, rows=np.flatnonzero(keep))
            errors[i] = float(((probe._raw(sbar[i:i + 1], groups[i:i + 1]) - w[i:i + 1]) ** 2).sum())
        weights = group_balanced_weights(groups) if self.balance == "group" else np.full(len(groups), 1 / len(groups))
        return float(weights @ errors)

    def _select(self, sbar: torch.Tensor, w: torch.Tensor, groups: np.ndarray,
                covs: torch.Tensor | None) -> dict[str, Any]:
        """``coarse_alpha`` (``f₀`` alone), then the refiners' strength or no refiner, by leave-one-class-out."""
        if len(groups) < 3:
            raise ValueError(f"alpha_grid needs at least 3 seen classes to hold one out, got {len(groups)}")
        grid = self.alpha_grid
        coarse = {str(v): self._loo_error(sbar, w, groups, covs, dict(coarse=v, refiner=v, group=v, kind="none"))
                  for v in grid}
        best_coarse = grid[int(np.argmin([coarse[str(v)] for v in grid]))]
        chosen = dict(coarse=best_coarse, refiner=self.refiner_alpha, group=self.group_alpha, kind="none")
        refiner = {"none": coarse[str(best_coarse)]}
        if self.refiner != "none":
            for v in grid:
                refiner[str(v)] = self._loo_error(sbar, w, groups, covs,
                                                  dict(coarse=best_coarse, refiner=v, group=v, kind=self.refiner))
            best = min(refiner, key=refiner.get)
            if best != "none":
                chosen.update(refiner=float(best), group=float(best), kind=self.refiner)
            else:
                log.warning("zs_expand: the leave-one-class-out selection switched the %s refiners off (error %.4g "
                            "without, %.4g at best with): the fine structure is not learnable from these %d seen "
                            "classes in %d groups, so the expander is the coarse map f0 alone", self.refiner,
                            refiner["none"], min(v for k, v in refiner.items() if k != "none"), len(groups),
                            len(np.unique(groups)))
        self.selection_ = {"coarse_alpha": coarse, "refiner_alpha": refiner}
        log.info("zs_expand: leave-one-class-out chose %s", chosen)
        return chosen

    def _cosine_stage(self, views: torch.Tensor, w: torch.Tensor, groups: np.ndarray, a: torch.Tensor) -> None:
        """L-BFGS on ``Σ_g mean_(c∈g)[‖ŵ_c − w_c‖² + γ s² (1 − cos)] + λ Var_n + ridge``, from the closed form."""
        maps = [self.coarse_, self.shared_, *self.group_maps_.values()]
        params = [p.requires_grad_() for m in maps for p in (m.weight, m.bias)]
        sbar = views.mean(dim=(1, 2))
        scale2 = float((w ** 2).sum(1).mean())
        gamma = self.cosine_weight * scale2
        alphas = self._ridge_strengths(sbar, groups)
        optimizer = torch.optim.LBFGS(params, lr=1.0, max_iter=self.cosine_steps, line_search_fn="strong_wolfe",
                                      tolerance_grad=1e-12, tolerance_change=1e-14)

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            pred = self._raw(sbar, groups)
            per_class = ((pred - w) ** 2).sum(1) + gamma * cosine_loss(pred, w)
            loss = (a * per_class).sum()
            if self.invariance > 0 and views.shape[2] > 1:
                flat = views.reshape(-1, views.shape[-1])
                rep = np.repeat(groups, views.shape[1] * views.shape[2])
                loss = loss + self.invariance * invariance_penalty(
                    self._raw(flat, rep).reshape(*views.shape[:3], -1), a.cpu().numpy())
            loss = loss + sum(alpha * (m.weight ** 2).sum() for alpha, m in zip(alphas, maps))
            loss.backward()
            return loss

        optimizer.step(closure)
        for p in params:
            p.requires_grad_(False)

    def _ridge_strengths(self, sbar: torch.Tensor, groups: np.ndarray) -> list[float]:
        """The absolute ridge strengths the closed forms used (for the L-BFGS objective)."""
        def eff(alpha: float, x: torch.Tensor, weights: torch.Tensor | None, centre: bool) -> float:
            weights = torch.full((len(x),), 1.0 / len(x), dtype=x.dtype, device=x.device) if weights is None \
                else weights / weights.sum()
            xc = x - weights @ x if centre else x
            return alpha * float(torch.trace(xc.T @ (weights[:, None] * xc))) / x.shape[1]

        a = torch.as_tensor(group_balanced_weights(groups) if self.balance == "group" else
                            np.full(len(groups), 1 / len(groups)), dtype=sbar.dtype, device=sbar.device)
        mu = torch.stack([self.group_means_[int(g)] for g in groups])
        chosen = self.alphas_
        out = [eff(chosen["coarse"], sbar, a, True), eff(chosen["refiner"], sbar - mu, a, False)]
        for g in self.group_maps_:
            mask = torch.as_tensor(groups == g, device=sbar.device)
            out.append(eff(chosen["group"], (sbar - mu)[mask], None, False))
        return out

    # -- synthesis -----------------------------------------------------------------------
    def _raw(self, sbar: torch.Tensor, groups: np.ndarray) -> torch.Tensor:
        """``f₀(s̄) + ρ_g + B_shared (s̄ − μ_g) + B_g (s̄ − μ_g)`` for rows of ``sbar`` ``(U, d)``."""
        sbar = sbar.double()
        out = self.coarse_(sbar)
        if self._kind == "none":
            return out
        mu = torch.stack([self.group_means_[int(g)] for g in groups])
        rho = torch.stack([self.group_offsets_[int(g)] for g in groups])
        centred = sbar - mu
        out = out + rho + self.shared_(centred)
        if self.group_maps_:
            extra = [self.group_maps_[int(g)](centred[i:i + 1]) if int(g) in self.group_maps_ else
                     torch.zeros_like(out[i:i + 1]) for i, g in enumerate(groups)]
            out = out + torch.cat(extra)
        return out

    def groups_of(self, semantics: Any) -> np.ndarray:
        """The group of each class of ``semantics`` (any semantic shape): its clustered row, else the nearest
        centroid."""
        self._check_fitted()
        sbar = as_views(semantics, "semantics").double().mean(dim=(1, 2))
        return self._assign(sbar.cpu().numpy())

    def expand(self, unseen_semantics: Any, *, groups: Any = None) -> torch.Tensor:
        """Synthesised weight rows ``(U, D)`` for the unseen classes (views are averaged first).

        ``groups``: optional ``(U,)`` group labels (default :meth:`groups_of`). The result follows the
        input's device, with the dtype of the fitted ``seen_weights``; the norm-scale heuristic is
        applied when ``norm_scale``. ``ValueError`` for NaN or a width other than the fitted one.
        """
        self._check_fitted()
        views = as_views(unseen_semantics, "unseen_semantics")
        if views.shape[-1] != self.coarse_.weight.shape[0]:
            raise ValueError(f"unseen_semantics has width {views.shape[-1]}; the expander was fitted on "
                             f"{self.coarse_.weight.shape[0]}")
        sbar = views.double().mean(dim=(1, 2)).to(self.coarse_.weight.device)
        g = self._assign(sbar.cpu().numpy()) if groups is None else _groups_array(groups, len(sbar))
        unknown = set(g.tolist()) - set(self.group_means_)
        if unknown:
            raise ValueError(f"groups {sorted(unknown)} do not exist (the expander has {len(self.group_means_)})")
        out = self._raw(sbar, g)
        if self.norm_scale:
            out = norm_scale(out, self._seen_weights, self.scale_factor)
        return out.to(device=views.device, dtype=self._dtype if self._dtype.is_floating_point else torch.float32)

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("call fit(seen_semantics, seen_weights) before expand")

    @property
    def n_groups_(self) -> int:
        self._check_fitted()
        return self.structure_.n_groups

    def refiner_norm(self) -> float:
        """``Σ ‖ρ_g‖ + ‖B_shared‖ + Σ ‖B_g‖`` (Frobenius): 0 when the refiners learned nothing."""
        self._check_fitted()
        total = sum(float(v.norm()) for v in self.group_offsets_.values()) + float(self.shared_.weight.norm())
        return total + sum(float(m.weight.norm()) for m in self.group_maps_.values())
