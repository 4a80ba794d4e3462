"""The contract between the runner and a paper's reproduction; experiments import only this.

A paper folder ``icml26/papers/<key>/`` holds, beside its library code:

``claims.py``
    ``CHECKS = declare(CheckSpec(...), ...)``: every check of the claim, as data: an ``id``,
    a readable ``name``, the comparison (``op``, ``target``) and where the target comes from
    (``source``: the ``paper``, the ``issue`` that asked for it, or ``ours``; ``ref``: the table,
    the issue number, or a one-line reason). ``icml26 info KEY`` prints them before any run;
    no config field can move a bar.

``config.py``
    ``Config`` (a dataclass: defaults at the paper's scale, ``quick()``, ``tiny()``).

``experiment.py``
    ``run(config: Config, ctx: RunContext) -> Outcome`` (``Config`` re-exported). ``run`` computes values and turns
    each into a check with ``CHECKS[id].measure(value)``; the runner refuses a check that is
    not declared or whose bar differs from the declaration, and records a declared check that
    was not measured as not held. Optional: ``plot(data) -> {file: Figure}`` drawn from the
    result's JSON only, and ``STREAMS`` (name -> what the stream draws; every name the
    experiment draws from, see :meth:`RunContext.rng`).

``probes.py``
    ``MODULES``: a :class:`ModuleCase` per ``nn.Module`` the paper exports, for the
    registry-wide module matrix (finite outputs, a gradient on every parameter, dtype and
    device following the input, a ``state_dict`` round trip); ``HOSTILE``: :class:`Probe`
    objects, bad calls to its public API and the error each must raise (or the documented
    value it returns). Both suites pick up new papers automatically.

The :class:`Experiment` protocol states the same in types. The checks and arms machinery lives in
:mod:`icml26.checks` and is re-exported here; this module adds what a run returns (:class:`Curve`,
:class:`Outcome`), what it receives (:class:`RunContext`) and the test declarations (:class:`Probe`,
:class:`ModuleCase`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import zlib
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = [
    "OPS",
    "ROLES",
    "annotate",
    "budget_mismatches",
    "curves_to_dicts",
    "ArmSpec",
    "Check",
    "CheckSpec",
    "Curve",
    "Replication",
    "Experiment",
    "ModuleCase",
    "Probe",
    "Op",
    "Outcome",
    "RunContext",
    "Source",
    "check",
    "declare",
    "declare_arms",
    "finish_checks",
]

log = logging.getLogger(__name__)

from icml26.checks import (  # noqa: E402  (re-exported: papers import these from icml26.contract)
    OPS,
    ROLES,
    ArmSpec,
    Check,
    CheckSpec,
    Op,
    Replication,
    Setting,
    Source,
    annotate,
    budget_mismatches,
    check,
    declare,
    declare_arms,
    finish_checks,
)


# ---------------------------------------------------------------------------
# What a run returns
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class Curve:
    """One plot series family of a run: ``series[arm][i]`` is the value at ``x[i]``.

    What :func:`icml26.results.plot_curves` draws and the aggregate averages over seeds (when every
    seed has the same ``x`` and arms). ``None``/NaN values are gaps. ``labels`` names categorical
    x positions (drawn as tick labels); ``bands`` gives a series a ``(lower, upper)`` band, ``std``
    error bars; ``extra`` holds what a paper's own ``plot`` reads beside the series.
    """

    x: Sequence[Any]
    series: Mapping[str, Sequence[Any]]
    xlabel: str = ""
    ylabel: str = ""
    title: str | None = None
    logx: bool = False
    logy: bool = False
    labels: Sequence[str] | None = None
    bands: Mapping[str, tuple[Sequence[Any], Sequence[Any]]] | None = None
    std: Mapping[str, Sequence[Any]] | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.x)
        if not self.series:
            raise ValueError("a Curve needs at least one series")
        for arm, ys in self.series.items():
            if not isinstance(arm, str):
                raise TypeError(f"series names must be str, got {arm!r}")
            if len(ys) != n:
                raise ValueError(f"series {arm!r} has {len(ys)} values for {n} x positions")
        if self.labels is not None and len(self.labels) != n:
            raise ValueError(f"labels has {len(self.labels)} entries for {n} x positions")
        for name, per_arm in (("bands", self.bands), ("std", self.std)):
            for arm in per_arm or {}:
                if arm not in self.series:
                    raise ValueError(f"{name} names {arm!r}, which is not a series")
        clash = set(self.extra) & {f.name for f in dataclasses.fields(self)}
        if clash:
            raise ValueError(f"extra must not redefine {sorted(clash)}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form results store: ``x``, ``series``, then the set options only."""
        out: dict[str, Any] = {"x": list(self.x), "series": {k: list(v) for k, v in self.series.items()}}
        if self.xlabel:
            out["xlabel"] = self.xlabel
        if self.ylabel:
            out["ylabel"] = self.ylabel
        if self.title is not None:
            out["title"] = self.title
        if self.logx:
            out["logx"] = True
        if self.logy:
            out["logy"] = True
        if self.labels is not None:
            out["labels"] = list(self.labels)
        if self.bands is not None:
            out["bands"] = {k: [list(lo), list(hi)] for k, (lo, hi) in self.bands.items()}
        if self.std is not None:
            out["std"] = {k: list(v) for k, v in self.std.items()}
        out.update(self.extra)
        return out


def curves_to_dicts(curves: Mapping[str, Curve | Mapping[str, Any]]) -> dict[str, Any]:
    """``Outcome.curves`` with every :class:`Curve` as its JSON form (plain dicts pass through)."""
    return {str(name): c.to_dict() if isinstance(c, Curve) else c for name, c in curves.items()}


@dataclasses.dataclass
class Outcome:
    """What an experiment returns to the runner.

    Attributes:
        metrics: ``{arm: {metric: value}}``; the method's arm first, then baselines.
        checks: the measured checks (each from ``CHECKS[id].measure``).
        curves: plot series, ``{name: Curve(x=[...], series={arm: [...]}, xlabel=…)}`` (a plain
            dict of the same keys is accepted too).
        notes: free text shown in the report (what did not reproduce, and why).
    """

    metrics: dict[str, dict[str, float]]
    checks: list[Check]
    curves: dict[str, Curve | dict[str, Any]] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)


# ---------------------------------------------------------------------------
# What a run receives
# ---------------------------------------------------------------------------
def _stream_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


TUNER_STREAM_PREFIX = "tune:"
"""Streams ``tune:<arm id>`` belong to :meth:`RunContext.tune`; an experiment need not declare them."""


@dataclasses.dataclass
class RunContext:
    """What the runner hands an experiment: seed, device, random streams, progress, provenance."""

    seed: int
    device: Any
    """A ``torch.device``."""
    setting: Setting
    threads: int
    show_progress: bool | None = None
    provenance: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Extra provenance an experiment records (corpus hash, cache keys …)."""
    streams: Mapping[str, str] | None = None
    """The experiment's ``STREAMS`` (name -> what the stream draws). When given, only these names
    (and the tuner's ``tune:<arm id>``) may be drawn from; ``None`` accepts any name."""
    tuning: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """What :meth:`tune` chose, per arm (written to the result's ``arms``)."""
    stage_marks: list[tuple[str, float]] = dataclasses.field(default_factory=list, repr=False)
    """``(stage, time.perf_counter())`` at each :meth:`stage` call (the run's profile: :meth:`stage_seconds`)."""

    def __post_init__(self) -> None:
        if self.streams is not None:
            for name, what in self.streams.items():
                if not isinstance(name, str) or not name or not isinstance(what, str):
                    raise TypeError(f"STREAMS must map a stream's name to a description of what it draws "
                                    f"(str -> str); got {name!r}: {what!r}")

    def _entropy(self, stream: str, index: int) -> list[int]:
        if not isinstance(stream, str) or not stream:
            raise TypeError(f"stream={stream!r} must be a stream's name (a non-empty str); integer offsets "
                            "were retired because two offsets could name the same stream")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"index={index!r} must be a non-negative integer")
        if (self.streams is not None and stream not in self.streams
                and not stream.startswith(TUNER_STREAM_PREFIX)):
            raise KeyError(f"stream {stream!r} is not declared in the experiment's STREAMS "
                           f"({', '.join(sorted(self.streams)) or 'none'}); declare it with what it draws")
        # The name is part of the entropy, so two names can never share a stream.
        return [self.seed, _stream_key(stream), int(index)]

    def rng(self, stream: str, index: int = 0) -> np.random.Generator:
        """A NumPy generator for the named ``stream`` (and replicate ``index``) of this run's seed.

        The entropy is ``[seed, crc32(stream), index]``: different names give independent streams
        (a registry-wide test checks every declared name and index < 100 for distinct seeds); the
        same (seed, name, index) gives the same numbers.
        """
        return np.random.default_rng(self._entropy(stream, index))

    def torch_generator(self, stream: str, index: int = 0):
        """A CPU ``torch.Generator`` for the named ``stream`` (see :meth:`rng`)."""
        import torch

        g = torch.Generator()
        g.manual_seed(self.seed_for(stream, index))
        return g

    def seed_for(self, stream: str, index: int = 0) -> int:
        """A 32-bit integer seed for libraries that take one (scikit-learn, gymnasium …)."""
        return int(np.random.SeedSequence(self._entropy(stream, index)).generate_state(1)[0])

    def tune(self, arm: ArmSpec, objective: Callable[[dict[str, Any]], float], *, maximize: bool,
             index: int = 0) -> dict[str, Any]:
        """Select ``arm``'s hyperparameters with the shared tuner and record the choice.

        ``objective(params) -> score`` trains or fits the arm with ``params`` and scores it on
        ``arm.select_on`` (the validation split, never the test split). Every arm goes through
        this same procedure (:func:`icml26.tuning.tune`): ``arm.trials`` configurations of its
        grid (all of them, or a subset drawn from this run's stream ``tune:<arm id>``), the best
        score wins, ties go to the earlier point in grid order, a non-finite score never wins.
        ``index`` tunes the arm again inside the same run (a replicate); each call is recorded.
        Returns the chosen ``{name: value}``.
        """
        from icml26.tuning import tune

        record = tune(arm, objective, maximize=maximize, rng=self.rng(f"tune:{arm.id}", index))
        entry = self.tuning.setdefault(arm.id, {"calls": []})
        entry["calls"].append(record)
        return dict(record["chosen"])

    def progress(self, iterable: Iterable | None = None, **kwargs):
        """A progress bar (terminal), or plain log lines at most every 30 s (files, batch jobs)."""
        from icml26.common.progress import progress

        return progress(iterable, enabled=self.show_progress, **kwargs)

    def stage(self, text: str) -> None:
        """Announce a stage of the run (a log line unless progress is off); its start is timed for the
        result's provenance (:meth:`stage_seconds`)."""
        self.stage_marks.append((str(text), time.perf_counter()))
        if self.show_progress is not False:
            logging.getLogger("icml26.progress").info("%s", text)

    def stage_seconds(self, start: float, end: float) -> dict[str, float]:
        """Wall seconds per announced stage between ``start`` and ``end`` (``time.perf_counter()``
        values): each stage runs until the next one begins; the time before the first is
        ``"(before the first stage)"``, and a stage announced twice sums its spans."""
        if end < start:
            raise ValueError(f"end={end!r} is before start={start!r}")
        bounds = [("(before the first stage)", start),
                  *[(name, min(max(t, start), end)) for name, t in self.stage_marks], ("", end)]
        spans: dict[str, float] = {}
        for (name, t0), (_, t1) in zip(bounds[:-1], bounds[1:]):
            spans[name] = spans.get(name, 0.0) + max(t1 - t0, 0.0)
        if spans["(before the first stage)"] == 0.0:
            del spans["(before the first stage)"]
        return {name: round(seconds, 3) for name, seconds in spans.items()}


@runtime_checkable
class Experiment(Protocol):
    """What ``icml26/papers/<key>/experiment.py`` provides (module-level names)."""

    Config: type
    CHECKS: Mapping[str, CheckSpec]

    def run(self, config: Any, ctx: RunContext) -> Outcome: ...


# ---------------------------------------------------------------------------
# What a paper declares for the registry-wide suites (its probes.py)
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ModuleCase:
    """A tiny instance of an exported ``nn.Module`` and an input for it.

    Attributes:
        name: shown in test ids, e.g. ``"DMANet"``.
        build: ``build() -> nn.Module``, seeded and small (milliseconds).
        inputs: ``inputs(generator) -> tuple`` of positional arguments (float32, CPU); the
            matrix casts floating tensors to the dtype and device under test.
        loss: reduces the output to a scalar for the gradient check (default: the sum of every
            floating tensor in the output).
        dtypes: the floating dtypes the module supports (``torch.float64`` is tried when listed).
        no_grad: parameter names that legitimately get no gradient from this input (with why,
            in a comment where it is declared), e.g. an embedding row never indexed.
    """

    name: str
    build: Callable[[], Any]
    inputs: Callable[[Any], tuple]
    loss: Callable[[Any], Any] | None = None
    dtypes: tuple[str, ...] = ("float32", "float64")
    no_grad: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Probe:
    """A hostile call to a public function and what it must do.

    Exactly one of ``raises`` (the exception type(s) the call must raise, with ``match`` a
    regular expression its message must contain, e.g. the argument's name) and ``returns``
    (a predicate on the documented value, for inputs the function accepts by design, e.g.
    "NaN propagates").
    """

    name: str
    call: Callable[[], Any]
    raises: type[BaseException] | tuple[type[BaseException], ...] | None = None
    """Default ``(ValueError, TypeError)`` when ``returns`` is not given."""
    match: str | None = None
    returns: Callable[[Any], bool] | None = None
    doc: str = ""
    """For ``returns`` probes: the documented behaviour, in words."""

    def __post_init__(self) -> None:
        if self.returns is not None and self.raises is not None:
            raise ValueError(f"probe {self.name!r}: give raises= or returns=, not both")
        if self.returns is None and self.raises is None:
            object.__setattr__(self, "raises", (ValueError, TypeError))
        if self.returns is not None and not self.doc:
            raise ValueError(f"probe {self.name!r}: a returns= probe documents the behaviour in doc=")
