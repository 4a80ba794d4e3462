"""What a result records about where it was computed: the commit (and whether the checkout was
dirty), the CPU model (float32 kernels, hence a trained model's last digits, depend on it), library
versions, threads, device and wall time."""

from __future__ import annotations

import datetime as _dt
import math
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from icml26.contract import RunContext

__all__ = ["cpu_capability", "cpu_model", "git_commit", "machine_speed", "provenance"]


def git_commit() -> tuple[str | None, bool | None]:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        return commit or None, bool(dirty)
    except (OSError, subprocess.SubprocessError):
        return None, None


def cpu_model() -> str:
    """The CPU's model name (float32 kernels, hence the last digits of trained models, depend on it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_capability() -> str:
    """The vector instructions torch's CPU kernels use here (``"AVX2"``, ``"AVX512"`` …): one "AMD EPYC"
    model name covers generations with and without AVX-512, which differ in speed and in the last digits
    of trained models."""
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return "unknown"


def provenance(ctx: RunContext, wall: float, code: tuple[str | None, bool | None]) -> dict[str, Any]:
    """``code`` is :func:`git_commit` taken when the run started: the code that ran (a long run
    can outlive the checkout's HEAD; if HEAD moved, the end state is recorded beside it)."""
    import icml26

    commit, dirty = code
    end = git_commit()
    moved = {} if end == code else {"git_commit_at_end": end[0], "git_dirty_at_end": end[1]}
    return {
        "icml26": icml26.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        **moved,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpu_capability": cpu_capability(),
        "threads": ctx.threads,
        "device": str(ctx.device),
        "wall_time_s": round(wall, 3),
        "utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": sys.argv[1:],
        **ctx.provenance,
    }


def machine_speed(repeats: int = 3) -> dict[str, float]:
    """Two one-thread rates that set most reproductions' seconds, to compare timings taken on different
    machines: ``gemm_gflops``, float32 matrix products (512 x 512 by 512 x 512), and ``small_steps_per_s``,
    training steps of a small MLP (64 wide, batch 32: forward, backward and an Adam step), bound by
    per-operation overhead as the tiny models' training loops are. Each is the best of ``repeats`` short
    timings (a second or two in all); torch's thread count is set to one and restored, and the inputs come
    from a private generator (the global random state is untouched)."""
    import time

    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats={repeats!r} must be a positive integer")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(512, 512, generator=g), torch.randn(512, 512, generator=g)
        products = 20
        torch.mm(a, b)  # warm-up (lazy initialisation is not the machine's speed)
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(products):
                torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
        gflops = 2 * 512 ** 3 * products / best / 1e9
        with torch.random.fork_rng(devices=[]):  # the layers' default initialisation draws from the global state
            model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 10))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
        steps = 100
        best = math.inf
        for i in range(repeats + 1):  # the first pass warms up
            start = time.perf_counter()
            for _ in range(steps):
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
            if i:
                best = min(best, time.perf_counter() - start)
        return {"gemm_gflops": round(gflops, 1), "small_steps_per_s": round(steps / best, 1)}
    finally:
        torch.set_num_threads(threads)
