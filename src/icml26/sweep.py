"""Several seeds of one reproduction, in parallel, on this machine or a Ray cluster.

``icml26 run KEY --quick --seeds 0-4 [--workers N] [--backend process|ray] [--address auto]``

Each seed is one job computing :func:`icml26.runner.execute` (nothing is written by the job);
the driver writes each finished seed at once to ``<out>/<key>/seeds/<seed>/`` and, when all are
done, their aggregate (:func:`icml26.aggregate.aggregate_results`) to ``<out>/<key>/result.json``
with figures drawn from the aggregate (curves as means with 95 % bands). So:

* a seed that crashes is recorded in the aggregate (``failed_seeds``) and the others are kept;
* an interrupted sweep leaves every finished seed's result intact;
* the aggregate covers every seed in ``seeds/`` run with the same configuration (its
  ``config_hash``: paper, setting and every resolved config field), so ``--seeds 3-7`` after
  ``--seeds 0-2`` gives the eight-seed aggregate; seeds of another configuration in the folder
  are refused before anything runs (use another ``--out``);
* every worker runs one torch thread, so a seed's numbers do not depend on the worker count or
  the backend (tested: 1 vs 2 workers, processes vs Ray).

Backends: ``process`` (a ``spawn`` process pool; default) and ``ray`` (Ray core tasks, one CPU each;
``address=None`` starts a local Ray, ``"auto"`` joins the running cluster of this machine, or give
``"ray://head:10001"``). Jobs return their result to the driver, so a cluster needs no shared disk.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import logging
import multiprocessing
import os
import re
import traceback
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from icml26.aggregate import aggregate_results
from icml26.common.config import config_to_dict
from icml26.common.progress import progress as _progress
from icml26.results import Result, validate

__all__ = ["SweepResult", "aggregate_folder", "parse_seeds", "rederive", "seeds_in", "sweep"]

log = logging.getLogger(__name__)
Backend = Literal["process", "ray"]


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


@dataclasses.dataclass
class SweepResult:
    """The aggregate of a sweep, each seed's result, and the seeds that failed."""

    aggregate: Result
    per_seed: dict[int, Result]
    failed: list[dict[str, Any]]


def _job(key: str, setting: str, seed: int, overrides: Mapping[str, Any] | None, device: str,
         render: bool) -> tuple[dict[str, Any], dict[str, bytes]]:
    """One seed, one thread (module level so that it pickles for processes and Ray)."""
    from icml26.runner import execute

    return execute(key, setting, seed, overrides, device=device, threads=1, progress=False, render=render)


def sweep(
    key: str,
    seeds: Sequence[int] | str,
    *,
    setting: str = "quick",
    overrides: Mapping[str, Any] | None = None,
    device: str = "cpu",
    out: str | os.PathLike | None = "results",
    workers: int | None = None,
    backend: Backend = "process",
    address: str | None = None,
    progress: bool | None = None,
) -> SweepResult:
    """Run ``key`` once per seed and aggregate (see the module docstring).

    Args:
        workers: parallel jobs (default: the number of cores this process may use; Ray: the
            number of CPUs of the local Ray it starts, ignored on an existing cluster).
        out: results folder (``None`` writes nothing).
    """
    from icml26.runner import _implemented_spec, build_config, check_out, config_hash, write_result
    from icml26.common.seeding import default_threads, resolve_device

    seeds = parse_seeds(seeds)
    if setting not in ("full", "quick", "tiny"):
        raise ValueError(f"setting={setting!r} must be 'full', 'quick' or 'tiny'")
    if backend not in ("process", "ray"):
        raise ValueError(f"backend={backend!r} must be 'process' or 'ray'")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers={workers!r} must be a positive integer")
    _implemented_spec(key)
    config = build_config(key, setting, overrides)
    resolve_device(device)
    folder = check_out(out, key) if out is not None else None
    workers = min(workers or default_threads(), len(seeds))
    want = config_hash(key, setting, config_to_dict(config))
    if folder is not None:
        seeds_in(folder, key, want)  # seeds of another configuration: refused before any work

    per_seed: dict[int, Result] = {}
    failed: list[dict[str, Any]] = []

    def finished(seed: int, value: Any, error: BaseException | None) -> None:
        if error is not None:
            text = f"{type(error).__name__}: {error}"
            failed.append({"seed": seed, "error": text})
            log.error("%s seed %d failed: %s", key, seed, text)
            return
        data, figures = value
        path = write_result(folder / "seeds" / str(seed), data, figures) if folder is not None else None
        per_seed[seed] = Result(data, path=path)

    bar = _progress(total=len(seeds), enabled=progress, desc=f"{key} seeds")
    args = [(key, setting, s, dict(overrides or {}), str(device), folder is not None) for s in seeds]
    if backend == "process":
        _run_processes(args, workers, finished, bar)
    else:
        _run_ray(args, workers, address, finished, bar)
    bar.close()

    if not per_seed:
        raise RuntimeError(f"{key}: every seed failed: " + "; ".join(f"{f['seed']}: {f['error']}" for f in failed))
    failed = sorted(failed, key=lambda f: f["seed"])
    extra = {"sweep_backend": backend, "sweep_workers": workers}
    if folder is None:
        data, _ = aggregate_folder(key, None, {s: per_seed[s].data for s in seeds if s in per_seed}, failed,
                                   provenance=extra, render=False)
        return SweepResult(Result(data), per_seed, failed)
    data, figures = aggregate_folder(key, folder, {}, failed, provenance=extra, expect=want)
    path = write_result(folder, data, figures)
    return SweepResult(Result(data, path=path), per_seed, failed)


def seeds_in(folder: Path, key: str, expect: str | None = None) -> dict[int, dict[str, Any]]:
    """The seed results kept in ``folder/seeds/<s>/result.json``, validated, by seed.

    With ``expect`` (a :func:`icml26.runner.config_hash`), a seed run with another configuration
    raises ``ValueError`` naming the seeds and what to do: an aggregate never mixes configurations.
    """
    from icml26.results import load_result
    from icml26.runner import config_hash

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


def aggregate_folder(key: str, folder: Path | None, fresh: Mapping[int, Mapping[str, Any]],
                     failed: Sequence[Mapping[str, Any]] = (), *, provenance: Mapping[str, Any] | None = None,
                     expect: str | None = None, render: bool = True) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The aggregate of every same-configuration seed in ``folder/seeds`` plus ``fresh`` (seed -> data, taking
    precedence), with roles and units from the paper's current declarations, and its figures.

    This is what a sweep writes, and what ``icml26 aggregate KEY`` rebuilds from the committed seeds.
    """
    from icml26 import registry
    from icml26.runner import config_hash, render_figures

    spec = registry.get(key)
    kept = dict(seeds_in(folder, key, expect)) if folder is not None else {}
    kept.update({int(s): dict(d) for s, d in fresh.items()})
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
    from icml26.runner import _git_commit

    data["provenance"]["aggregated_at"] = _git_commit()[0]
    figures: dict[str, bytes] = {}
    if render:
        try:
            figures = render_figures(key, data)
        except Exception as exc:  # a paper's plot() that cannot read an aggregate: say so, draw the curves
            log.warning("%s: plot() failed on the aggregate (%s); drawing its curves instead", key, exc)
            data["notes"].append(f"The paper's figures could not be drawn from the aggregate ({type(exc).__name__}); "
                                 "each seed's folder has them; these are the mean curves.")
            from icml26.runner import _render
            from icml26.results import plot_curves

            figures = _render(plot_curves, data)
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


def _run_processes(args, workers: int, finished, bar) -> None:
    if workers == 1:
        # In this process: torch runs at one thread (``_job``), and so must NumPy's BLAS, as in the
        # spawned workers (OMP_NUM_THREADS=1), or a seed's float sums depend on the worker count.
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            for a in args:
                try:
                    value, error = _job(*a), None
                except Exception as exc:  # recorded; the sweep goes on
                    log.debug("%s", traceback.format_exc())
                    value, error = None, exc
                finished(a[2], value, error)
                bar.update(1)
        return
    context = multiprocessing.get_context("spawn")
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # inherited by the spawned workers
    try:
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(_job, *a): a[2] for a in args}
            for future in cf.as_completed(futures):
                seed = futures[future]
                try:
                    value, error = future.result(), None
                except Exception as exc:
                    value, error = None, exc
                finished(seed, value, error)
                bar.update(1)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_ray(args, workers: int, address: str | None, finished, bar) -> None:
    from icml26.common.extras import require

    ray = require("ray", "ray")
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1"}}}
        if address is None:
            kwargs["num_cpus"] = workers
        else:
            kwargs["address"] = address
        ray.init(**kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_job)
        pending = {remote.remote(*a): a[2] for a in args}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            ref = done[0]
            seed = pending.pop(ref)
            try:
                value, error = ray.get(ref), None
            except Exception as exc:  # ray wraps the task's exception
                cause = getattr(exc, "cause", None) or exc
                value, error = None, cause
            finished(seed, value, error)
            bar.update(1)
    finally:
        if started:
            ray.shutdown()


def rederive(key: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A single-seed result with its derived fields rebuilt from the paper's current declarations:
    each check's role and budget, the claim's status, reason and counts, the declared arms, the
    configuration hash. Measured values are untouched; the provenance records the re-derivation."""
    from icml26 import registry
    from icml26.runner import _git_commit, arms_record, claim_block, config_hash

    spec = registry.get(key)
    declared = spec.load_claims()
    out = json.loads(json.dumps(data))
    checks = []
    for c in out["claim"]["checks"]:
        decl = declared.get(c.get("id"))
        if decl is None:
            raise ValueError(f"{key}: check {c.get('id') or c['name']!r} of this result is no longer declared; "
                             "rerun it instead")
        c["role"] = decl.role
        c.pop("budget", None)
        if decl.budget:
            c["budget"] = decl.budget
        checks.append(c)
    out["claim"] = claim_block(out["claim"]["text"], checks)
    out["schema"] = max(int(out["schema"]), 3)
    out.setdefault("config_hash", config_hash(key, out["setting"], out["config"]))
    out["arms"] = out.get("arms") or arms_record(spec.load_arms(), {})
    out["provenance"]["rederived_at"] = _git_commit()[0]
    validate(out)
    return out
