"""The tuned-front further run: ``python -m icml26.papers.spard.front_run --out DIR --seeds 0-9 [field=value ...]``.

Runs the reproduction (quick setting by default) with ``front=true``: every defence's knob over a grid of one size, chosen by one rule on development replicates, and every
grid point on the scored replicates (:mod:`~icml26.papers.spard.front`), one seed per master seed
through the ordinary sweep (``DIR/spard/seeds/<s>/``, resumable), then the aggregate
``DIR/spard/result.json``; copy ``DIR/spard`` to ``results/spard/tuned_front``. Overrides may name any
field of :class:`~icml26.papers.spard.config.Config`, the front's included (``front_lam=0.3,1,3,10,30``).
"""

from __future__ import annotations

from pathlib import Path

from icml26.further import recipe_config, run_recipe
from icml26.papers.spard.config import Config

__all__ = ["front_config", "main"]


def front_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> Config:
    """The setting's :class:`Config` with ``front=true`` and then ``overrides`` (strings, as on the command
    line) applied and validated: the further run's configuration."""
    return recipe_config("spard", {"front": "true"}, setting, overrides)


def main(argv: list[str] | None = None) -> Path:
    # the front measures every check the setting measures plus its own: nothing to prune
    return run_recipe("spard", argv, doc=__doc__, recipe={"front": "true"}, default_seeds="0-9", prune=False)


if __name__ == "__main__":
    print(main())
