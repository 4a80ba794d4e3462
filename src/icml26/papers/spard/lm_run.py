"""The SmolLM2 further run: ``python -m icml26.papers.spard.lm_run --out DIR --seeds 0-4 [field=value ...]``.

SPARD on a real language model, the digits analogue beside it. On top of
the quick setting (:data:`OVERRIDES`) the run adds the SmolLM2 section (:mod:`.lm_section`):
SmolLM2-135M-Instruct, LoRA r 16 on q/k/v/o, a word-reversal task with 10 % Do-Not-Answer prompts paired
with a compliant answer; SFT, SPARD (SPAG on the DPP subset), SPAG on a random subset, and SafeInstr,
penalty and Lisa on that random subset, every arm from one adapter initialisation in one batch order.
Harm is *refusals lost* on the held-out prompts the base model refused (``lm_eval=300`` held-out prompts,
about a quarter of which the base refuses); task cost is word-reversal exact match on held-out prompts.
One seed per master seed through the ordinary sweep (``DIR/spard/seeds/<s>/``); writes
``DIR/spard/result.json``; copy ``DIR/spard`` to ``results/spard/smollm2``.
"""

from __future__ import annotations

from pathlib import Path

from icml26.further import recipe_config, run_recipe
from icml26.papers.spard.config import Config

__all__ = ["OVERRIDES", "lm_config", "main"]

OVERRIDES = {"lm_section": "true", "lm_eval": "300"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run with the SmolLM2 section ({recipe}): SmolLM2-135M-Instruct with LoRA, SPARD against SFT, "
        "SPAG+random and SafeInstr, penalty and Lisa on a random subset; harm is refusals lost on the held-out "
        "prompts the base model refused. The digits analogue runs beside it at the quick setting. Checks no seed "
        "measured: {{dropped}}.")


def lm_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> Config:
    """The setting's :class:`~.config.Config` with :data:`OVERRIDES` and then ``overrides`` (``field -> value``
    strings) applied and validated: the further run's configuration."""
    return recipe_config("spard", OVERRIDES, setting, overrides)


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("spard", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-4",
                      note=lambda config, overrides: NOTE.format(recipe=_recipe(overrides)))


def _recipe(overrides: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in overrides.items())


if __name__ == "__main__":
    print(main())
