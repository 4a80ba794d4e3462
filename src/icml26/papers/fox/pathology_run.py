"""The pathology-testbed further run: ``python -m icml26.papers.fox.pathology_run --out DIR --seeds 0-7 [field=value ...]``.

Runs the reproduction (quick setting by default) with ``testbed="pathology"``, a POPE target and the
rest of the recipe in :data:`OVERRIDES`, one seed per master seed through the ordinary sweep (``DIR/fox/seeds/<s>/``), then
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

from pathlib import Path

from icml26.further import recipe_config, run_recipe
from icml26.papers.fox.config import Config

__all__ = ["OVERRIDES", "main", "pathology_config"]

OVERRIDES = {"testbed": "pathology", "decoder_layers": "8", "p_partner": "0.95", "faint_fraction": "0.4",
             "pope_target_accuracy": "0.8", "train_steps": "8000"}
"""The recipe on top of the setting (more overrides may be given on the command line)."""

NOTE = ("A further run on the pathology testbed (testbed=pathology; recipe: {recipe}): the CHAIR check is gated on "
        "the preconditions that the streams disagree on hallucinated mentions and that the probe's heads beat random "
        "heads under saturation, the POPE check on POPE-random accuracy; the default testbed's ungated checks are "
        "not measured here and are left out: {{dropped}}.")


def pathology_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> Config:
    """The setting's :class:`~.config.Config` with :data:`OVERRIDES` and then ``overrides`` (``field -> value``
    strings) applied and validated: the further run's configuration."""
    return recipe_config("fox", OVERRIDES, setting, overrides)


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("fox", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-7", note=_note)


def _note(config: Config, overrides: dict[str, str]) -> str:
    return NOTE.format(recipe=", ".join(f"{k}={v}" for k, v in overrides.items() if k != "testbed"))


if __name__ == "__main__":
    print(main())
