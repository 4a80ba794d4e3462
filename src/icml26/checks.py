"""Checks and arms as data: what a paper's ``claims.py`` declares and a run measures.

* :class:`CheckSpec` (declared with :func:`declare`, annotated with roles, compared arms and budgets by
  :func:`annotate`): a check's id, name, comparison, bar and where the bar comes from;
  ``CHECKS[id].measure(value)`` gives the :class:`Check` a run reports; :func:`finish_checks` puts a run's
  checks in declaration order and refuses an undeclared one or a moved bar.
* :class:`ArmSpec` (:func:`declare_arms`): an arm's role and the tuning grid and budget every arm goes
  through (:func:`icml26.tuning.tune`); :class:`Replication`: the unit a check's interval is over.

Re-exported by :mod:`icml26.contract`, which papers import.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from typing import Any, Callable, Iterable, Literal, Mapping

__all__ = [
    "OPS",
    "ROLES",
    "ArmRole",
    "ArmSpec",
    "Check",
    "CheckSpec",
    "Op",
    "Replication",
    "Role",
    "Setting",
    "Source",
    "annotate",
    "budget_mismatches",
    "check",
    "declare",
    "declare_arms",
    "finish_checks",
]

log = logging.getLogger(__name__)

Op = Literal["<", "<=", ">", ">=", "==", "abs<="]
Source = Literal["paper", "issue", "ours"]
Role = Literal["headline", "supporting", "diagnostic"]
ArmRole = Literal["method", "baseline", "control"]
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
#: What a check is for: ``headline`` checks state the abstract's central claim and alone decide the
#: paper's claim status; ``supporting`` checks are scored and counted but do not decide it;
#: ``diagnostic`` checks (preconditions, sanity figures, checks true by construction) are reported
#: and never scored.
ROLES = ("headline", "supporting", "diagnostic")
_ARM_ROLES = ("method", "baseline", "control")
_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_RUN = re.compile(r"[A-Za-z0-9_.-]{1,100}")


# ---------------------------------------------------------------------------
# Checks: declared as data, measured by the experiment
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Check:
    """One measured figure of a claim: ``value op target``, e.g. ``ratio <= 0.5``.

    A non-finite value never passes. ``id``, ``source``, ``ref`` and ``role`` come from the
    :class:`CheckSpec` it measures (empty for an undeclared ad-hoc check). ``units`` holds the
    per-unit values when one run measures several independent units of replication (see
    :class:`Replication`); ``value`` is then their mean.
    """

    name: str
    value: float
    op: Op
    target: float
    note: str = ""
    id: str = ""
    source: str = ""
    ref: str = ""
    role: str = ""
    units: tuple[float, ...] | None = None
    budget: str = ""
    requires: tuple[str, ...] = ()

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
        if self.role:
            out["role"] = self.role
        if self.budget:
            out["budget"] = self.budget
        if self.requires:
            out["requires"] = list(self.requires)
        if self.units is not None:
            out["units"] = [float(u) if math.isfinite(u) else None for u in self.units]
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
        role: ``"headline"`` (states the abstract's central claim; a paper has one to three, and
            they alone decide whether its claim is supported, refuted or inconclusive),
            ``"supporting"`` (scored, does not decide the claim) or ``"diagnostic"`` (a
            precondition, a sanity figure or a check true by construction: reported, never scored).
        compares: the ids of the arms (the paper's :class:`ArmSpec` declarations) this check
            compares, method first; their tuning budgets must be equal or the difference declared.
        budget: for a comparison of trained models, the config field that sets their training
            budget (steps, epochs …); the verdict is then also read at a larger budget in a further
            run (``results/<key>/budget_x<k>/``) and marked budget-dependent if it differs there.
        requires: the ids of the checks that must hold for this one to mean anything (its
            preconditions, e.g. "the model beats its bigram" before a representation effect is read
            off it). When one of them does not hold, the check is *gated*: reported with its value,
            not scored as held or not held (:func:`icml26.aggregate.gate`).
        run: for a headline check that the paper's main result does not measure (a section too costly
            for the quick setting, e.g. on a pretrained model), the further run
            (``results/<key>/<run>/``) whose aggregate is its reading: the paper's claim is then decided
            with it (:func:`icml26.budgets.claim_across_runs`). ``None``: read in the main result only.
    """

    id: str
    name: str
    op: Op
    target: float
    source: Source
    ref: str
    settings: tuple[str, ...] = ("full", "quick", "tiny")
    role: Role = "supporting"
    compares: tuple[str, ...] = ()
    budget: str | None = None
    requires: tuple[str, ...] = ()
    run: str | None = None

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
        if self.role not in ROLES:
            raise ValueError(f"check {self.id!r}: role {self.role!r} must be one of {', '.join(ROLES)}")
        compares = tuple(self.compares)
        if any(not isinstance(a, str) or not _ID.match(a) for a in compares) or len(set(compares)) != len(compares):
            raise ValueError(f"check {self.id!r}: compares {self.compares!r} must be distinct arm ids")
        if len(compares) == 1:
            raise ValueError(f"check {self.id!r}: compares names one arm; a comparison needs two or more")
        object.__setattr__(self, "compares", compares)
        if self.budget is not None and (not isinstance(self.budget, str) or not self.budget.isidentifier()):
            raise ValueError(f"check {self.id!r}: budget {self.budget!r} must name a config field")
        requires = (self.requires,) if isinstance(self.requires, str) else tuple(self.requires)
        if any(not isinstance(r, str) or not _ID.match(r) for r in requires) or len(set(requires)) != len(requires):
            raise ValueError(f"check {self.id!r}: requires {self.requires!r} must be distinct check ids")
        if self.id in requires:
            raise ValueError(f"check {self.id!r}: requires names the check itself; a precondition is another check")
        object.__setattr__(self, "requires", requires)
        if self.run is not None and (not isinstance(self.run, str) or not _RUN.fullmatch(self.run)
                                     or self.run in (".", "..")):
            raise ValueError(f"check {self.id!r}: run {self.run!r} must be a further run's folder name "
                             "(letters, digits, '_', '-', '.'), e.g. 'smollm2'")

    def measure(self, value: float, note: str = "", *, units: Iterable[float] | None = None) -> Check:
        """The measured :class:`Check` of this spec (``value`` may be NaN: not held).

        ``units``: the values of the independent units of replication inside this run (e.g. one
        per forget-set draw, see :class:`Replication`); ``value`` must then be their mean (NaN
        units are left out), so that intervals pooled over the units describe ``value``.
        """
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"check {self.id!r}: value {value!r} is not a number") from None
        per_unit = None
        if units is not None:
            try:
                per_unit = tuple(float(u) for u in units)
            except (TypeError, ValueError):
                raise TypeError(f"check {self.id!r}: units must be numbers") from None
            finite = [u for u in per_unit if math.isfinite(u)]
            if not per_unit:
                raise ValueError(f"check {self.id!r}: units is empty; pass None when the run has one unit")
            mean = math.fsum(finite) / len(finite) if finite else math.nan
            if math.isfinite(value) != math.isfinite(mean) or (
                    math.isfinite(value) and abs(value - mean) > 1e-9 * max(1.0, abs(mean))):
                raise ValueError(f"check {self.id!r}: value {value!r} is not the mean of its units ({mean!r}); "
                                 "measure the units' mean, or leave units out")
        return Check(name=self.name, value=value, op=self.op, target=self.target, note=note,
                     id=self.id, source=self.source, ref=self.ref, role=self.role, units=per_unit,
                     budget=self.budget or "", requires=self.requires)

    def not_measured(self, reason: str) -> Check:
        """The check recorded as not held because this run did not measure it."""
        return self.measure(math.nan, note=f"not measured: {reason}")

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["settings"] = list(self.settings)
        out["compares"] = list(self.compares)
        out["requires"] = list(self.requires)
        return out


def _id_table(items: tuple, kind: type, caller: str, noun: str) -> dict[str, Any]:
    """``{item.id: item}`` in order; every item a ``kind``, no id twice."""
    table: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(f"{caller}() takes {kind.__name__} objects, got {type(item).__name__}")
        if item.id in table:
            raise ValueError(f"{noun} id {item.id!r} is declared twice")
        table[item.id] = item
    return table


def declare(*specs: CheckSpec) -> dict[str, CheckSpec]:
    """The ordered table ``{id: spec}`` of a paper's checks; ids must be unique and every
    precondition (``requires``) a declared check."""
    table = _id_table(specs, CheckSpec, "declare", "check")
    _check_requires(table, "declare()")
    return table


def _check_requires(table: Mapping[str, CheckSpec], where: str) -> None:
    """Every ``requires`` id names a declared check, and no precondition is itself gated (one level:
    a precondition is a plain fact about the run, e.g. a model beating its bigram)."""
    for spec in table.values():
        unknown = [r for r in spec.requires if r not in table]
        if unknown:
            raise ValueError(f"{where}: check {spec.id!r} requires undeclared check(s) {', '.join(unknown)}")
        chained = [r for r in spec.requires if table[r].requires]
        if chained:
            raise ValueError(f"{where}: check {spec.id!r} requires {', '.join(chained)}, which has preconditions "
                             "of its own; require the underlying precondition directly")


def annotate(table: Mapping[str, CheckSpec], *, headline: Iterable[str] = (), diagnostic: Iterable[str] = (),
             compares: Mapping[str, Iterable[str]] | None = None,
             budget: Mapping[str, str] | None = None,
             requires: Mapping[str, Iterable[str]] | None = None,
             run: Mapping[str, str] | None = None) -> dict[str, CheckSpec]:
    """``table`` with roles, compared arms, budget fields and further runs set, in one place per paper.

    ``headline``: the ids of the one to three checks that state the abstract's central claim;
    ``diagnostic``: preconditions, sanity figures and checks true by construction; every other
    check is ``supporting``. ``compares``: ``{check id: (method arm, baseline arm, …)}``;
    ``budget``: ``{check id: config field}`` for comparisons of trained models; ``requires``:
    ``{check id: (precondition ids)}``, the checks that must hold for it to be scored (see
    :attr:`CheckSpec.requires`); ``run``: ``{check id: further run}`` for a headline check the main
    result does not measure (see :attr:`CheckSpec.run`). Unknown ids raise, and so does a ``run`` for a
    check that is not a headline.
    """
    headline, diagnostic = tuple(headline), tuple(diagnostic)
    compares, budget, requires = dict(compares or {}), dict(budget or {}), dict(requires or {})
    run = dict(run or {})
    for name, ids in (("headline", headline), ("diagnostic", diagnostic), ("compares", compares),
                      ("budget", budget), ("requires", requires), ("run", run)):
        unknown = [i for i in ids if i not in table]
        if unknown:
            raise ValueError(f"annotate(): {name} names undeclared check(s) {', '.join(unknown)}")
    both = set(headline) & set(diagnostic)
    if both:
        raise ValueError(f"annotate(): check(s) {', '.join(sorted(both))} cannot be headline and diagnostic")
    out: dict[str, CheckSpec] = {}
    for i, spec in table.items():
        role = "headline" if i in headline else "diagnostic" if i in diagnostic else spec.role
        out[i] = dataclasses.replace(spec, role=role, compares=tuple(compares.get(i, spec.compares)),
                                     budget=budget.get(i, spec.budget), requires=requires.get(i, spec.requires),
                                     run=run.get(i, spec.run))
    stray = [i for i, spec in out.items() if spec.run is not None and spec.role != "headline"]
    if stray:
        raise ValueError(f"annotate(): check(s) {', '.join(stray)} name a further run but are not headline checks; "
                         "only a headline check is read in a further run (the others are reported where measured)")
    _check_requires(out, "annotate()")
    return out


@dataclasses.dataclass(frozen=True)
class ArmSpec:
    """One arm of a paper's comparison (the method, a baseline or a control), declared as data.

    Attributes:
        id: stable identifier (lowercase, digits, ``_``), named by :attr:`CheckSpec.compares`.
        role: ``"method"``, ``"baseline"`` or ``"control"`` (an ablation or a matched control).
        space: the hyperparameters the arm is tuned over, each with its candidate values, e.g.
            ``{"lr": (1e-3, 3e-3, 1e-2)}``; a single value is a fixed setting (say where it comes
            from in ``note``). Empty: nothing to tune.
        trials: how many configurations of ``space`` the shared tuner
            (:meth:`RunContext.tune`) evaluates; at most the grid's size (a random subset when
            smaller). Arms compared by one check get the same number unless ``reason`` says why not.
        select_on: the split the tuner scores on (never the test split).
        reason: why this arm's tuning budget or information differs from the arms it is compared
            with (required when its ``trials`` is below theirs); empty when they are treated alike.
        note: anything else a reader needs: where fixed values come from, what the arm receives.
        metrics: the arm's key in the result's ``metrics`` where it differs from ``id``.
    """

    id: str
    role: ArmRole
    space: Mapping[str, tuple] = dataclasses.field(default_factory=dict)
    trials: int = 1
    select_on: str = "validation"
    reason: str = ""
    note: str = ""
    metrics: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"arm id {self.id!r} must be lowercase letters, digits and '_', starting with a letter")
        if self.role not in _ARM_ROLES:
            raise ValueError(f"arm {self.id!r}: role {self.role!r} must be one of {', '.join(_ARM_ROLES)}")
        if not isinstance(self.space, Mapping):
            raise TypeError(f"arm {self.id!r}: space must map hyperparameter names to tuples of values")
        space = {}
        for name, values in self.space.items():
            values = tuple(values) if isinstance(values, (list, tuple)) else (values,)
            if not isinstance(name, str) or not name or not values:
                raise ValueError(f"arm {self.id!r}: space entry {name!r} needs a name and at least one value")
            space[name] = values
        object.__setattr__(self, "space", space)
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise ValueError(f"arm {self.id!r}: trials={self.trials!r} must be a positive integer")
        if self.trials > self.grid_size:
            raise ValueError(f"arm {self.id!r}: trials={self.trials} exceeds the {self.grid_size} points of its space")
        if self.select_on.strip().lower() in ("test", "test split", "evaluation"):
            raise ValueError(f"arm {self.id!r}: select_on={self.select_on!r}: arms are never tuned on the test split")

    @property
    def grid_size(self) -> int:
        return math.prod(len(v) for v in self.space.values()) if self.space else 1

    @property
    def tuned(self) -> bool:
        """Whether the arm has more than one candidate to choose from."""
        return self.grid_size > 1

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "role": self.role, "space": {k: list(v) for k, v in self.space.items()},
               "trials": self.trials, "select_on": self.select_on}
        for name in ("reason", "note", "metrics"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out


def declare_arms(*arms: ArmSpec) -> dict[str, ArmSpec]:
    """The ordered table ``{id: arm}`` of a paper's arms; ids unique, at least one ``method`` arm."""
    table = _id_table(arms, ArmSpec, "declare_arms", "arm")
    if table and not any(a.role == "method" for a in table.values()):
        raise ValueError("declare_arms(): declare the method's arm (role='method')")
    return table


def budget_mismatches(checks: Mapping[str, CheckSpec], arms: Mapping[str, ArmSpec]) -> list[str]:
    """Why the declarations break "arms compared alike": one line per problem, empty when none.

    For every check that ``compares`` arms: each arm is declared, and an arm given fewer tuning
    trials than another arm of the same comparison declares its ``reason``.
    """
    problems = []
    for spec in checks.values():
        if not spec.compares:
            continue
        missing = [a for a in spec.compares if a not in arms]
        if missing:
            problems.append(f"check {spec.id!r} compares undeclared arm(s) {', '.join(missing)}")
            continue
        most = max(arms[a].trials for a in spec.compares)
        for a in spec.compares:
            if arms[a].trials < most and not arms[a].reason.strip():
                problems.append(f"check {spec.id!r}: arm {a!r} gets {arms[a].trials} tuning trial(s), another arm "
                                f"{most}, and declares no reason")
    return problems


@dataclasses.dataclass(frozen=True)
class Replication:
    """What one independent unit of a paper's evidence is (its ``claims.py`` ``REPLICATION``).

    By default a unit is a master seed: every random stream of a run is drawn from it. A paper
    whose run holds several independent draws (each its own data split, models and evaluation
    sets) declares them as its unit and measures those checks with ``measure(value, units=...)``;
    intervals are then over the pooled draws of every seed.

    Attributes:
        unit: what one unit is, in words (``"forget-set draw"``).
        why: why two units are independent.
    """

    unit: str = "master seed"
    why: str = "every random stream of a run (data, initialisation, evaluation sets) is drawn from its seed"

    def __post_init__(self) -> None:
        for name in ("unit", "why"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise ValueError(f"Replication.{name} must be a non-empty string")


def check(name: str, value: float, op: Op, target: float, note: str = "") -> Check:
    """An ad-hoc, undeclared check (tests and the fake papers); real papers use :class:`CheckSpec`."""
    if op not in OPS:
        raise ValueError(f"check {name!r}: op {op!r} must be one of {', '.join(OPS)}")
    return Check(name=name, value=float(value), op=op, target=float(target), note=note)


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
