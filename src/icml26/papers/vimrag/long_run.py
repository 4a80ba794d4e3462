"""The long-episode further run: ``python -m icml26.papers.vimrag.long_run --out DIR --seeds 0-7 [field=value ...]``.

GGPO in the setting it is for: credit assignment when many steps are redundant. On top of the quick setting (:data:`OVERRIDES`) the search task has 24 documents instead of 12 and a
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

from pathlib import Path

from icml26.further import recipe_config, run_recipe
from icml26.papers.vimrag.config import Config

__all__ = ["OVERRIDES", "long_config", "main"]

OVERRIDES = {"documents": "24", "horizon": "24", "redundant_penalty": "0.05", "run_budget": "false"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run with long episodes and a redundant-search penalty (24 documents, horizon 24 instead of 6, "
        "a success's reward 1 - 0.05 per search off its answer path), (B) alone: the (A) checks are not measured "
        "here and are left out: {dropped}.")


def long_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> Config:
    """The setting's :class:`~.config.Config` with :data:`OVERRIDES` and then ``overrides`` (``field -> value``
    strings) applied and validated: the further run's configuration."""
    return recipe_config("vimrag", OVERRIDES, setting, overrides)


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("vimrag", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-7", note=NOTE)


if __name__ == "__main__":
    print(main())
