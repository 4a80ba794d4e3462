"""Stage 1: multi-source class semantics under nuisance interventions (our interpretation).

No paper text or code is public; this is our reading of the abstract's first stage
("multi-source semantics by intervening on non-causal noise", brief §1):

1. every class ``c`` has ``M`` descriptions from several sources (a name template, an
   attribute sentence, a paraphrase);
2. each description is crossed with every nuisance context ``n`` of a set drawn independently
   of the class (background, style, viewpoint, photographer phrasing): ``do(N = n)``, so the
   class is independent of ``N`` by construction;
3. each text is embedded, ``s_c^(m,n) = enc(template(description_m, nuisance_n))``;
4. the causal semantics is the backdoor-style average ``s̄_c = mean_(m,n) s_c^(m,n)``.

Semantic tensors used across the package have one of three shapes: ``(C, d)`` (already
averaged), ``(C, N, d)`` (one source, ``N`` nuisance views) or ``(C, M, N, d)``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from icml26.common.argcheck import as_tensor, check_int, require_finite

__all__ = ["as_views", "causal_semantics", "encode_descriptions"]


def encode_descriptions(descriptions: Sequence[Sequence[str]] | Sequence[str], nuisances: Sequence[str],
                        encoder: Any, *, template: str = "{description} {nuisance}",
                        batch_size: int = 64) -> np.ndarray:
    """Embed every (class, description, nuisance) text: ``s_c^(m,n)`` as a ``(C, M, N, d)`` array.

    Our interpretation of the abstract's multi-source semantics (no paper code is public).

    Args:
        descriptions: ``C`` sequences of ``M`` strings each (the same ``M`` for every class), or
            ``C`` single strings (then ``M = 1``).
        nuisances: ``N`` nuisance phrases crossed with every description (``do(N = n)``); an
            empty string is a valid "no nuisance" context.
        encoder: any object with ``encode(texts) -> (n, d)`` array, e.g.
            :func:`icml26.common.encoder.get_encoder` (all-MiniLM-L6-v2).
        template: how a description and a nuisance are joined; must contain ``{description}``
            and ``{nuisance}``.
        batch_size: texts per ``encode`` call.

    Returns:
        float32 array ``(C, M, N, d)``. The row of a text does not depend on the other texts
        (the MiniLM wrapper is batch-order independent). ``ValueError`` when the encoder returns
        NaN or inf, or the wrong number of rows.
    """
    if isinstance(descriptions, (str, bytes)) or not isinstance(descriptions, Sequence):
        raise TypeError("descriptions must be a sequence over classes (of strings or of string sequences)")
    if len(descriptions) == 0:
        raise ValueError("descriptions is empty: give at least one class")
    rows: list[tuple[str, ...]] = []
    for c, item in enumerate(descriptions):
        texts = (item,) if isinstance(item, str) else tuple(item) if isinstance(item, Sequence) else None
        if texts is None or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"descriptions[{c}] must be a string or a sequence of strings")
        if not texts:
            raise ValueError(f"descriptions[{c}] is empty: every class needs at least one description")
        rows.append(texts)
    counts = {len(r) for r in rows}
    if len(counts) != 1:
        raise ValueError(f"descriptions have mismatched counts per class ({sorted(counts)}); give every class the "
                         "same number M of descriptions (repeat one to pad)")
    if isinstance(nuisances, (str, bytes)) or not isinstance(nuisances, Sequence) or not all(
            isinstance(n, str) for n in nuisances):
        raise TypeError("nuisances must be a sequence of strings (use [''] for no nuisance)")
    if len(nuisances) == 0:
        raise ValueError("nuisances is empty: give at least one context (use [''] for none)")
    if not isinstance(template, str) or "{description}" not in template or "{nuisance}" not in template:
        raise ValueError(f"template={template!r} must contain '{{description}}' and '{{nuisance}}'")
    if not callable(getattr(encoder, "encode", None)):
        raise TypeError(f"encoder must have an encode(texts) method, got {type(encoder).__name__}")
    batch_size = check_int(batch_size, "batch_size", low=1)
    n_classes, n_sources, n_nuisances = len(rows), counts.pop(), len(nuisances)
    texts = [template.format(description=d, nuisance=n).strip() for r in rows for d in r for n in nuisances]
    out = np.asarray(encoder.encode(texts, batch_size=batch_size) if _takes_batch_size(encoder)
                     else encoder.encode(texts))
    if out.ndim != 2 or out.shape[0] != len(texts):
        raise ValueError(f"encoder returned shape {out.shape} for {len(texts)} texts; expected (n_texts, d)")
    require_finite(out, "the encoder's embeddings", hint="check the encoder and its inputs")
    return out.astype(np.float32).reshape(n_classes, n_sources, n_nuisances, -1)


def _takes_batch_size(encoder: Any) -> bool:
    import inspect

    try:
        return "batch_size" in inspect.signature(encoder.encode).parameters
    except (TypeError, ValueError):
        return False


def as_views(semantics: Any, name: str = "semantics") -> torch.Tensor:
    """``semantics`` as a floating tensor ``(C, M, N, d)``: ``(C, d)`` becomes ``(C, 1, 1, d)`` and
    ``(C, N, d)`` becomes ``(C, 1, N, d)``. ``ValueError`` for other shapes, no classes, or NaN/inf."""
    t = as_tensor(semantics, name)
    if t.ndim == 2:
        t = t[:, None, None, :]
    elif t.ndim == 3:
        t = t[:, None, :, :]
    elif t.ndim != 4:
        raise ValueError(f"{name} must be (C, d), (C, N, d) or (C, M, N, d), got shape {tuple(t.shape)}")
    if t.shape[0] == 0 or t.shape[-1] == 0 or t.shape[1] == 0 or t.shape[2] == 0:
        raise ValueError(f"{name} has an empty axis (shape {tuple(t.shape)}); give at least one class and view")
    require_finite(t, name, hint="NaN embeddings cannot be averaged; re-encode or drop the class")
    return t


def causal_semantics(semantics: Any) -> torch.Tensor:
    """The backdoor-style average ``s̄_c = mean_(m,n) s_c^(m,n)``: ``(C, d)`` from any semantic shape.

    Our interpretation of the abstract (no paper code is public). The mean is not renormalised.
    It is invariant to permuting the nuisance (or source) axis. NaN or inf raise ``ValueError``.
    """
    return as_views(semantics).mean(dim=(1, 2))
