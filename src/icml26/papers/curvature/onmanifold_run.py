"""The on-manifold further run: ``python -m icml26.papers.curvature.onmanifold_run --out DIR [field=value ...]``.

Runs the reproduction's quick setting with ``onmanifold_only=true`` (SmolLM2 alone, the on-manifold
study on ``onmanifold_prefixes`` prefixes at ``onmanifold_layer``, 300 and 22 here) through the ordinary
sweep (``DIR/curvature/seeds/<s>/``), keeps only the checks that study measures, and writes
``DIR/curvature/result.json`` with its figure: each check's interval is over the prefixes (the declared
``REPLICATION`` unit), the claim status is decided by the headline check it measures.
"""

from __future__ import annotations

from pathlib import Path

from icml26.further import run_recipe

__all__ = ["OVERRIDES", "main"]

OVERRIDES = {"onmanifold_only": "true", "onmanifold_layer": "22", "onmanifold_prefixes": "300"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run of the on-manifold study alone (onmanifold_only=true): the other checks of the claim are not "
        "measured here and are left out: {dropped}.")


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("curvature", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0", note=NOTE)


if __name__ == "__main__":
    print(main())
