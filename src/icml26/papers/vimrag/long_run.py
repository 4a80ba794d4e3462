"""The long-episode further run: ``python -m icml26.papers.vimrag.long_run --out DIR --seeds 0-7 [field=value ...]``.

Issue #40 item 3: give GGPO the setting it is for, credit assignment when many steps are redundant.
On top of the quick setting (:data:`OVERRIDES`, applied to a :class:`~.config.LongConfig` built from the
setting's config, since the penalty is not a field of the committed run's ``Config``) the search task has 24 documents instead of 12 and a
horizon of 24 steps instead of 6, and a successful rollout's reward loses ``c = 0.05`` per search off its
answer path (``r = 1[right]·max(0, 1 − c·k)``, :mod:`.search_task`); GRPO and both GGPO arms train on the
same question streams at every learning rate of the grid {0.01, 0.02, 0.05}, as in the quick run. Only
(B) runs (``run_budget=false``), so the (A) checks are not measured: they are dropped from every seed's
result (their "not measured" would otherwise decide the claim of a run that never looked at them), and
the run measures (B)'s checks plus ``ggpo_return_gain`` and ``ggpo_redundant_area_ratio``, which only a
penalised reward has. One seed per master seed through the ordinary sweep (``DIR/vimrag/seeds/<s>/``);
writes ``DIR/vimrag/result.json``; copy ``DIR/vimrag`` to ``results/vimrag/long_penalty``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from icml26.common.config import apply_overrides
from icml26.papers.vimrag.config import LongConfig
from icml26.runner import RunPlan, build_config, claim_block, write_result
from icml26.seeds import aggregate_folder
from icml26.sweep import sweep_plan

__all__ = ["OVERRIDES", "long_config", "main", "prune_unmeasured"]

OVERRIDES = {"documents": "24", "horizon": "24", "redundant_penalty": "0.05", "run_budget": "false"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""


def long_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> LongConfig:
    """The setting's :class:`~.config.Config` as a :class:`~.config.LongConfig`, with :data:`OVERRIDES` and
    then ``overrides`` (``field -> value`` strings, any LongConfig field) applied and validated."""
    config = LongConfig.from_config(build_config("vimrag", setting))
    return apply_overrides(config, {**OVERRIDES, **(overrides or {})})

NOTE = ("A further run with long episodes and a redundant-search penalty (24 documents, horizon 24 instead of 6, "
        "a success's reward 1 - 0.05 per search off its answer path; issue #40 item 3), (B) alone: the (A) checks "
        "are not measured here and are left out: {}.")


def prune_unmeasured(folder: str | Path) -> list[str]:
    """Drop the checks recorded as not measured from every ``folder/seeds/<s>/result.json`` (rewritten in
    place, its claim status recomputed from the kept checks) and return their ids, sorted; a check measured
    on any seed is kept on every seed. (The same rule as dmanet's folding run.)"""
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
    parser.add_argument("--out", required=True, help="results folder; writes <out>/vimrag/")
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
    config = long_config(args.setting, extra)
    plan = RunPlan.build("vimrag", setting=args.setting, seeds=args.seeds, threads=1, out=args.out)
    # the plan's config is the LongConfig (pickled to the workers as it is), its overrides the record of them
    plan = plan.replace(config=config, overrides={**OVERRIDES, **extra})
    sweep_plan(plan, workers=args.workers, resume=True, progress=False)
    folder = Path(args.out) / "vimrag"
    dropped = prune_unmeasured(folder)
    data, figures = aggregate_folder("vimrag", folder, {})
    data["notes"].insert(1, NOTE.format(", ".join(dropped) or "none"))
    return write_result(folder, data, figures)


if __name__ == "__main__":
    print(main())
