"""The folding-tones further run: ``python -m icml26.papers.dmanet.folding_run --out DIR --seeds 0-3 [field=value ...]``.

Runs the reproduction (quick setting by default) on the folding tones alone (:mod:`.folding`: fast tones
that fold onto the predictive slow tone, so that aliasing destroys what a forecaster needs),
so that the diagnostics and the time-axis family (with its Nyquist-cutoff arm beside the authors' rho/2)
run on them too (:data:`OVERRIDES`), one seed
per master seed through the ordinary sweep (``DIR/dmanet/seeds/<s>/``), then keeps only the checks the
run measures: the checks of the other data sets (aliasing Lorenz, Taylor) would otherwise be recorded as
"not measured" and, being the headline, decide the claim of a run that never looked at them. Writes
``DIR/dmanet/result.json``; copy ``DIR/dmanet`` to ``results/dmanet/folding``.
"""

from __future__ import annotations

from pathlib import Path

from icml26.further import run_recipe

__all__ = ["OVERRIDES", "main"]

OVERRIDES = {"datasets": "folding", "models": "dmanet,dmanet_no_filter,dmanet_nyquist,dlinear"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run on the folding tones alone (datasets=folding: the diagnostics and the time-axis family, with "
        "its Nyquist-cutoff arm, run on them): "
        "the checks of the aliasing Lorenz and Taylor are not measured here and are left out: {dropped}.")


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("dmanet", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-3", note=NOTE)


if __name__ == "__main__":
    print(main())
