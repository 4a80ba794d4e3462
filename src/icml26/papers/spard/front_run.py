"""The tuned-front further run: ``python -m icml26.papers.spard.front_run --out DIR --seeds 0-9 [field=value ...]``.

Runs the reproduction (quick setting by default) with :class:`~icml26.papers.spard.config.FrontConfig`:
every defence's knob over a grid of one size, chosen by one rule on development replicates, and every
grid point on the scored replicates (:mod:`~icml26.papers.spard.front`), one seed per master seed
through the ordinary sweep (``DIR/spard/seeds/<s>/``, resumable), then the aggregate
``DIR/spard/result.json``; copy ``DIR/spard`` to ``results/spard/tuned_front``. Overrides may name any
field of :class:`~icml26.papers.spard.config.Config` or of the front (``front_lam=0.3,1,3,10,30``).

A separate entry point because the front's fields are not :class:`Config`'s: the committed quick run's
configuration stays what it was.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml26.common.config import apply_overrides
from icml26.papers.spard.config import FrontConfig
from icml26.runner import RunPlan, build_config
from icml26.seeds import parse_seeds
from icml26.sweep import sweep_plan

__all__ = ["front_config", "main"]


def front_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> FrontConfig:
    """The setting's :class:`Config` as a :class:`FrontConfig`, with ``overrides`` (strings, as on the
    command line) applied to either's fields."""
    return apply_overrides(FrontConfig.from_config(build_config("spard", setting)), overrides or {})


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results folder; writes <out>/spard/")
    parser.add_argument("--seeds", default="0-9", help="master seeds, e.g. 0-9 (default)")
    parser.add_argument("--setting", default="quick", choices=("quick", "tiny", "full"))
    parser.add_argument("--workers", type=int, default=1, help="parallel seeds (default 1)")
    parser.add_argument("overrides", nargs="*", help="config overrides field=value")
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.overrides:
        if "=" not in item:
            raise SystemExit(f"override {item!r} must read field=value")
        field, value = item.split("=", 1)
        overrides[field] = value
    plan = RunPlan.build("spard", setting=args.setting, seeds=parse_seeds(args.seeds), threads=1, out=args.out)
    plan = plan.replace(config=front_config(args.setting, overrides))
    return Path(sweep_plan(plan, workers=args.workers, resume=True, progress=False).aggregate.path)


if __name__ == "__main__":
    print(main())
