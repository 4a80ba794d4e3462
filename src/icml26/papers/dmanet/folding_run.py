"""The folding-tones further run: ``python -m icml26.papers.dmanet.folding_run --out DIR --seeds 0-3 [field=value ...]``.

Runs the reproduction (quick setting by default) on the folding tones alone (:mod:`.folding`: fast tones
that fold onto the predictive slow tone, so that aliasing destroys what a forecaster needs; issue #38),
so that the diagnostics and the time-axis family (with its Nyquist-cutoff arm beside the authors' rho/2)
run on them too (:data:`OVERRIDES`), one seed
per master seed through the ordinary sweep (``DIR/dmanet/seeds/<s>/``), then keeps only the checks the
run measures: the checks of the other data sets (aliasing Lorenz, Taylor) would otherwise be recorded as
"not measured" and, being the headline, decide the claim of a run that never looked at them. Writes
``DIR/dmanet/result.json``; copy ``DIR/dmanet`` to ``results/dmanet/folding``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from icml26.runner import claim_block, write_result
from icml26.seeds import aggregate_folder, parse_seeds
from icml26.sweep import sweep

__all__ = ["OVERRIDES", "main", "prune_unmeasured"]

OVERRIDES = {"datasets": "folding", "models": "dmanet,dmanet_no_filter,dmanet_nyquist,dlinear"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run on the folding tones alone (datasets=folding: the diagnostics and the time-axis family, with "
        "its Nyquist-cutoff arm, run on them): "
        "the checks of the aliasing Lorenz and Taylor are not measured here and are left out: {}.")


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
            data["claim"] = claim_block(data["claim"]["text"], keep)  # status and counts of the kept checks
            path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    return sorted(dropped)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results folder; writes <out>/dmanet/")
    parser.add_argument("--seeds", default="0-3", help="master seeds, e.g. 0-3 (default)")
    parser.add_argument("--setting", default="quick", choices=("quick", "tiny", "full"))
    parser.add_argument("--workers", type=int, default=1, help="parallel seeds (default 1)")
    parser.add_argument("overrides", nargs="*", help="more config overrides field=value")
    args = parser.parse_args(argv)
    overrides = dict(OVERRIDES)
    for item in args.overrides:
        if "=" not in item:
            raise SystemExit(f"override {item!r} must read field=value")
        field, value = item.split("=", 1)
        overrides[field] = value
    sweep("dmanet", parse_seeds(args.seeds), setting=args.setting, overrides=overrides, out=args.out,
          workers=args.workers, resume=True, progress=False)
    folder = Path(args.out) / "dmanet"
    dropped = prune_unmeasured(folder)
    data, figures = aggregate_folder("dmanet", folder, {})
    data["notes"].insert(1, NOTE.format(", ".join(dropped) or "none"))
    return write_result(folder, data, figures)


if __name__ == "__main__":
    print(main())
