"""The long-context further run: ``python -m icml26.papers.hici.long_run --out DIR --seeds 0-5 [field=value ...]``.

The quick task at a length where full attention is the expensive reference and position interpolation alone
no longer solves it. On top of the quick setting (:data:`OVERRIDES`) every arm extends the 128-token model
×16 to **2,048 tokens** (16 segments of G = 128, position interpolation ×16) in the same 150 steps of the
same documents, and is scored at 2,048 and 4,096 tokens (``eval_extrapolation=32``) on 100 documents per
length (``eval_docs=100``: the full-mode scoring of five rows at 4,096 tokens is most of a seed's time).

What changes against the quick run, measured on a probe (seed 0, 6 steps, 16 documents): the pretrained base
with PI ×16 and no fine-tuning retrieves 0.44 at 2,048 in full mode (1.00 at ×4), so the full-mode
comparisons are no longer gated on ``pi_only_acc_512_full`` ≤ 0.9; chunked attention without slots stays at
its ceiling 1/S + (1 − 1/S)/T = 0.18; a full-attention training step costs about twice a chunked one
(2.4 s against 1.1 s), and the gap grows with N.

The checks keep their ids and names (``…_512`` and "at 512" are the quick extension length): in this run
they are measured at the extension length 2,048 (``…_1024``: 4,096); the aggregate's note says so. One
seed per master seed through the ordinary sweep (``DIR/hici/seeds/<s>/``); writes ``DIR/hici/result.json``;
copy ``DIR/hici`` to ``results/hici/long_context``.
"""

from __future__ import annotations

from pathlib import Path

from icml26.further import recipe_config, run_recipe
from icml26.papers.hici.config import Config

__all__ = ["OVERRIDES", "long_config", "main"]

OVERRIDES = {"extension_factor": "16", "eval_extrapolation": "32", "eval_docs": "100"}
"""The further run's config overrides on top of the setting (more may be given on the command line)."""

NOTE = ("A further run at long context ({recipe}): every arm extends the {context}-token model x{factor} to {short} tokens "
        "(position interpolation x{factor}) and is scored at {short} and {long} tokens. The checks keep the quick "
        "run's ids and names: '512' there means the extension length, {short} tokens here, and '1024' the longer "
        "evaluation, {long} tokens here. Checks no seed measured: {{dropped}}.")


def long_config(setting: str = "quick", overrides: dict[str, str] | None = None) -> Config:
    """The setting's :class:`~.config.Config` with :data:`OVERRIDES` and then ``overrides`` (``field -> value``
    strings) applied and validated: the further run's configuration."""
    return recipe_config("hici", OVERRIDES, setting, overrides)


def main(argv: list[str] | None = None) -> Path:
    return run_recipe("hici", argv, doc=__doc__, recipe=OVERRIDES, default_seeds="0-5", note=_note)


def _note(config: Config, overrides: dict[str, str]) -> str:
    return NOTE.format(recipe=", ".join(f"{k}={v}" for k, v in overrides.items()),
                       context=config.context, factor=f"{config.interpolation_factor:g}",
                       short=f"{config.extension_factor * config.segment_tokens:,}",
                       long=f"{config.eval_extrapolation * config.segment_tokens:,}")


if __name__ == "__main__":
    print(main())
