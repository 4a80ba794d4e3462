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

from pathlib import Path

from icml26.common.config import apply_overrides
from icml26.further import further_parser, parse_overrides, run_further
from icml26.papers.spard.config import FrontConfig
from icml26.runner import build_config

__all__ = ["front_config", "main"]


def front_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> FrontConfig:
    """The setting's :class:`Config` as a :class:`FrontConfig`, with ``overrides`` (strings, as on the
    command line) applied to either's fields."""
    return apply_overrides(FrontConfig.from_config(build_config("spard", setting)), overrides or {})


def main(argv: list[str] | None = None) -> Path:
    args = further_parser(__doc__, default_seeds="0-9").parse_args(argv)
    overrides = parse_overrides(args.overrides)
    # the front measures every check the setting measures plus its own: nothing to prune
    return run_further("spard", out=args.out, seeds=args.seeds, setting=args.setting,
                       config=front_config(args.setting, overrides), overrides=overrides, workers=args.workers,
                       prune=False)


if __name__ == "__main__":
    print(main())
