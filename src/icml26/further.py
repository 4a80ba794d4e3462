"""Further runs: a paper's reproduction under a recipe, beside its committed quick run.

A further run answers a question the quick run does not (a testbed with the pathology, long episodes, a
tuned front): it is the ordinary sweep (``<out>/<key>/seeds/<s>/``, resumable) with the recipe's
configuration, then the aggregate ``<out>/<key>/result.json``, which is copied to
``results/<key>/<name>/``. A recipe that measures only some of the claim's checks would leave the others
recorded as "not measured" on every seed, and, where they are headline checks, deciding the claim of a run
that never looked at them; :func:`prune_unmeasured` drops them first and the aggregate's notes name them.

A paper's driver is a recipe (config overrides), a note and one call::

    OVERRIDES = {"datasets": "folding"}

    def main(argv=None):
        return run_recipe("dmanet", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-3", note=NOTE)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from icml26.atomic import atomic_write_text

__all__ = ["further_parser", "parse_overrides", "prune_unmeasured", "recipe_config", "run_further", "run_recipe"]


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    """``["field=value", …]`` as ``{field: value}`` (the values stay strings: the config parses them).

    Raises ``ValueError`` naming the item that has no ``=`` or no field name.
    """
    out: dict[str, str] = {}
    for item in items:
        field, sep, value = str(item).partition("=")
        if not sep or not field.strip():
            raise ValueError(f"override {item!r} must read field=value")
        out[field.strip()] = value
    return out


def further_parser(doc: str | None, *, default_seeds: str) -> argparse.ArgumentParser:
    """The command line every further run shares: ``--out``, ``--seeds``, ``--setting``, ``--workers`` and
    ``field=value`` overrides; the description is the first line of ``doc`` (the driver's docstring)."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--out", required=True, help="results folder; writes <out>/<key>/")
    parser.add_argument("--seeds", default=default_seeds, help=f"master seeds, e.g. {default_seeds} (default)")
    parser.add_argument("--setting", default="quick", choices=("quick", "tiny", "full"))
    parser.add_argument("--workers", type=int, default=1, help="parallel seeds, one torch thread each (default 1)")
    parser.add_argument("overrides", nargs="*", help="config overrides field=value (on top of the recipe's)")
    return parser


def prune_unmeasured(folder: str | Path) -> list[str]:
    """Drop the checks recorded as not measured on every seed from each ``folder/seeds/<s>/result.json``
    (rewritten atomically, its claim status recomputed from the kept checks) and return their ids, sorted.

    A check measured on any seed is kept on every seed (its "not measured" there is a fact about that seed).
    Raises ``ValueError`` when ``folder`` holds no seed result.
    """
    from icml26.runner import claim_block

    paths = sorted(Path(folder).glob("seeds/*/result.json"))
    if not paths:
        raise ValueError(f"folder={str(folder)!r} holds no seeds/<s>/result.json to prune")
    results = {p: json.loads(p.read_text(encoding="utf-8")) for p in paths}
    measured = {c["id"] for r in results.values() for c in r["claim"]["checks"]
                if not c.get("note", "").startswith("not measured")}
    dropped: set[str] = set()
    for path, data in results.items():
        keep = [c for c in data["claim"]["checks"] if c["id"] in measured]
        dropped |= {c["id"] for c in data["claim"]["checks"]} - measured
        if len(keep) != len(data["claim"]["checks"]):
            data["claim"] = claim_block(data["claim"]["text"], keep)
            atomic_write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")
    return sorted(dropped)


def run_further(key: str, *, out: str | Path, seeds: Sequence[int] | str, setting: str = "quick",
                overrides: Mapping[str, Any] | None = None, config: Any = None, workers: int = 1,
                note: str | None = None, prune: bool = True) -> Path:
    """Sweep ``key``'s ``setting`` over ``seeds`` into ``out/<key>`` (resuming), then write its aggregate.

    ``overrides`` (``field -> value``) apply to the setting's config; pass ``config`` instead when the recipe
    builds its own (it is pickled to the workers as it is, ``overrides`` kept as the record of the recipe).
    With ``prune``, the checks no seed measured are dropped first (:func:`prune_unmeasured`). ``note`` goes
    into the aggregate's notes, ``{dropped}`` replaced by the dropped ids. Returns the ``result.json`` path.
    """
    from icml26.runner import RunPlan, write_result
    from icml26.seeds import aggregate_folder
    from icml26.sweep import sweep_plan

    overrides = dict(overrides or {})
    plan = RunPlan.build(key, setting=setting, seeds=seeds, threads=1, out=out,
                         overrides=None if config is not None else overrides)
    if config is not None:
        plan = plan.replace(config=config, overrides=overrides)
    sweep_plan(plan, workers=workers, resume=True, progress=False)
    folder = Path(out) / key
    dropped = prune_unmeasured(folder) if prune else []
    data, figures = aggregate_folder(key, folder, {})
    if note:
        data["notes"].insert(1, note.format(dropped=", ".join(dropped) or "none"))
    return write_result(folder, data, figures)


def recipe_config(key: str, recipe: Mapping[str, str], setting: str = "quick",
                  overrides: Mapping[str, str] | None = None) -> Any:
    """``key``'s ``setting`` config with the ``recipe``'s overrides and then ``overrides`` (``field -> value``
    strings, as on the command line) applied and validated: a further run's configuration. A bad field or
    value raises the config's own error, naming it."""
    from icml26.common.config import apply_overrides
    from icml26.runner import build_config

    return apply_overrides(build_config(key, setting), {**recipe, **(overrides or {})})


def run_recipe(key: str, argv: Sequence[str] | None, *, doc: str | None, recipe: Mapping[str, str],
               default_seeds: str, note: str | Callable[[Any, dict[str, str]], str] | None = None,
               prune: bool = True) -> Path:
    """A further run's command line: parse ``argv`` (:func:`further_parser`), apply ``recipe`` and then the
    command line's overrides, refuse a bad one before any work, and :func:`run_further`.

    ``note``: the aggregate's note (``{dropped}`` is replaced by the dropped check ids), or a function of the
    validated config and the merged overrides that returns it.
    """
    args = further_parser(doc, default_seeds=default_seeds).parse_args(argv)
    overrides = {**recipe, **parse_overrides(args.overrides)}
    config = recipe_config(key, overrides, args.setting)
    text = note(config, overrides) if callable(note) else note
    return run_further(key, out=args.out, seeds=args.seeds, setting=args.setting, overrides=overrides,
                       workers=args.workers, note=text, prune=prune)
