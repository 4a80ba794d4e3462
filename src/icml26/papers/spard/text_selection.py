"""Real-text selection (report only): DPP vs random vs top-k on the 939 Do-Not-Answer prompts.

MiniLM (all-MiniLM-L6-v2) embeds every prompt. For each of the five risk areas in turn, a
random half of that area's prompts is the reference (the "user set"); the candidates are all
other prompts. At each ``k`` we report, averaged over the five reference areas: risk areas
and intent tags covered, the share of the subset from the reference's own area, the mean
relevance ``q`` and ``log det L_Y`` under the DPP kernel (random: mean of ``draws`` draws).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from icml26.papers.spard import dpp_select, random_select, topk_relevance
from icml26.papers.spard.analysis import category_coverage

__all__ = ["TextSelection", "run_text_selection"]


@dataclasses.dataclass
class TextSelection:
    """``rows[(selector, k)] = {metric: mean over reference areas}``."""

    rows: dict[tuple[str, int], dict[str, float]]
    n_prompts: int
    areas: tuple[str, ...]
    encode_seconds: float


def run_text_selection(ks: Sequence[int], *, power: float, rng: np.random.Generator, draws: int = 10,
                       device: str = "cpu") -> TextSelection:
    """Embed the prompts with MiniLM and compare the three selectors (see the module docs)."""
    import time

    from icml26.common.data import DO_NOT_ANSWER_AREAS, load_do_not_answer
    from icml26.common.encoder import get_encoder

    prompts = load_do_not_answer()
    start = time.perf_counter()
    emb = get_encoder(str(device)).encode([p.text for p in prompts])
    seconds = time.perf_counter() - start
    areas = np.array([p.area for p in prompts])
    intents = [set(p.intents) for p in prompts]
    acc: dict[tuple[str, int], list[dict[str, float]]] = {}
    for area in DO_NOT_ANSWER_AREAS:
        members = rng.permutation(np.flatnonzero(areas == area))
        reference = members[: len(members) // 2]
        candidates = np.setdiff1d(np.arange(len(prompts)), reference)
        cand, ref = emb[candidates], emb[reference]
        for k in ks:
            picks = {"DPP": [dpp_select(cand, ref, k, power=power)],
                     "top-k": [topk_relevance(cand, ref, k, power=power)],
                     "random": [random_select(cand, ref, k, seed=rng, power=power) for _ in range(draws)]}
            for name, sels in picks.items():
                rows = []
                for sel in sels:
                    chosen = candidates[sel.order]
                    rows.append({
                        "areas": float(category_coverage(areas[chosen])),
                        "intents": float(len(set().union(*(intents[i] for i in chosen)))),
                        "reference_area_share": float(np.mean(areas[chosen] == area)),
                        "mean_relevance": float(np.mean(sel.quality[sel.order])),
                        "logdet": float(sel.logdet),
                    })
                acc.setdefault((name, k), []).append({m: float(np.mean([r[m] for r in rows])) for m in rows[0]})
    rows = {key: {m: float(np.mean([v[m] for v in vals])) for m in vals[0]} for key, vals in acc.items()}
    return TextSelection(rows=rows, n_prompts=len(prompts), areas=DO_NOT_ANSWER_AREAS, encode_seconds=seconds)

