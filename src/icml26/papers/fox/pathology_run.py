"""The pathology-testbed further run: ``python -m icml26.papers.fox.pathology_run --out DIR --seeds 0-7 [field=value ...]``.

Runs the reproduction (quick setting by default) as a :class:`~.config.PathologyConfig` built from the
setting's config (``testbed="pathology"``, a POPE target; fields the committed run's ``Config`` does not
have) with the recipe in :data:`OVERRIDES`, one seed per master seed through the ordinary sweep (``DIR/fox/seeds/<s>/``), then
keeps only the checks the run measures (the ungated CHAIR, POPE and probe checks of the default testbed
are replaced there by the gated ``pathology_*`` checks and their preconditions, and would otherwise be
recorded as "not measured"). Writes ``DIR/fox/result.json``; copy ``DIR/fox`` to ``results/fox/pathology``.

The recipe, and why each part:

* ``decoder_layers=8``: Fox probes ``[⌈L/16⌉, ⌈L/2⌉)``, a single layer ({1}) of a 4-layer decoder but
  {1, 2, 3} of 8 (14 of LLaVA-1.5's 32 layers are probed); on the 4-layer model the prior's carriers
  were in layers 0 and 2, outside the probed layer.
* ``p_partner=0.95``, ``faint_fraction=0.4``: a stronger planted prior and weaker visual evidence more
  often, so that more mentions come from the prior where the image is faint.
* ``pope_target_accuracy=0.8`` with ``train_steps=8000`` as the cap: train until the model answers POPE
  (development scenes, checked every 250 steps) before scoring it.

Whether the recipe plants the pathway is not assumed: the run measures it, and the CHAIR check is gated
(reported, not scored) on the seeds' preconditions ``streams_disagree_hallucinated`` and
``probe_saturation_over_random``, the POPE check on ``pope_random_accuracy``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from icml26.common.config import apply_overrides
from icml26.papers.fox.config import PathologyConfig
from icml26.runner import RunPlan, build_config, claim_block, write_result
from icml26.seeds import aggregate_folder
from icml26.sweep import sweep_plan

__all__ = ["OVERRIDES", "main", "pathology_config", "prune_unmeasured"]

OVERRIDES = {"testbed": "pathology", "decoder_layers": "8", "p_partner": "0.95", "faint_fraction": "0.4",
             "pope_target_accuracy": "0.8", "train_steps": "8000"}
"""The recipe on top of the setting (more overrides may be given on the command line)."""


def pathology_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> PathologyConfig:
    """The setting's :class:`~.config.Config` as a :class:`~.config.PathologyConfig`, with :data:`OVERRIDES`
    and then ``overrides`` (``field -> value`` strings, any PathologyConfig field) applied and validated."""
    config = PathologyConfig.from_config(build_config("fox", setting), testbed="default")  # validated below
    return apply_overrides(config, {**OVERRIDES, **(overrides or {})})

NOTE = ("A further run on the pathology testbed (testbed=pathology; recipe: {}): the CHAIR check is gated on the "
        "preconditions that the streams disagree on hallucinated mentions and that the probe's heads beat random "
        "heads under saturation, the POPE check on POPE-random accuracy; the default testbed's ungated checks are "
        "not measured here and are left out: {}.")


def prune_unmeasured(folder: str | Path) -> list[str]:
    """Drop the checks recorded as not measured from every ``folder/seeds/<s>/result.json`` (rewritten in
    place, its claim status recomputed from the kept checks) and return their ids, sorted; a check measured
    on any seed is kept on every seed."""
    paths = sorted(Path(folder).glob("seeds/*/result.json"))
    if not paths:
        raise ValueError(f"folder={str(folder)!r} holds no seeds/<s>/result.json to prune")
    results = {p: json.loads(p.read_text()) for p in paths}
    measured = {c["id"] for r in results.values() for c in r["claim"]["checks"]
                if not c.get("note", "").startswith("not measured")}
    dropped: set[str] = set()
    for path, data in results.items():
        keep = [c for c in data["claim"]["checks"] if c["id"] in measured]
        dropped |= {c["id"] for c in data["claim"]["checks"]} - measured
        if len(keep) != len(data["claim"]["checks"]):
            data["claim"] = claim_block(data["claim"]["text"], keep)
            path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    return sorted(dropped)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results folder; writes <out>/fox/")
    parser.add_argument("--seeds", default="0-7", help="master seeds, e.g. 0-7 (default)")
    parser.add_argument("--setting", default="quick", choices=("quick", "tiny", "full"))
    parser.add_argument("--workers", type=int, default=1, help="parallel seeds (default 1)")
    parser.add_argument("overrides", nargs="*", help="more config overrides field=value")
    args = parser.parse_args(argv)
    extra = {}
    for item in args.overrides:
        if "=" not in item:
            raise SystemExit(f"override {item!r} must read field=value")
        field, value = item.split("=", 1)
        extra[field] = value
    overrides = {**OVERRIDES, **extra}
    config = pathology_config(args.setting, extra)
    plan = RunPlan.build("fox", setting=args.setting, seeds=args.seeds, threads=1, out=args.out)
    # the plan's config is the PathologyConfig (pickled to the workers as it is), its overrides the record of them
    plan = plan.replace(config=config, overrides=overrides)
    sweep_plan(plan, workers=args.workers, resume=True, progress=False)
    folder = Path(args.out) / "fox"
    dropped = prune_unmeasured(folder)
    data, figures = aggregate_folder("fox", folder, {})
    recipe = ", ".join(f"{k}={v}" for k, v in overrides.items() if k != "testbed")
    data["notes"].insert(1, NOTE.format(recipe, ", ".join(dropped) or "none"))
    return write_result(folder, data, figures)


if __name__ == "__main__":
    print(main())
