"""Run a function on 2 processes with gloo on 127.0.0.1 (a free port), collect each rank's return.

``run_ranks(fn, world_size=2, *args)`` spawns ``world_size`` processes (``torch.multiprocessing``),
initialises the default process group, calls ``fn(rank, world_size, *args)`` with one torch
thread, and returns ``[result of rank 0, result of rank 1, …]`` (results must pickle). A failing
rank's traceback is raised in the parent.
"""

from __future__ import annotations

import os
import socket
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world_size: int, port: int, folder: str, fn: Callable, args: tuple) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        result: Any = ("ok", fn(rank, world_size, *args))
    except BaseException:  # sent back to the parent
        result = ("error", traceback.format_exc())
    finally:
        try:
            dist.barrier()
        except Exception:
            pass
        dist.destroy_process_group()
    torch.save(result, Path(folder) / f"rank{rank}.pt")


def run_ranks(fn: Callable, world_size: int = 2, *args: Any) -> list[Any]:
    with tempfile.TemporaryDirectory() as folder:
        for attempt in range(3):
            try:
                mp.spawn(_worker, args=(world_size, free_port(), folder, fn, args), nprocs=world_size, join=True)
                break
            except mp.ProcessRaisedException as exc:
                # The free port can be taken between our probe and the ranks' bind (other processes
                # run tests too): try another; any other failure is the test's.
                if attempt == 2 or "address already in use" not in str(exc).lower():
                    raise
        out = []
        for rank in range(world_size):
            status, value = torch.load(Path(folder) / f"rank{rank}.pt", weights_only=False)
            if status == "error":
                raise AssertionError(f"rank {rank} failed:\n{value}")
            out.append(value)
    return out
