"""A results folder of seeds: ``<out>/<key>/seeds/<seed>/result.json`` and the aggregate over them.

:func:`parse_seeds` reads ``"0-4,9"``; :func:`seeds_in` loads a folder's seeds (refusing another
configuration's); :func:`aggregate_folder` builds the aggregate a sweep writes and ``icml26 aggregate``
rebuilds. Used by the runner (a single seed joining a sweep's folder) and the sweep.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from icml26 import registry
from icml26.aggregate import aggregate_results, check_against_seeds
from icml26.provenance import git_commit
from icml26.render import render_figures, render_with
from icml26.results import config_hash, load_result, plot_curves, validate

__all__ = ["aggregate_folder", "check_seed_folder", "parse_seeds", "seeds_in"]

log = logging.getLogger(__name__)


def parse_seeds(text: str | Sequence[int]) -> list[int]:
    """``"0-4"`` → ``[0, 1, 2, 3, 4]``; ``"0,3,7"`` → ``[0, 3, 7]``; ``"0-2,9"`` mixes both.

    Seeds must be non-negative and distinct.
    """
    if not isinstance(text, str):
        seeds = [int(s) for s in text]
    else:
        seeds = []
        for part in text.split(","):
            part = part.strip()
            m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
            if m:
                lo, hi = int(m[1]), int(m[2])
                if hi < lo:
                    raise ValueError(f"seeds={text!r}: range {part!r} runs backwards")
                seeds.extend(range(lo, hi + 1))
            elif re.fullmatch(r"\d+", part):
                seeds.append(int(part))
            else:
                raise ValueError(f"seeds={text!r}: {part!r} is not a seed or a range like 0-4")
    if not seeds:
        raise ValueError("seeds: give at least one seed, e.g. 0-2")
    if any(s < 0 for s in seeds):
        raise ValueError(f"seeds={seeds}: seeds must be non-negative")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds={seeds}: a seed is listed twice")
    return seeds


def seeds_in(folder: Path, key: str, expect: str | None = None) -> dict[int, dict[str, Any]]:
    """The seed results kept in ``folder/seeds/<s>/result.json``, validated, by seed.

    With ``expect`` (a :func:`icml26.runner.config_hash`), a seed run with another configuration
    raises ``ValueError`` naming the seeds and what to do: an aggregate never mixes configurations.
    """
    found: dict[int, dict[str, Any]] = {}
    other: list[int] = []
    base = Path(folder) / "seeds"
    for path in sorted(base.glob("*/result.json")) if base.is_dir() else []:
        if not re.fullmatch(r"\d+", path.parent.name):
            continue
        data = load_result(path)
        if data["paper"] != key or data["seed"] != int(path.parent.name):
            raise ValueError(f"{path}: holds paper {data['paper']!r} seed {data['seed']}, not {key} seed "
                             f"{path.parent.name}; remove it")
        got = data.get("config_hash") or config_hash(key, data["setting"], data["config"])
        if expect is not None and got != expect:
            other.append(data["seed"])
            continue
        found[data["seed"]] = data
    if other:
        raise ValueError(f"{base} holds seed(s) {', '.join(map(str, sorted(other)))} run with another configuration "
                         "(setting or config fields); an aggregate never mixes them: pass another --out, or remove "
                         "those seeds")
    return found


def check_seed_folder(folder: Path, data: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` when the aggregate ``data`` in ``folder`` disagrees with the seed results
    beside it (``folder/seeds``): a seed of another configuration, a listed seed with no result, a
    same-configuration seed the aggregate does not count (a stale aggregate), or a check whose mean,
    held-on count or unit count is not what its seeds give. A folder without ``seeds/`` is not checked."""
    if "seeds" not in data or not (Path(folder) / "seeds").is_dir():
        return
    key = data["paper"]
    kept = seeds_in(folder, key, data.get("config_hash") or config_hash(key, data["setting"], data["config"]))
    failed = {int(f["seed"]) for f in data.get("failed_seeds", [])}
    uncounted = sorted(set(kept) - set(data["seeds"]) - failed)
    if uncounted:
        raise ValueError(f"seeds/ holds seed(s) {uncounted} of the same configuration that the aggregate does not "
                         f"count; rebuild it with `icml26 aggregate {key}`")
    check_against_seeds(data, kept)


def aggregate_folder(key: str, folder: Path | None, fresh: Mapping[int, Mapping[str, Any]],
                     failed: Sequence[Mapping[str, Any]] = (), *, provenance: Mapping[str, Any] | None = None,
                     expect: str | None = None, render: bool = True) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The aggregate of every same-configuration seed in ``folder/seeds`` plus ``fresh`` (seed -> data, taking
    precedence), with roles and units from the paper's current declarations, and its figures.

    This is what a sweep writes, and what ``icml26 aggregate KEY`` rebuilds from the committed seeds.
    """
    spec = registry.get(key)
    kept = dict(seeds_in(folder, key, expect)) if folder is not None else {}
    kept.update({int(s): dict(d) for s, d in fresh.items()})
    for f in failed:  # a seed that failed now is not counted from an older result left in its folder
        kept.pop(int(f["seed"]), None)
    if not kept:
        raise ValueError(f"{key}: no seed result to aggregate" + (f" in {folder}/seeds" if folder else ""))
    hashes = {d.get("config_hash") or config_hash(key, d["setting"], d["config"]) for d in kept.values()}
    if len(hashes) > 1:
        raise ValueError(f"{key}: the seeds {sorted(kept)} were run with different configurations; cannot aggregate")
    ordered = [kept[s] for s in sorted(kept)]
    data = aggregate_results(ordered, failed, declared=spec.load_claims(), unit=spec.load_replication().unit)
    data["config_hash"] = hashes.pop()
    data["arms"] = _arms_over_seeds(spec, ordered)
    data["provenance"].update(dict(provenance or {}))
    data["provenance"]["seed_commits"] = {str(d["seed"]): d["provenance"].get("git_commit") for d in ordered}
    data["provenance"]["aggregated_at"] = git_commit()[0]
    figures: dict[str, bytes] = {}
    if render:
        try:
            figures = render_figures(key, data)
        except Exception as exc:  # a paper's plot() that cannot read an aggregate: say so, draw the curves
            log.warning("%s: plot() failed on the aggregate (%s); drawing its curves instead", key, exc)
            data["notes"].append(f"The paper's figures could not be drawn from the aggregate ({type(exc).__name__}); "
                                 "each seed's folder has them; these are the mean curves.")
            figures = render_with(plot_curves, data)
    data["figures"] = sorted(figures)
    validate(data)
    return data, figures


def _arms_over_seeds(spec, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The declared arms with each seed's tuning choices (``chosen_by_seed``: seed -> one choice per call)."""
    out: dict[str, Any] = {}
    for arm_id, arm in spec.load_arms().items():
        entry = arm.to_dict()
        chosen = {str(r["seed"]): [c["chosen"] for c in r.get("arms", {}).get(arm_id, {}).get("calls", [])]
                  for r in results}
        if any(chosen.values()):
            entry["chosen_by_seed"] = chosen
        out[arm_id] = entry
    return out
