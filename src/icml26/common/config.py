"""Experiment configs: dataclasses with a docstring on every field.

Every paper's ``experiment.py`` defines a ``Config`` dataclass whose defaults are
the paper's full scale, plus two constructors: ``quick()`` (the CPU
reproduction, minutes on two cores) and ``tiny()`` (the contract-suite setting,
seconds). This module reads the field docstrings, turns ``field=value`` strings
from the command line into typed overrides, and converts configs to JSON.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
import textwrap
import types
import typing
from typing import Any, Literal, Mapping, Union, get_args, get_origin

__all__ = [
    "ConfigError",
    "FieldInfo",
    "apply_overrides",
    "config_fields",
    "config_to_dict",
    "field_docs",
    "neutral_field",
    "parse_value",
    "validate_numbers",
]


class ConfigError(ValueError):
    """A config field has a value outside what it accepts; the message names the field."""


@dataclasses.dataclass(frozen=True)
class FieldInfo:
    """One config field as shown by ``icml26 info``."""

    name: str
    type_name: str
    default: Any
    quick: Any
    doc: str


@functools.lru_cache(maxsize=None)
def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of a dataclass, read from its source with ``ast``.

    A docstring is the string literal on the line after a field definition
    (the convention Sphinx and PEP 257 use). Fields of base classes are
    included. Returns ``{}`` when the source is not available.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        tree = ast.parse(source)
        class_def = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
        if class_def is None:
            continue
        body = class_def.body
        for node, following in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in get_args(tp))
    if origin in (tuple, list):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        inner = _type_name(args[0]) if args else "Any"
        return f"{origin.__name__}[{inner}, ...]"
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def config_fields(cls: type) -> list[FieldInfo]:
    """Fields of a config class with type, default, quick value and docstring."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = _type_hints(cls)
    docs = field_docs(cls)
    default = cls()
    quick = cls.quick() if hasattr(cls, "quick") else default
    return [
        FieldInfo(
            name=f.name,
            type_name=_type_name(hints[f.name]),
            default=getattr(default, f.name),
            quick=getattr(quick, f.name),
            doc=docs.get(f.name, ""),
        )
        for f in dataclasses.fields(cls)
    ]


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_value(text: str, tp: Any, *, name: str = "value") -> Any:
    """Parse a command-line string into the type ``tp`` of a config field.

    Supports ``int``, ``float``, ``bool``, ``str``, ``Literal[...]``,
    ``Optional[...]`` (``none`` gives ``None``) and ``tuple``/``list`` of those
    (comma-separated). Raises ``ValueError`` naming the field and the type.
    """
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if type(None) in args and text.strip().lower() in {"none", "null"}:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return parse_value(text, arg, name=name)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(f"{name}={text!r} does not parse as {_type_name(tp)}")
    if origin is Literal:
        choices = get_args(tp)
        for choice in choices:
            if str(choice) == text:
                return choice
        raise ValueError(f"{name}={text!r} is not one of {', '.join(map(repr, choices))}")
    if origin in (tuple, list):
        args = [a for a in get_args(tp) if a is not Ellipsis] or [str]
        parts = [p for p in text.strip("()[] ").split(",") if p.strip() != ""]
        if len(args) > 1 and Ellipsis not in get_args(tp):
            if len(parts) != len(args):
                raise ValueError(f"{name}={text!r} needs {len(args)} comma-separated values")
            values = [parse_value(p.strip(), a, name=name) for p, a in zip(parts, args)]
        else:
            values = [parse_value(p.strip(), args[0], name=name) for p in parts]
        return origin(values)
    if tp is bool:
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"{name}={text!r} is not a boolean (use true or false)")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            try:
                as_float = float(text)
            except ValueError:
                as_float = None
            if as_float is not None and as_float.is_integer():
                return int(as_float)
            raise ValueError(f"{name}={text!r} is not an integer") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} is not a number") from None
    if tp is str:
        return text
    raise ValueError(f"{name}: fields of type {_type_name(tp)} cannot be set from the command line")


def apply_overrides(config: Any, overrides: Mapping[str, Any] | None) -> Any:
    """Return a copy of ``config`` with ``overrides`` applied.

    Values may be strings (parsed with :func:`parse_value`) or already typed.
    An unknown field is a ``ValueError`` that lists the valid fields.
    """
    if not overrides:
        return config
    cls = type(config)
    hints = _type_hints(cls)
    valid = [f.name for f in dataclasses.fields(cls)]
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in valid:
            raise ValueError(
                f"unknown config field {key!r} for {cls.__module__}.{cls.__qualname__}; "
                f"valid fields: {', '.join(valid)}"
            )
        if isinstance(value, str) and hints[key] is not str:
            value = parse_value(value, hints[key], name=key)
        elif isinstance(value, bool) and hints[key] in (int, float):
            raise ValueError(f"{key}={value!r}: expected {_type_name(hints[key])}, got a boolean")
        elif isinstance(value, int) and hints[key] is float:
            value = float(value)
        elif isinstance(value, list) and get_origin(hints[key]) is tuple:
            value = tuple(value)
        changes[key] = value
    try:
        new = dataclasses.replace(config, **changes)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{cls.__qualname__}: {exc}") from None
    validate_numbers(new)
    return new


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return config_to_dict(value)
    return value


def config_to_dict(config: Any) -> dict[str, Any]:
    """Every field of a config as JSON-ready values (tuples become lists), except a *neutral* field at its
    default.

    A field declared with ``metadata={"neutral": True}`` is one whose default changes nothing a run computes
    (a switch that is off, a penalty of 0): at its default it is left out of the recorded config and so of
    the configuration hash, so that adding such a field keeps every committed run the same configuration
    (a rerun still matches it, its seeds still aggregate), while a run that sets it records it.
    """
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if (f.metadata or {}).get("neutral") and _at_default(f, value):
            continue
        out[f.name] = _jsonable(value)
    return out


def neutral_field(default: Any, **metadata: Any) -> Any:
    """A dataclass field left out of :func:`config_to_dict` while it equals ``default`` (see there);
    ``metadata`` adds the usual range keys (``min``, ``max``...). Mutable defaults are not accepted."""
    if isinstance(default, (list, dict, set)):
        raise TypeError(f"default={default!r}: a neutral field's default must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata={**metadata, "neutral": True})


def _at_default(f: dataclasses.Field, value: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        return False
    return _jsonable(value) == _jsonable(default)


def _numeric_kind(tp: Any) -> str | None:
    """``"float"``, ``"int"`` or ``None`` for a field type (looking inside Optional and tuples)."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        kinds = {_numeric_kind(a) for a in get_args(tp) if a is not type(None)}
        kinds.discard(None)
        return "float" if "float" in kinds else ("int" if "int" in kinds else None)
    if origin in (tuple, list):
        kinds = {_numeric_kind(a) for a in get_args(tp) if a is not Ellipsis}
        return "float" if "float" in kinds else ("int" if "int" in kinds else None)
    if tp is float:
        return "float"
    if tp is int:
        return "int"
    return None


def _values(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _values(item)]
    return [value]


def validate_numbers(config: Any) -> None:
    """Reject non-finite and out-of-range numbers in every numeric field of a config dataclass.

    The rules, for each field (and each element of a tuple field):

    * a ``float`` must be finite (NaN and ±inf are refused) unless the field's metadata says
      ``{"finite": False}``;
    * an ``int`` must be ``>= 0`` unless its metadata sets ``"min"`` (or lists the value among
      ``"sentinels"``: documented special values such as ``-1`` for "all");
    * ``"min"`` / ``"max"`` in the metadata bound both kinds (inclusive).

    ``bool`` fields are not numbers here. Called by :func:`apply_overrides` and by each
    paper's ``Config.__post_init__``; raises :class:`ConfigError` naming the field and the range.
    """
    if not dataclasses.is_dataclass(config):
        raise TypeError(f"{config!r} is not a dataclass instance")
    hints = _type_hints(type(config))
    for f in dataclasses.fields(config):
        kind = _numeric_kind(hints.get(f.name))
        if kind is None:
            continue
        meta = f.metadata or {}
        low = meta.get("min", 0 if kind == "int" else None)
        high = meta.get("max")
        sentinels = tuple(meta.get("sentinels", ()))
        for value in _values(getattr(config, f.name)):
            if value is None or isinstance(value, bool) or value in sentinels:
                continue
            if not isinstance(value, (int, float)):
                continue
            if isinstance(value, float) and not math.isfinite(value) and meta.get("finite", True):
                raise ConfigError(f"{f.name}={value!r} must be a finite number" + _range_text(low, high))
            if low is not None and value < low or high is not None and value > high:
                raise ConfigError(f"{f.name}={value!r} is out of range: it must be" + _range_text(low, high).lstrip(",")
                                  + (f" (or one of {sentinels})" if sentinels else ""))


def _range_text(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return f", in [{low}, {high}]"
    if low is not None:
        return f", >= {low}"
    if high is not None:
        return f", <= {high}"
    return ""
