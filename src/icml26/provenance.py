"""What a result records about where it was computed: the commit (and whether the checkout was
dirty), the CPU model (float32 kernels, hence a trained model's last digits, depend on it), library
versions, threads, device and wall time."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from icml26.contract import RunContext

__all__ = ["cpu_model", "git_commit", "provenance"]


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
        "threads": ctx.threads,
        "device": str(ctx.device),
        "wall_time_s": round(wall, 3),
        "utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": sys.argv[1:],
        **ctx.provenance,
    }
