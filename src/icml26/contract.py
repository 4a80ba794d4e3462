"""The contract between the runner and a paper's reproduction; experiments import only this.

A paper folder ``icml26/papers/<key>/`` holds, beside its library code:

``claims.py``
    ``CHECKS = declare(CheckSpec(...), ...)``: every check of the claim, as data: an ``id``,
    a readable ``name``, the comparison (``op``, ``target``) and where the target comes from
    (``source``: the ``paper``, the ``issue`` that asked for it, or ``ours``; ``ref``: the table,
    the issue number, or a one-line reason). ``icml26 info KEY`` prints them before any run;
    no config field can move a bar.

``experiment.py``
    ``Config`` (a dataclass: defaults at the paper's scale, ``quick()``, ``tiny()``) and
    ``run(config: Config, ctx: RunContext) -> Outcome``. ``run`` computes values and turns
    each into a check with ``CHECKS[id].measure(value)``; the runner refuses a check that is
    not declared or whose bar differs from the declaration, and records a declared check that
    was not measured as not held. Optional: ``plot(data) -> {file: Figure}`` drawn from the
    result's JSON only, and ``STREAMS`` (named random streams, see :meth:`RunContext.rng`).

``probes.py``
    ``MODULES``: a :class:`ModuleCase` per ``nn.Module`` the paper exports, for the
    registry-wide module matrix (finite outputs, a gradient on every parameter, dtype and
    device following the input, a ``state_dict`` round trip); ``HOSTILE``: :class:`Probe`
    objects, bad calls to its public API and the error each must raise (or the documented
    value it returns). Both suites pick up new papers automatically.

The :class:`Experiment` protocol states the same in types.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import zlib
from typing import Any, Callable, Iterable, Literal, Mapping, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "OPS",
    "Check",
    "CheckSpec",
    "Experiment",
    "ModuleCase",
    "Probe",
    "Op",
    "Outcome",
    "RunContext",
    "Source",
    "check",
    "declare",
    "finish_checks",
]

log = logging.getLogger(__name__)

Op = Literal["<", "<=", ">", ">=", "==", "abs<="]
Source = Literal["paper", "issue", "ours"]
Setting = Literal["full", "quick", "tiny"]

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda v, t: v < t,
    "<=": lambda v, t: v <= t,
    ">": lambda v, t: v > t,
    ">=": lambda v, t: v >= t,
    "==": lambda v, t: v == t,
    "abs<=": lambda v, t: abs(v) <= t,
}
_SOURCES = ("paper", "issue", "ours")
_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


# ---------------------------------------------------------------------------
# Checks: declared as data, measured by the experiment
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Check:
    """One measured figure of a claim: ``value op target``, e.g. ``ratio <= 0.5``.

    A non-finite value never passes. ``id``, ``source`` and ``ref`` come from the
    :class:`CheckSpec` it measures (empty for an undeclared ad-hoc check).
    """

    name: str
    value: float
    op: Op
    target: float
    note: str = ""
    id: str = ""
    source: str = ""
    ref: str = ""

    @property
    def passed(self) -> bool:
        if not (math.isfinite(self.value) and math.isfinite(self.target)):
            return False
        return bool(OPS[self.op](self.value, self.target))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.id:
            out["id"] = self.id
        out.update({"name": self.name, "value": float(self.value) if math.isfinite(self.value) else None,
                    "op": self.op, "target": self.target, "passed": self.passed})
        if self.source:
            out["source"] = self.source
            out["ref"] = self.ref
        if self.note:
            out["note"] = self.note
        return out


@dataclasses.dataclass(frozen=True)
class CheckSpec:
    """A check of a paper's claim, declared before any run.

    Attributes:
        id: stable identifier (lowercase, digits, ``_``), the key experiments measure by.
        name: what is compared, in words a reader can check against the result.
        op: the comparison, one of :data:`OPS`.
        target: the bar.
        source: ``"paper"`` (a figure from the paper), ``"issue"`` (set by the issue that asked
            for the reproduction) or ``"ours"`` (our choice).
        ref: where exactly: ``"Table 3"``, ``"issue #19"``, or for ``ours`` the one-line reason.
        settings: the settings whose runs measure this check (default: every setting). A check
            declared only for ``("full",)`` is simply absent from a quick run's result, instead of
            being recorded as not measured.
    """

    id: str
    name: str
    op: Op
    target: float
    source: Source
    ref: str
    settings: tuple[str, ...] = ("full", "quick", "tiny")

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"check id {self.id!r} must be lowercase letters, digits and '_', starting with a letter")
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"check {self.id!r}: name must be a non-empty string")
        if self.op not in OPS:
            raise ValueError(f"check {self.id!r}: op {self.op!r} must be one of {', '.join(OPS)}")
        if isinstance(self.target, bool) or not isinstance(self.target, (int, float)) or not math.isfinite(self.target):
            raise ValueError(f"check {self.id!r}: target {self.target!r} must be a finite number")
        object.__setattr__(self, "target", float(self.target))
        if self.source not in _SOURCES:
            raise ValueError(f"check {self.id!r}: source {self.source!r} must be one of {', '.join(_SOURCES)}")
        if not isinstance(self.ref, str) or not self.ref.strip():
            raise ValueError(f"check {self.id!r}: ref must say where the target comes from (or why, for 'ours')")
        settings = tuple(self.settings)
        if not settings or any(s not in ("full", "quick", "tiny") for s in settings):
            raise ValueError(f"check {self.id!r}: settings {self.settings!r} must be a non-empty subset of "
                             "('full', 'quick', 'tiny')")
        object.__setattr__(self, "settings", settings)

    def measure(self, value: float, note: str = "") -> Check:
        """The measured :class:`Check` of this spec (``value`` may be NaN: not held)."""
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"check {self.id!r}: value {value!r} is not a number") from None
        return Check(name=self.name, value=value, op=self.op, target=self.target, note=note,
                     id=self.id, source=self.source, ref=self.ref)

    def not_measured(self, reason: str) -> Check:
        """The check recorded as not held because this run did not measure it."""
        return self.measure(math.nan, note=f"not measured: {reason}")

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["settings"] = list(self.settings)
        return out


def declare(*specs: CheckSpec) -> dict[str, CheckSpec]:
    """The ordered table ``{id: spec}`` of a paper's checks; ids must be unique."""
    table: dict[str, CheckSpec] = {}
    for spec in specs:
        if not isinstance(spec, CheckSpec):
            raise TypeError(f"declare() takes CheckSpec objects, got {type(spec).__name__}")
        if spec.id in table:
            raise ValueError(f"check id {spec.id!r} is declared twice")
        table[spec.id] = spec
    return table


def check(name: str, value: float, op: Op, target: float, note: str = "") -> Check:
    """An ad-hoc, undeclared check (tests and the fake papers); real papers use :class:`CheckSpec`."""
    if op not in OPS:
        raise ValueError(f"check {name!r}: op {op!r} must be one of {', '.join(OPS)}")
    return Check(name=name, value=float(value), op=op, target=float(target), note=note)


# ---------------------------------------------------------------------------
# What a run returns
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class Outcome:
    """What an experiment returns to the runner.

    Attributes:
        metrics: ``{arm: {metric: value}}``; the method's arm first, then baselines.
        checks: the measured checks (each from ``CHECKS[id].measure``).
        curves: plot series, ``{name: {"x": [...], "series": {arm: [...]}, "xlabel": …}}``.
        notes: free text shown in the report (what did not reproduce, and why).
    """

    metrics: dict[str, dict[str, float]]
    checks: list[Check]
    curves: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)


# ---------------------------------------------------------------------------
# What a run receives
# ---------------------------------------------------------------------------
def _stream_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


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
    streams: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Named random streams of the experiment (its ``STREAMS``): name -> legacy integer offset."""

    def _entropy(self, stream: str | int, index: int) -> list[int]:
        if isinstance(stream, bool) or not isinstance(stream, (str, int)):
            raise TypeError(f"stream={stream!r} must be a name (str) or a legacy integer offset")
        if not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"index={index!r} must be a non-negative integer")
        if isinstance(stream, int):
            return [self.seed, stream + int(index)]
        if stream in self.streams:
            # A stream declared with a legacy offset keeps the numbers of the bare-offset API.
            return [self.seed, int(self.streams[stream]) + int(index)]
        return [self.seed, _stream_key(stream), int(index)]

    def rng(self, stream: str | int = 0, index: int = 0) -> np.random.Generator:
        """A NumPy generator for the named ``stream`` (and replicate ``index``) of this run's seed.

        Different names give independent streams; the same (seed, name, index) the same numbers.
        """
        return np.random.default_rng(self._entropy(stream, index))

    def torch_generator(self, stream: str | int = 0, index: int = 0):
        """A CPU ``torch.Generator`` for the named ``stream`` (see :meth:`rng`)."""
        import torch

        g = torch.Generator()
        g.manual_seed(int(np.random.SeedSequence(self._entropy(stream, index)).generate_state(1)[0]))
        return g

    def seed_for(self, stream: str | int, index: int = 0) -> int:
        """A 32-bit integer seed for libraries that take one (scikit-learn, gymnasium …)."""
        return int(np.random.SeedSequence(self._entropy(stream, index)).generate_state(1)[0])

    def progress(self, iterable: Iterable | None = None, **kwargs):
        """A progress bar (terminal), or plain log lines at most every 30 s (files, batch jobs)."""
        from icml26.common.progress import progress

        return progress(iterable, enabled=self.show_progress, **kwargs)

    def stage(self, text: str) -> None:
        """Announce a stage of the run (a log line unless progress is off)."""
        if self.show_progress is not False:
            logging.getLogger("icml26.progress").info("%s", text)


@runtime_checkable
class Experiment(Protocol):
    """What ``icml26/papers/<key>/experiment.py`` provides (module-level names)."""

    Config: type
    CHECKS: Mapping[str, CheckSpec]

    def run(self, config: Any, ctx: RunContext) -> Outcome: ...


def finish_checks(declared: Mapping[str, CheckSpec], measured: list[Check], *, where: str,
                  setting: str | None = None) -> list[Check]:
    """The checks of a run in declaration order: measured ones as given, the rest not held.

    With ``setting``, a declared check whose ``settings`` exclude it is left out unless measured.

    Raises ``RuntimeError`` (an internal error, not a user's) when a measured check is not
    declared, is measured twice, or carries a bar other than its declaration's.
    """
    seen: dict[str, Check] = {}
    for c in measured:
        if not isinstance(c, Check):
            raise RuntimeError(f"{where}: checks must be Check objects, got {type(c).__name__}")
        spec = declared.get(c.id)
        if spec is None:
            raise RuntimeError(f"{where}: check {c.id or c.name!r} is not declared in the paper's claims.py")
        if c.id in seen:
            raise RuntimeError(f"{where}: check {c.id!r} was measured twice")
        if (c.op, c.target, c.name) != (spec.op, spec.target, spec.name):
            raise RuntimeError(f"{where}: check {c.id!r} carries {c.op} {c.target} but claims.py declares "
                               f"{spec.op} {spec.target}; measure it with CHECKS[{c.id!r}].measure(value)")
        seen[c.id] = c
    return [seen[i] if i in seen else spec.not_measured("this run did not compute it")
            for i, spec in declared.items() if i in seen or setting is None or setting in spec.settings]



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
