"""CPU cost of the streaming agents on one real Atari game, beside the replay buffer they do without.

The paper's efficiency argument is that streaming agents (no replay buffer, batch size 1) train
"on just a few CPU cores". This module measures it: each arm (Stream Q(λ), naive SPR, SPR+orth²)
runs ``steps`` agent steps on one game in its own process with one torch thread, one after the
other, and reports steps per second and the process's peak resident set size. Beside it, the
memory a replay-buffer agent must hold at the same budget, computed, not measured:

* frames stored once (the DQN-Zoo / Dopamine layout): ``N × H × W`` bytes of uint8;
* transitions stored naively, (s, s') each a stack of ``stack`` frames: ``N × 2 × stack × H × W`` bytes.

ε is held at its final value (0.01) so that the SPR arms take their SPR step on ~99 % of steps,
as they do after exploration (the gated non-greedy steps skip it): the costly regime.

Run: ``python -m icml26.papers.stream_spr.atari_bench --game breakout --steps 3000 --out cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from icml26.common.argcheck import check_int

__all__ = ["ARMS", "replay_buffer_bytes", "run_arm", "run_bench"]

_MODULE = "icml26.papers.stream_spr.atari_bench"  # run as a module, __name__ may be "__main__"

#: Agent options per arm (the Atari network, ε at its final value).
ARMS: dict[str, dict[str, Any]] = {
    "stream_q": {"agent": "StreamQ"},
    "spr_naive": {"agent": "StreamQSPR", "orth": False, "orth2": False},
    "spr_orth2": {"agent": "StreamQSPR", "orth": True, "orth2": True},
}


def replay_buffer_bytes(capacity: int, *, screen_size: int = 84, stack: int = 4) -> dict[str, int]:
    """Bytes of uint8 observations a replay buffer of ``capacity`` entries holds.

    ``frames_once``: each 84×84 frame stored once (stacks rebuilt from indices): N·H·W.
    ``stacked_pairs``: each transition's s and s' stored as ``stack``-frame stacks: N·2·stack·H·W.
    Actions, rewards and flags (a few bytes per entry) are left out.
    """
    check_int(capacity, "capacity", low=1)
    check_int(screen_size, "screen_size", low=1)
    check_int(stack, "stack", low=1)
    frame = screen_size * screen_size
    return {"frames_once": capacity * frame, "stacked_pairs": capacity * 2 * stack * frame}


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1.0 if sys.platform == "darwin" else 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def run_arm(arm: str, *, game: str = "breakout", steps: int = 3000, seed: int = 0) -> dict[str, Any]:
    """Run one arm in this process (one torch thread); steps/s and peak RSS (MiB)."""
    if arm not in ARMS:
        raise ValueError(f"arm={arm!r} must be one of {', '.join(ARMS)}")
    check_int(steps, "steps", low=1)
    import torch

    from . import StreamQ, StreamQSPR, make_atari

    torch.set_num_threads(1)
    env = make_atari(game, seed=seed)
    env.reset(seed=seed)
    rss_env = _peak_rss_mb()
    options = {k: v for k, v in ARMS[arm].items() if k != "agent"}
    cls = StreamQ if ARMS[arm]["agent"] == "StreamQ" else StreamQSPR
    agent = cls(env, architecture="atari", epsilon_start=0.01, epsilon_end=0.01, exploration_steps=1,
                seed=seed, **options)
    n_params = sum(p.numel() for p in agent.network.parameters())
    if hasattr(agent, "spr"):
        n_params += sum(p.numel() for p in agent.spr.parameters())
    warm = min(50, steps)
    agent.learn(warm, progress=False)  # first calls allocate; not timed
    start = time.perf_counter()
    agent.learn(steps, progress=False)
    seconds = time.perf_counter() - start
    return {"arm": arm, "agent": cls.__name__, "options": options, "steps": steps, "seconds": round(seconds, 2),
            "steps_per_s": round(steps / seconds, 1), "peak_rss_mib": round(_peak_rss_mb(), 1),
            "rss_after_env_mib": round(rss_env, 1), "parameters": n_params}


def run_bench(*, game: str = "breakout", steps: int = 3000, seed: int = 0) -> dict[str, Any]:
    """Every arm, one after the other, each in a fresh process; plus the replay-buffer figures."""
    arms = []
    for arm in ARMS:
        out = subprocess.run([sys.executable, "-m", _MODULE, "--arm", arm, "--game", game, "--steps", str(steps),
                              "--seed", str(seed)], check=True, capture_output=True, text=True)
        arms.append(json.loads(out.stdout.strip().splitlines()[-1]))
    buffers = {str(n): {k: round(v / 2**20, 1) for k, v in replay_buffer_bytes(n).items()}
               for n in (100_000, 1_000_000)}
    return {
        "game": game, "seed": seed, "steps_per_arm": steps, "torch_threads": 1, "epsilon": 0.01,
        "network": "atari (Nature trunk 32/64/64, LN + LeakyReLU, 256-unit head; SPR: 64-channel transition, "
                   "256-d projection)",
        "preprocessing": "make_atari defaults: no-op reset <= 30, frame skip 4 with max-pool, 84x84 grayscale, "
                         "4-frame stack, no sticky actions, a lost life terminal (EpisodicLife), FireReset, "
                         "rewards clipped to their sign, then ScaleReward + RunningNorm (the authors' script)",
        "arms": arms,
        "replay_buffer_mib": buffers,
        "replay_buffer_formula": "frames_once = N * 84 * 84 bytes (uint8, each frame once); "
                                 "stacked_pairs = N * 2 * 4 * 84 * 84 bytes (s and s' as 4-frame stacks)",
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                    "note": "2 shared cores; other jobs were running, so the rates are lower bounds"},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="breakout")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arm", choices=list(ARMS), help="run one arm here and print its JSON line")
    parser.add_argument("--out", type=Path, help="write the whole benchmark's JSON here")
    args = parser.parse_args(argv)
    if args.arm:
        print(json.dumps(run_arm(args.arm, game=args.game, steps=args.steps, seed=args.seed)))
        return
    result = run_bench(game=args.game, steps=args.steps, seed=args.seed)
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
