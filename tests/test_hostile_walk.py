"""The hostile-input walk: every public function and class of every paper, each argument fed the usual
suspects, must refuse them with an error that names the argument, unless the paper documents why not.

Each paper's ``probes.py`` declares, beside its hand-written ``HOSTILE`` probes:

* ``VALID``: ``{export: make}`` where ``make() -> (args, kwargs)`` is a small, valid call (milliseconds;
  fresh objects on every call). An export whose parameters all have defaults is walked from its
  defaults without an entry.
* ``NOT_WALKED``: ``{export: reason}`` for exports the walk cannot call cheaply (an HF model, an
  environment, a game) or that are plain records; the reason names what covers them instead.
* ``ALLOWED``: ``{"export.argument": reason}`` or ``{"export.argument:suspect": reason}`` for a suspect
  an argument accepts by design (a negative offset, NaN that propagates as documented).

The suspects, by the argument's value in the valid call: a float gets NaN, +inf and a string; an integer
(not a bool) gets -1 (when its valid value is non-negative), a fraction and a string; a floating tensor or
array gets a copy with one NaN. The walk counts as refused a ``ValueError`` or ``TypeError`` whose message
contains the argument's name. New exports join the walk by being exported: an export with required
arguments and no ``VALID`` or ``NOT_WALKED`` entry fails here.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import math
import signal
import warnings
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import torch

from icml26 import registry

#: Seconds a single walked call may take (a hang counts as a failure).
CALL_SECONDS = 20


def _papers() -> Iterator[tuple[str, Any, Any]]:
    for key in registry.keys(status="implemented"):
        spec = registry.get(key)
        if spec.missing_extras() or not (spec.folder / "probes.py").is_file():
            continue
        yield key, importlib.import_module(spec.api_module), importlib.import_module(f"{spec.api_module}.probes")


def _walked_exports(api) -> list[str]:
    """The exports the walk covers: callables that are not exceptions, not the BASELINES/METHOD aliases."""
    out = []
    for name in getattr(api, "__all__", []):
        obj = getattr(api, name)
        if name in ("BASELINES", "METHOD") or not callable(obj):
            continue
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        try:
            if not inspect.signature(obj).parameters:  # nothing to feed
                continue
        except (TypeError, ValueError):
            continue
        out.append(name)
    return out


def _cases() -> Iterator[Any]:
    for key, api, probes in _papers():
        for name in _walked_exports(api):
            yield pytest.param(key, api, probes, name, id=f"{key}-{name}")


def _suspects(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, (bool, np.bool_)):
        return []
    if isinstance(value, (int, np.integer)):
        return ([("negative", -1)] if value >= 0 else []) + [("fraction", int(value) + 0.5), ("string", "x")]
    if isinstance(value, (float, np.floating)):
        return [("nan", math.nan), ("inf", math.inf), ("string", "x")]
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() > 0:
        bad = value.detach().clone(memory_format=torch.contiguous_format)  # e.g. a column-major QR factor
        bad.reshape(-1)[0] = math.nan
        return [("nan", bad)]
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating) and value.size > 0:
        bad = value.copy()
        bad.flat[0] = np.nan
        return [("nan", bad)]
    return []


class _Hung(Exception):
    pass


def _call_with_limit(fn: Callable[[], Any]) -> Any:
    def stop(signum, frame):
        raise _Hung()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(CALL_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _outcome(fn: Callable[[], Any], argument: str) -> str | None:
    """``None`` when the call refuses with an error naming ``argument``; otherwise what it did."""
    try:
        _call_with_limit(fn)
    except _Hung:
        return f"still running after {CALL_SECONDS} s"
    except (ValueError, TypeError) as exc:
        if argument in str(exc):
            return None
        return f"{type(exc).__name__} without the argument's name: {str(exc)[:120]!r}"
    except Exception as exc:  # noqa: BLE001 - any other exception is an obscure error
        return f"{type(exc).__name__}: {str(exc)[:120]!r}"
    return "returned a value"


@pytest.mark.parametrize("key,api,probes,name", list(_cases()))
def test_every_export_refuses_the_usual_suspects_by_name(key, api, probes, name):
    obj = getattr(api, name)
    valid = getattr(probes, "VALID", {})
    not_walked = getattr(probes, "NOT_WALKED", {})
    allowed = getattr(probes, "ALLOWED", {})
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        pytest.skip(f"{name} has no signature to walk")
    params = {p.name: p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    if name in not_walked:
        assert isinstance(not_walked[name], str) and len(not_walked[name]) > 10, f"{name}: NOT_WALKED needs a reason"
        assert name not in valid, f"{name} is both in VALID and NOT_WALKED"
        pytest.skip(f"not walked: {not_walked[name]}")
    if name in valid:
        make = valid[name]
    elif all(p.default is not p.empty for p in params.values()):
        def make():
            return (), {}
    else:
        pytest.fail(f"{key}.{name} takes required arguments: give a valid call in probes.VALID or a reason in "
                    "probes.NOT_WALKED")
    args, kwargs = make()
    _call_with_limit(lambda: obj(*args, **kwargs))  # the valid call must work
    bound = sig.bind(*args, **kwargs)
    failures = []
    for argument, param in params.items():
        value = bound.arguments.get(argument, param.default)
        if value is param.empty or f"{name}.{argument}" in allowed:
            continue
        for suspect, bad in _suspects(value):
            if f"{name}.{argument}:{suspect}" in allowed:
                continue
            args, kwargs = make()
            trial = sig.bind(*args, **kwargs)
            trial.arguments[argument] = copy.copy(bad)
            got = _outcome(lambda: obj(*trial.args, **trial.kwargs), argument)
            if got is not None:
                failures.append(f"{name}({argument}={suspect}): {got}")
    assert not failures, "\n".join(failures)


def test_walk_declarations_name_real_exports():
    for key, api, probes in _papers():
        exports = set(_walked_exports(api))
        for table in ("VALID", "NOT_WALKED"):
            unknown = set(getattr(probes, table, {})) - exports
            assert not unknown, f"{key}: probes.{table} names {sorted(unknown)}, not walked exports"
        for entry in getattr(probes, "ALLOWED", {}):
            export, _, rest = entry.partition(".")
            argument = rest.partition(":")[0]
            assert export in exports, f"{key}: probes.ALLOWED entry {entry!r} names no walked export"
            assert argument in inspect.signature(getattr(api, export)).parameters, (
                f"{key}: probes.ALLOWED entry {entry!r} names no argument of {export}")
            assert len(getattr(probes, "ALLOWED")[entry]) > 10, f"{key}: ALLOWED[{entry!r}] needs a reason"
