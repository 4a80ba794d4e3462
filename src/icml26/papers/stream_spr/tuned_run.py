"""The tuned-α_SPR further run: ``python -m icml26.papers.stream_spr.tuned_run --out DIR --seeds 0-2 [field=value ...]``.

The quick setting (Breakout, 60k steps) with every arm: SPR+orth+orth², naive SPR, the authors'
configuration (stream-rep-rl's α_RL = α_SPR = 1e-4, off-by-one window actions, independent targets,
ReLU head, orth² ε = 1e-8) and Stream Q(λ). Before its scored runs each master seed tunes α_SPR of
SPR+orth² and of naive SPR alike over {1e-4, 3e-4, 1e-3} with the shared tuner, on a development
seed of its own (the ``tune_agent`` stream, never a scored seed), by the last-10 % return; the
authors' arm keeps its own step sizes and Stream Q(λ) has none. Besides the quick checks it measures
``return_ratio_naive`` (SPR+orth² / naive SPR) and ``spr_loss_crossing_ratio`` (steps to an SPR loss
of −0.8, SPR+orth² over naive SPR, same seed). One seed per master seed through the ordinary sweep
(``DIR/stream_spr/seeds/<s>/``); writes ``DIR/stream_spr/result.json``; copy ``DIR/stream_spr`` to
``results/stream_spr/spr_lr_tuned``.
"""

from __future__ import annotations

from pathlib import Path

from icml26.further import run_recipe

__all__ = ["OVERRIDES", "main"]

OVERRIDES = {"arms": "spr_orth2,spr_naive,spr_authors,stream_q", "spr_lr_grid": "1e-4,3e-4,1e-3",
             "tune_seeds": "1"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run with every arm (SPR+orth², naive SPR, the authors' configuration, Stream Q(λ)) and α_SPR of "
        "SPR+orth² and naive SPR tuned alike over {{1e-4, 3e-4, 1e-3}} on one development seed per master seed "
        "(chosen values in each arm's alpha_spr metric and the result's tuning record); checks not measured here "
        "and left out: {dropped}.")


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("stream_spr", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-2", note=NOTE)


if __name__ == "__main__":
    print(main())
