"""The on-manifold further run: ``python -m icml26.papers.curvature.onmanifold_run --out DIR [field=value ...]``.

Runs the reproduction's quick setting with ``onmanifold_only=true`` (SmolLM2 alone, the on-manifold
study on ``onmanifold_prefixes`` prefixes at ``onmanifold_layer``, 300 and 22 here), keeps only the checks that study measures, and writes
``DIR/curvature/result.json`` with its figure: each check's interval is over the prefixes (the declared
``REPLICATION`` unit), the claim status is decided by the one headline check it measures.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml26.aggregate import aggregate_results
from icml26.registry import get
from icml26.render import render_figures
from icml26.results import validate
from icml26.runner import execute, write_result

__all__ = ["main"]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results folder; writes <out>/curvature/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("overrides", nargs="*", help="config overrides field=value")
    args = parser.parse_args(argv)
    overrides = {"onmanifold_only": "true", "onmanifold_layer": "22", "onmanifold_prefixes": "300"}
    overrides.update(dict(o.split("=", 1) for o in args.overrides))
    data, _ = execute("curvature", "quick", args.seed, overrides, render=False)
    measured = [c for c in data["claim"]["checks"] if not c.get("note", "").startswith("not measured")]
    data["claim"]["checks"] = measured
    spec = get("curvature")
    merged = aggregate_results([data], declared=spec.load_claims(), unit=spec.load_replication().unit)
    merged["notes"].insert(1, "A further run of the on-manifold study alone (onmanifold_only=true): the other "
                              "checks of the claim are not measured here and are left out.")
    figures = render_figures("curvature", merged)
    merged["figures"] = sorted(figures)
    validate(merged)
    return write_result(Path(args.out) / "curvature", merged, figures)


if __name__ == "__main__":
    print(main())
