"""Running a paper's reproduction: seeding, threads, timing, provenance, writing.

An experiment module (``icml26/papers/<key>/experiment.py``) follows
:class:`icml26.contract.Experiment`: ``Config`` (full scale, ``quick()``, ``tiny()``),
``CHECKS`` (the paper's ``claims.py``), ``run(config, ctx) -> Outcome`` and optionally
``plot(data)`` and ``STREAMS``.

:class:`RunPlan` is one run decided before any work: the paper, its setting and seeds, the
config built and validated once, the device, the torch threads and the output folder. The CLI,
:func:`run`, :func:`icml26.sweep.sweep` and every sweep worker take a plan; nothing builds the
config a second time, and the runner alone sets torch's threads (an experiment that needs fewer
declares ``THREADS``, or a config field ``threads``, and the plan caps the count).

:func:`run` checks the output folder, seeds everything, sets threads, times the run,
puts the measured checks in declaration order (refusing undeclared ones or moved bars),
records provenance, validates the result, and writes the PNGs and then ``result.json``
atomically: a run that fails writes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import torch

from icml26 import provenance as _prov
from icml26 import registry
from icml26.common.alloc import heap_allocations
from icml26.common.config import apply_overrides, config_to_dict
from icml26.common.extras import MissingExtraError
from icml26.common.seeding import default_threads, resolve_device, seed_everything, set_threads
from icml26.contract import Outcome, RunContext, curves_to_dicts, finish_checks
from icml26.render import render_figures, render_with
from icml26.results import (
    SCHEMA_VERSION,
    Result,
    _json_default,
    config_hash,
    validate,
    write_together,
)
from icml26.seeds import aggregate_folder, parse_seeds, seeds_in

__all__ = [
    "MeasuredNothingError",
    "PaperNotImplementedError",
    "RunContext",
    "RunPlan",
    "build_config",
    "arms_record",
    "check_out",
    "claim_block",
    "config_hash",
    "execute",
    "execute_plan",
    "implemented_spec",
    "render_figures",
    "render_with",
    "run",
    "write_result",
    "write_run",
]

log = logging.getLogger(__name__)
Setting = Literal["full", "quick", "tiny"]


class PaperNotImplementedError(RuntimeError):
    """The paper is registered but its reproduction does not exist yet."""


class MeasuredNothingError(ValueError):
    """A run finished but a metric is not finite: the settings gave it nothing to measure there (a budget too
    small for an episode to end, an empty split); nothing is written. The user's settings, not a bug."""


def build_config(key: str, setting: Setting = "quick", overrides: Mapping[str, Any] | None = None):
    """The config of ``key`` for ``setting`` with ``overrides`` applied (validated)."""
    spec = implemented_spec(key)
    module = spec.load_experiment()
    cls = module.Config
    if setting == "full":
        config = cls()
    elif setting == "quick":
        config = cls.quick()
    elif setting == "tiny":
        config = cls.tiny()
    else:
        raise ValueError(f"setting={setting!r} must be 'full', 'quick' or 'tiny'")
    return apply_overrides(config, overrides)


def implemented_spec(key: str) -> registry.PaperSpec:
    """The registry entry of ``key`` if it can run here; a clear error if it is planned or misses an extra."""
    spec = registry.get(key)
    if not spec.implemented:
        raise PaperNotImplementedError(
            f"{key} is registered but not implemented yet (status: planned); "
            f"`icml26 list` shows which papers can run"
        )
    missing = spec.missing_extras()
    if missing:
        raise MissingExtraError(
            f"{key} needs the extra(s) {', '.join(missing)}; run: {spec.install_hint()}"
        )
    return spec



def experiment_threads(module: Any, config: Any) -> int | None:
    """The most torch threads an experiment declares it runs at: its module's ``THREADS``, or a
    positive config field ``threads`` (``0``: no limit); ``None`` when it declares neither."""
    caps = [getattr(module, "THREADS", None), getattr(config, "threads", None)]
    caps = [int(c) for c in caps if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return min(caps) if caps else None


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """One reproduction, decided and validated before any work starts.

    Build it with :meth:`build` (every user error surfaces there, naming the argument); hand it to
    :func:`execute_plan` (one seed, nothing written), :func:`run_plan` (one seed, written) or
    :func:`icml26.sweep.sweep_plan` (several seeds). It pickles, so a sweep's workers receive the
    config the driver built instead of building their own.
    """

    key: str
    setting: Setting
    seeds: tuple[int, ...]
    config: Any
    """The paper's ``Config`` for ``setting`` with the overrides applied (validated)."""
    overrides: Mapping[str, Any]
    """The overrides as given (kept for the record; already inside ``config``)."""
    device: str
    threads: int
    """torch intra-op threads of one seed: the request (default: every core, or ``ICML26_THREADS``),
    capped by what the experiment declares (:func:`experiment_threads`)."""
    out: Path | None
    """The results folder (``<out>/<key>`` is written and was checked writable); ``None`` writes nothing."""

    @classmethod
    def build(cls, key: str, *, setting: Setting = "quick", seeds: Sequence[int] | str = (0,),
              overrides: Mapping[str, Any] | None = None, device: str | torch.device | None = "cpu",
              threads: int | None = None, out: str | os.PathLike | None = "results") -> RunPlan:
        if setting not in ("full", "quick", "tiny"):
            raise ValueError(f"setting={setting!r} must be 'full', 'quick' or 'tiny'")
        seed_list = tuple(parse_seeds(seeds))
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads={threads!r} must be a positive integer (None: every core)")
        spec = implemented_spec(key)
        config = build_config(key, setting, overrides)  # a user error surfaces before any check of out
        dev = str(resolve_device(device))
        requested = default_threads() if threads is None else threads
        cap = experiment_threads(spec.load_experiment(), config)
        folder = None
        if out is not None:
            check_out(out, key)
            folder = Path(out)
        return cls(key=key, setting=setting, seeds=seed_list, config=config, overrides=dict(overrides or {}),
                   device=dev, threads=requested if cap is None else min(requested, cap), out=folder)

    @property
    def folder(self) -> Path | None:
        """``<out>/<key>``, or ``None`` when the plan writes nothing."""
        return None if self.out is None else self.out / self.key

    @property
    def config_hash(self) -> str:
        return config_hash(self.key, self.setting, config_to_dict(self.config))

    def replace(self, **changes: Any) -> RunPlan:
        """A copy with ``changes`` (e.g. ``threads=1`` for a sweep's workers)."""
        return dataclasses.replace(self, **changes)


def _declared_streams(module: Any) -> dict[str, str] | None:
    """The experiment's ``STREAMS`` (name -> what it draws), or ``None`` when it declares none."""
    streams = getattr(module, "STREAMS", None)
    return None if streams is None else dict(streams)


def check_out(out: str | os.PathLike, key: str) -> Path:
    """The folder ``<out>/<key>`` a run will write, created and proven writable now.

    Raises ``ValueError`` naming ``out`` when it is a file, lies under a file, or cannot be
    written, so that a long run does not fail only at its end.
    """
    base = Path(out)
    for parent in (base, *base.parents):
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"out={str(out)!r}: {parent} is a file, not a folder; pass a results folder")
    folder = base / key
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"out={str(out)!r}: cannot write {folder} ({exc.strerror or exc}); "
                         "pass a writable results folder") from None
    return folder


def run(
    key: str,
    quick: bool = True,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    *,
    tiny: bool = False,
    setting: Setting | None = None,
    device: str | torch.device | None = "cpu",
    out: str | os.PathLike | None = "results",
    threads: int | None = None,
    progress: bool | None = None,
) -> Result:
    """Run the reproduction of paper ``key`` and return its :class:`~icml26.results.Result`.

    Args:
        key: a registry key (``icml26.list_papers()``).
        quick: the CPU setting (``Config.quick()``); ``False`` runs the paper's full scale.
        seed: seeds Python, NumPy and torch, and every generator the experiment draws.
        overrides: config fields to change, typed values or strings (``{"steps": "100"}``).
        tiny: the contract-suite setting (``Config.tiny()``), overriding ``quick``.
        setting: ``"full"``, ``"quick"`` or ``"tiny"``; when given it replaces ``quick`` and ``tiny``.
        device: ``"cpu"`` (default) or ``"cuda"``.
        out: results folder; the run writes ``<out>/<key>/result.json`` and its PNGs.
            ``None`` writes nothing.
        threads: torch threads (default: every core, or ``ICML26_THREADS``).
        progress: show progress bars (default: only on a terminal).
    """
    if setting is None:
        setting = "tiny" if tiny else ("quick" if quick else "full")
    plan = RunPlan.build(key, setting=setting, seeds=(seed,), overrides=overrides, device=device,
                         threads=threads, out=out)
    return run_plan(plan, progress=progress)


def run_plan(plan: RunPlan, *, progress: bool | None = None) -> Result:
    """Run the plan's (single) seed and write it (:func:`write_run`), or return it unwritten when the
    plan has no ``out``. A folder holding a sweep of another configuration is refused before any work."""
    if len(plan.seeds) != 1:
        raise ValueError(f"run_plan runs one seed; the plan has {len(plan.seeds)} (use icml26.sweep.sweep_plan)")
    folder = plan.folder
    if folder is not None and (folder / "seeds").is_dir():
        # the folder holds a sweep: this seed joins it (same configuration only) instead of
        # replacing the multi-seed aggregate with a single seed
        seeds_in(folder, plan.key, plan.config_hash)
    data, figures = execute_plan(plan, plan.seeds[0], progress=progress, render=folder is not None)
    if folder is None:
        return Result(data)
    return write_run(folder, data, figures)


def write_run(folder: Path, data: Mapping[str, Any], figures: Mapping[str, bytes]) -> Result:
    """Write one seed's result into ``folder``: as the folder's result, or, when the folder holds a
    sweep (``seeds/``), as ``seeds/<seed>/`` with the aggregate rebuilt over every seed of the same
    configuration, so that a single seed never replaces a multi-seed aggregate."""
    folder = Path(folder)
    key = data["paper"]
    if not (folder / "seeds").is_dir():
        return Result(dict(data), path=write_result(folder, data, figures))
    seed = int(data["seed"])
    seeds_in(folder, key, data["config_hash"])  # another configuration's seeds: refuse before writing anything
    write_result(folder / "seeds" / str(seed), data, figures)
    merged, merged_figures = aggregate_folder(key, folder, {}, expect=data["config_hash"])
    log.warning("%s: %s holds a sweep; seed %d was written to seeds/%d and the aggregate rebuilt over seeds %s",
                key, folder, seed, seed, merged["seeds"])
    return Result(merged, path=write_result(folder, merged, merged_figures))


def execute(
    key: str,
    setting: Setting,
    seed: int,
    overrides: Mapping[str, Any] | None = None,
    *,
    device: str | torch.device | None = "cpu",
    threads: int | None = None,
    progress: bool | None = None,
    render: bool = True,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Compute one seed's result without writing anything: ``(result data, {png name: bytes})``.

    Builds a :class:`RunPlan` and calls :func:`execute_plan`.
    """
    plan = RunPlan.build(key, setting=setting, seeds=(seed,), overrides=overrides, device=device,
                         threads=threads, out=None)
    return execute_plan(plan, seed, progress=progress, render=render)


def execute_plan(plan: RunPlan, seed: int, *, progress: bool | None = None,
                 render: bool = True) -> tuple[dict[str, Any], dict[str, bytes]]:
    """One seed of ``plan`` without writing anything: ``(result data, {png name: bytes})``.

    This is what a sweep's workers (processes or Ray tasks) run; the caller writes. The config is
    the plan's (not rebuilt); torch's threads are set here, to ``plan.threads``, and nowhere else.
    """
    key, setting, config = plan.key, plan.setting, plan.config
    spec = implemented_spec(key)
    module = spec.load_experiment()
    dev = resolve_device(plan.device)
    n_threads = set_threads(plan.threads)
    seed_everything(seed)
    ctx = RunContext(seed=seed, device=dev, setting=setting, threads=n_threads,
                     show_progress=progress, streams=_declared_streams(module))

    log.info("running %s (%s, seed %d) on %s", key, setting, seed, dev)
    code = _prov.git_commit()
    start = time.perf_counter()
    with _allocations(), _blas_threads(n_threads):
        outcome = module.run(config, ctx)
    end = time.perf_counter()
    wall = end - start
    if ctx.stage_marks:  # where the time went, by the stages the experiment announced
        ctx.provenance["stage_seconds"] = ctx.stage_seconds(start, end)
    if not isinstance(outcome, Outcome):
        raise TypeError(f"{spec.experiment_module}.run must return an Outcome, got {type(outcome)!r}")

    bad = [f"{arm}.{m}={v}" for arm, vals in outcome.metrics.items() for m, v in vals.items()
           if not math.isfinite(float(v))]
    if bad:  # JSON has no NaN; say which value is missing instead of failing in the encoder
        raise MeasuredNothingError(f"{key} ({setting}) produced non-finite metrics: {', '.join(bad)}; the run measured "
                         "nothing there (e.g. too few steps for an episode to end): give it a larger budget")
    declared = getattr(module, "CHECKS", None)
    measured = finish_checks(declared, outcome.checks, where=spec.experiment_module, setting=setting) \
        if declared is not None \
        else outcome.checks
    checks = [c.to_dict() for c in measured]
    config_dict = config_to_dict(config)
    data: dict[str, Any] = {
        "schema": SCHEMA_VERSION if declared is not None else 1,  # 1: a paper not yet on claims.py
        "paper": key,
        "quick": setting != "full",
        "setting": setting,
        "seed": seed,
        "config": config_dict,
        "config_hash": config_hash(key, setting, config_dict),
        "metrics": {arm: {m: float(v) for m, v in values.items()}
                    for arm, values in outcome.metrics.items()},
        "claim": claim_block(spec.claim, checks),
        "arms": arms_record(spec.load_arms(), ctx.tuning),
        "curves": _clean(curves_to_dicts(outcome.curves)),
        "figures": [],
        "notes": list(outcome.notes),
        "provenance": _prov.provenance(ctx, wall, code),
    }
    data = json.loads(_dumps(data))  # exactly what a reader of result.json sees
    # Render figures from the JSON-ready data before anything is written.
    figures = render_figures(key, data) if render else {}
    data["figures"] = sorted(figures)
    validate(data)
    return data, figures


def _blas_threads(n: int):
    """NumPy's and SciPy's BLAS at the run's thread count, as torch is: a seed run with ``threads=1``
    sums in the order a sweep's one-thread workers use (their BLAS is limited to one thread too)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n, user_api="blas")


def _allocations():
    """The run's allocator setting: tensors kept mapped between passes (:func:`icml26.common.alloc.heap_allocations`;
    changes speed, never a number), unless ``ICML26_HEAP_ALLOCATIONS=0`` leaves glibc's defaults."""
    flag = os.environ.get("ICML26_HEAP_ALLOCATIONS", "1").strip()
    if flag not in ("0", "1"):
        raise ValueError(f"ICML26_HEAP_ALLOCATIONS={flag!r} must be 1 (the default) or 0 (glibc's own thresholds)")
    return heap_allocations() if flag == "1" else contextlib.nullcontext(False)


def claim_block(text: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``claim`` object of a result: its checks, its status (supported / refuted / inconclusive,
    decided by the headline checks only), the reason, and the verdict counts per role."""
    from icml26.aggregate import CLAIM_RULE, claim_status, gate, role_counts

    gate(checks)  # a check whose precondition did not hold on this run is gated, not scored
    status, reason = claim_status(checks)
    return {"text": text, "checks": checks, "claim_rule": CLAIM_RULE, "status": status, "reason": reason,
            "counts": role_counts(checks), "passed": status == "supported"}


def arms_record(declared: Mapping[str, Any], tuning: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The result's ``arms``: each declared arm (space, trial budget, split) with what the shared tuner
    chose in this run (``calls``: one record per :meth:`RunContext.tune` call; absent when the arm was
    not tuned in this run, e.g. a fixed setting)."""
    out: dict[str, Any] = {}
    for arm_id, arm in declared.items():
        out[arm_id] = arm.to_dict()
        if arm_id in tuning:
            out[arm_id]["calls"] = _clean(tuning[arm_id]["calls"])
    undeclared = sorted(set(tuning) - set(declared))
    if undeclared:
        raise RuntimeError(f"tuned arm(s) {', '.join(undeclared)} are not declared in the paper's claims.py ARMS")
    return out


def write_result(folder: Path, data: Mapping[str, Any], figures: Mapping[str, bytes]) -> Path:
    """Write the PNGs and ``result.json`` into ``folder`` as one unit (:func:`~icml26.results.write_together`:
    all staged first, then renamed with ``result.json`` last and interrupts held); remove stale PNGs there."""
    folder = Path(folder)
    files = {**figures, "result.json": _dumps(data).encode("utf-8")}
    stale = [p.name for p in folder.glob("*.png") if p.name not in figures] if folder.is_dir() else []
    write_together(folder, files, last="result.json", remove=stale)
    return folder / "result.json"


def _dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, allow_nan=False, default=_json_default) + "\n"


def _clean(obj: Any) -> Any:
    """JSON-ready copy: arrays and tensors to lists, non-finite floats to ``None``."""
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj


