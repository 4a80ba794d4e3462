"""Several seeds of one reproduction, in parallel, on this machine or a Ray cluster.

``icml26 run KEY --quick --seeds 0-4 [--workers N] [--backend process|ray] [--address auto]``

Each seed is one job computing :func:`icml26.runner.execute_plan` on the driver's
:class:`~icml26.runner.RunPlan` (the config built once, one torch thread; nothing is written by the job);
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

import dataclasses
import json
import logging
import math
import os
import time
import traceback
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from icml26.common.progress import progress as _progress
from icml26.pool import WorkerDied, run_jobs  # noqa: F401  (re-exported)
from icml26.results import Result, validate
from icml26.seeds import aggregate_folder, parse_seeds, seeds_in  # noqa: F401  (re-exported)

__all__ = ["SweepInterrupted", "SweepResult", "aggregate_folder", "parse_seeds", "rederive", "seeds_in", "sweep", "sweep_plan"]

log = logging.getLogger(__name__)
Backend = Literal["process", "ray"]


@dataclasses.dataclass
class SweepResult:
    """The aggregate of a sweep, each seed's result, and the seeds that failed."""

    aggregate: Result
    per_seed: dict[int, Result]
    failed: list[dict[str, Any]]


def _job(plan, seed: int, render: bool) -> tuple[dict[str, Any], dict[str, bytes]]:
    """One seed of ``plan`` at one thread (module level so that it pickles for processes and Ray)."""
    from icml26.runner import execute_plan

    return execute_plan(plan.replace(threads=1), seed, progress=False, render=render)


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
    resume: bool = False,
) -> SweepResult:
    """Run ``key`` once per seed and aggregate (see the module docstring): builds a
    :class:`~icml26.runner.RunPlan` and calls :func:`sweep_plan`.

    Args:
        workers: parallel jobs (default: the number of cores this process may use; Ray: the
            number of CPUs of the local Ray it starts, ignored on an existing cluster).
        out: results folder (``None`` writes nothing).
    """
    from icml26.runner import RunPlan

    _check_backend(backend, workers)
    plan = RunPlan.build(key, setting=setting, seeds=seeds, overrides=overrides, device=device, threads=1, out=out)
    return sweep_plan(plan, workers=workers, backend=backend, address=address, progress=progress, resume=resume)


def _check_backend(backend: str, workers: int | None) -> None:
    if backend not in ("process", "ray"):
        raise ValueError(f"backend={backend!r} must be 'process' or 'ray'")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers={workers!r} must be a positive integer")


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by an interrupt; ``kept`` are the seeds whose results are written (and aggregated)."""

    def __init__(self, key: str, kept: Sequence[int], folder: Path | None) -> None:
        super().__init__(f"{key}: seeds {list(kept)} are kept"
                         + (f" and aggregated in {folder}; rerun with --resume to finish the others" if folder
                            and kept else ""))
        self.kept, self.folder = list(kept), folder


def sweep_plan(plan, *, workers: int | None = None, backend: Backend = "process", address: str | None = None,
               progress: bool | None = None, resume: bool = False) -> SweepResult:
    """Every seed of ``plan`` (a :class:`~icml26.runner.RunPlan`), ``workers`` at a time, each at one torch
    thread, then the aggregate (see the module docstring).

    ``resume=True`` skips the seeds whose results of the same configuration are already in the folder. An
    interrupt (Ctrl-C) cancels the pending seeds, stops the running ones, aggregates the finished seeds and
    raises :class:`SweepInterrupted` naming them.
    """
    from icml26.common.seeding import default_threads
    from icml26.runner import write_result

    _check_backend(backend, workers)
    key, seeds = plan.key, list(plan.seeds)
    folder = plan.folder
    workers = max(1, min(workers or default_threads(), len(seeds)))
    want = plan.config_hash
    done_before: dict[int, Any] = {}
    if folder is not None:
        done_before = seeds_in(folder, key, want)  # seeds of another configuration: refused before any work
    if resume:
        if folder is None:
            raise ValueError("resume=True needs an output folder (out=) holding the finished seeds")
        seeds = [s for s in seeds if s not in done_before]
        if not seeds:
            log.warning("%s: every seed of %s is already in %s; aggregating", key, list(plan.seeds), folder)
    import sys

    print(f"{key}: {len(seeds)} seed(s) {seeds}" + (f" ({len(plan.seeds) - len(seeds)} finished before)"
                                                    if resume else "")
          + f", {workers} worker(s) ({backend}), one torch thread each; "
          + (f"writing {folder}" if folder is not None else "writing nothing"), file=sys.stderr, flush=True)

    per_seed: dict[int, Result] = {}
    failed: list[dict[str, Any]] = []

    def finished(seed: int, value: Any, error: BaseException | None) -> None:
        if error is not None:
            text = f"{type(error).__name__}: {error}"
            failed.append({"seed": seed, "error": text})
            log.error("%s seed %d failed: %s", key, seed, text)
            return
        data, figures = value
        try:
            path = write_result(folder / "seeds" / str(seed), data, figures) if folder is not None else None
        except OSError as exc:  # a full disk or a read-only folder costs this seed, recorded; the others go on
            text = f"{type(exc).__name__}: cannot write {folder / 'seeds' / str(seed)} ({exc.strerror or exc})"
            failed.append({"seed": seed, "error": text})
            log.error("%s seed %d failed: %s", key, seed, text)
            return
        per_seed[seed] = Result(data, path=path)

    bar = _progress(total=len(seeds), enabled=progress, desc=f"{key} seeds")
    job_plan = plan.replace(threads=1)
    args = [(job_plan, s, folder is not None) for s in seeds]
    began: dict[int, float] = {}  # seed -> when a worker started it (the process backend tells)
    stop_beat = _heartbeat(key, seeds, per_seed, failed, progress, began if backend == "process" else None)
    try:
        if backend == "process":
            _run_processes(args, max(1, workers), finished, bar,
                           began=lambda seed: began.setdefault(seed, time.perf_counter()))
        else:
            _run_ray(args, max(1, workers), address, finished, bar)
    except KeyboardInterrupt:
        stop_beat()
        bar.close()
        kept = sorted(set(per_seed) | set(done_before))
        if folder is not None and kept:
            data, figures = aggregate_folder(key, folder, {}, sorted(failed, key=lambda f: f["seed"]),
                                             provenance={"sweep_backend": backend, "sweep_workers": workers,
                                                         "interrupted": True}, expect=want)
            write_result(folder, data, figures)
        raise SweepInterrupted(key, kept, folder) from None
    finally:
        stop_beat()
    bar.close()

    if not per_seed and not (resume and done_before):
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




HEARTBEAT_S = 60.0
"""Off a terminal, a sweep prints a line this often (seconds) naming the finished and the remaining seeds."""


def _heartbeat(key: str, seeds: Sequence[int], per_seed: Mapping[int, Any], failed: Sequence[Mapping[str, Any]],
               progress: bool | None, began: Mapping[int, float] | None = None):
    """Start the heartbeat thread (off a terminal, unless ``progress`` is True); returns its stop function.

    ``began`` (seed -> start time, filled as workers start seeds) splits the unfinished seeds into the
    running ones, each with its time so far, and the queued ones; without it they are named together.
    """
    import sys
    import threading
    import time

    if progress or (progress is None and sys.stderr.isatty()) or not seeds:
        return lambda: None
    stop, start = threading.Event(), time.perf_counter()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            done = set(per_seed) | {int(f["seed"]) for f in failed}
            left = [s for s in seeds if s not in done]
            now = time.perf_counter()
            if began is None:
                where = f"running or queued: {left}"
            else:
                times = dict(began)
                running = ", ".join(f"{s} ({now - times[s]:.0f} s)" for s in left if s in times)
                where = f"running: {running or '-'}; queued: {[s for s in left if s not in times]}"
            print(f"  ... {key}: {now - start:.0f} s elapsed; {len(done)}/{len(seeds)} seeds finished"
                  f"{f' ({len(failed)} failed)' if failed else ''}; {where}", file=sys.stderr, flush=True)

    threading.Thread(target=beat, name="icml26-sweep-heartbeat", daemon=True).start()
    return stop.set


def _run_processes(args, workers: int, finished, bar, began=None) -> None:
    if workers == 1:
        # In this process: the runner runs torch and NumPy's BLAS at the plan's one thread (``_job``),
        # as in the spawned workers, so a seed's float sums do not depend on the worker count.
        for a in args:
            if began is not None:
                began(a[1])
            try:
                value, error = _job(*a), None
            except Exception as exc:  # recorded; the sweep goes on
                log.debug("%s", traceback.format_exc())
                value, error = None, exc
            finished(a[1], value, error)
            bar.update(1)
        return
    run_jobs([(a[1], a) for a in args], workers, finished, fn=_job, bar=bar, began=began)


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
        pending = {remote.remote(*a): a[1] for a in args}
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
    from icml26.provenance import git_commit
    from icml26.runner import arms_record, claim_block, config_hash

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
    out["provenance"]["rederived_at"] = git_commit()[0]
    validate(out)
    return out


def expected_seconds(key: str, results: str | os.PathLike = "results") -> float:
    """One seed's wall time on one core: the larger of the committed result's (its seeds' mean) and the
    last ``run all``'s (``results/run_all.json``); 0 when neither is known.

    The last ``run all`` counts because a committed sweep's seeds may have run with warm caches (fox's
    trained model, robuq's FP model) that a fresh clone builds first: fox's seeds took 66-79 s, its seed
    in a fresh ``run all`` 297 s, and scheduled last on that estimate it ran alone for minutes."""
    estimates = [0.0]
    try:
        prov = json.loads((Path(results) / key / "result.json").read_text(encoding="utf-8"))["provenance"]
        times = list((prov.get("seed_wall_times_s") or {}).values()) or [prov["wall_time_s"]]
        estimates.append(float(sum(times) / len(times)))
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        pass
    try:
        rows = json.loads((Path(results) / "run_all.json").read_text(encoding="utf-8"))["papers"]
        estimates += [float(r["wall_time_s"]) for r in rows if r.get("paper") == key and r.get("wall_time_s")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return max(e for e in estimates if math.isfinite(e))


@dataclasses.dataclass
class RunAllResult:
    """What ``icml26 run all`` did: per paper its status and seconds, and the total wall time."""

    rows: list[dict[str, Any]]
    wall_time_s: float
    workers: int
    machine_speed: dict[str, dict[str, float]] | None = None
    """:func:`icml26.provenance.machine_speed` measured ``before`` the papers ran and ``after``."""

    @property
    def failed(self) -> list[str]:
        return [r["paper"] for r in self.rows if r["status"] == "failed"]

    def to_dict(self) -> dict[str, Any]:
        from icml26.provenance import cpu_capability, cpu_model

        return {"wall_time_s": round(self.wall_time_s, 1), "workers": self.workers, "cpu": cpu_model(),
                "cpu_capability": cpu_capability(),
                **({"machine_speed": self.machine_speed} if self.machine_speed else {}),
                "serial_time_s": round(sum(r.get("wall_time_s") or 0.0 for r in self.rows), 1),
                "papers": self.rows}


def _claim_status_across_runs(key: str, data: Mapping[str, Any], out: str | os.PathLike | None) -> str:
    """The claim's status as the report reads it: headline checks measured in a further run and a
    second budget read from the paper's further runs in ``out`` (the result's own status without them)."""
    from icml26.budgets import claim_across_runs
    from icml26.results import collect_extra

    if out is None:
        return data["claim"].get("status")
    return claim_across_runs(data, collect_extra(out, paper=key).get(key, {}))[0]


def run_all(keys: Sequence[str], *, setting: str = "quick", seed: int = 0, device: str = "cpu",
            out: str | os.PathLike | None = "results", workers: int | None = None,
            progress: bool | None = None, echo=print) -> RunAllResult:
    """Every paper in ``keys`` once (``seed``), ``workers`` at a time (one torch thread each), the most
    expensive first (by the committed seed times), each written as it finishes (:func:`~icml26.runner.write_run`:
    a paper whose folder holds a sweep gets this seed merged into its aggregate). A paper that fails is
    recorded and the others go on; one line per finished paper, and off a terminal a heartbeat naming
    the running papers every minute. The machine's one-thread speed
    (:func:`~icml26.provenance.machine_speed`) is measured before the papers start and after they end,
    outside the job's wall time, so that runs on different machines can be compared.
    """
    import sys
    import threading
    import time

    from icml26.common.seeding import default_threads
    from icml26.provenance import machine_speed
    from icml26.runner import RunPlan, write_run

    if setting not in ("full", "quick", "tiny"):
        raise ValueError(f"setting={setting!r} must be 'full', 'quick' or 'tiny'")
    workers = max(1, min(workers or default_threads(), len(keys) or 1))
    plans: dict[str, Any] = {}
    unplanned: dict[str, BaseException] = {}
    for key in keys:  # every plan built (and its folder checked) before any paper runs
        try:
            plans[key] = RunPlan.build(key, setting=setting, seeds=(seed,), device=device, threads=1, out=out)
        except Exception as exc:  # a paper that cannot run here (a missing extra) is recorded; the others go on
            unplanned[key] = exc
    order = sorted(keys, key=lambda k: -expected_seconds(k, out or "results"))
    rows: dict[str, dict[str, Any]] = {}
    speed = {"before": machine_speed()}  # the machine's one-thread rates, to compare runs on other machines
    started_at = time.perf_counter()
    running: dict[str, float] = {}
    lock = threading.Lock()
    echo(f"running {len(order)} paper(s), setting {setting}, seed {seed}, {workers} worker(s) of one thread, "
         f"most expensive first; results in {out if out is not None else '(not written)'}", flush=True)

    def finished(key: str, value: Any, error: BaseException | None) -> None:
        with lock:
            running.pop(key, None)
        if error is None:
            data, figures = value
            try:
                result = write_run(Path(out) / key, data, figures) if out is not None else Result(data)
                status = _claim_status_across_runs(key, result.data, out)
            except Exception as exc:  # a write that fails (full disk, read-only folder), or a corrupt further run
                # of this paper, costs this paper only
                error = exc
            else:
                claim = result.data["claim"]
                rows[key] = {"paper": key, "status": "ok", "claim_status": status,
                             "claim_passed": claim["passed"], "wall_time_s": data["provenance"]["wall_time_s"],
                             "seeds_in_aggregate": len(result.data.get("seeds", [seed]))}
                if data["provenance"].get("stage_seconds"):  # where this paper's time went
                    rows[key]["stage_seconds"] = data["provenance"]["stage_seconds"]
        if error is not None:
            rows[key] = {"paper": key, "status": "failed", "error": f"{type(error).__name__}: {error}",
                         "wall_time_s": None}
        row = rows[key]
        done = len(rows)
        text = (f"{row['claim_status']} ({row['wall_time_s']:.0f} s"
                + (f"; merged into the {row['seeds_in_aggregate']}-seed aggregate)" if row["seeds_in_aggregate"] > 1
                   else ")")
                if row["status"] == "ok" else f"FAILED: {row['error']}")
        echo(f"[{done}/{len(keys)}] {key}: {text}", flush=True)

    stop = threading.Event()
    heartbeat = None
    if not (progress or (progress is None and sys.stderr.isatty())):
        def beat() -> None:
            while not stop.wait(60.0):
                with lock:
                    now = time.perf_counter()
                    names = ", ".join(f"{k} {now - t:.0f} s" for k, t in running.items())
                echo(f"  ... {time.perf_counter() - started_at:.0f} s elapsed; running: {names or '-'}", flush=True)
        heartbeat = threading.Thread(target=beat, name="icml26-heartbeat", daemon=True)
        heartbeat.start()

    def note_start(key: str) -> None:
        with lock:
            running[key] = time.perf_counter()

    for key in [k for k in order if k in unplanned]:
        finished(key, None, unplanned[key])
    order = [k for k in order if k in plans]
    try:
        if workers == 1:  # one thread for torch and BLAS alike, set by the runner (``_job``)
            for key in order:
                note_start(key)
                try:
                    value, error = _job(plans[key], seed, out is not None), None
                except Exception as exc:
                    value, error = None, exc
                finished(key, value, error)
        else:
            run_jobs([(k, (plans[k], seed, out is not None)) for k in order], workers, finished, fn=_job,
                     began=note_start)
    finally:
        stop.set()
    wall = time.perf_counter() - started_at
    speed["after"] = machine_speed()
    return RunAllResult([rows[k] for k in [*unplanned, *order] if k in rows], wall, workers, speed)
