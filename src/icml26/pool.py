"""Jobs on spawned worker processes that survive a dead worker: :func:`run_jobs`.

Each worker runs one torch thread (``OMP_NUM_THREADS=1``) and exits when its driver dies; a worker
killed by a signal costs only the job it ran (:class:`WorkerDied`), and the pool is replaced.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
from typing import Any, Sequence

__all__ = ["WorkerDied", "run_jobs"]

log = logging.getLogger("icml26.sweep")


_STARTED = None  # in a worker: the queue on which it tells the driver which job it runs


def _init_worker(parent: int, started) -> None:
    """Worker initializer: keep the driver's queue, and exit when the driver is gone (no orphans)."""
    global _STARTED
    _STARTED = started
    _watch_parent(parent)


def _watch_parent(parent: int) -> None:
    """Exit this process when the process that started it is gone."""
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="icml26-parent-watch", daemon=True).start()


def _tracked(tag: Any, fn, *args):
    """Run ``fn(*args)`` in a worker after telling the driver which process runs ``tag``."""
    if _STARTED is not None:
        _STARTED.put((tag, os.getpid()))
    return fn(*args)


def _signal_text(code: int | None) -> str:
    if code is None:
        return "worker died"
    if code < 0:
        import signal

        try:
            return f"worker killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with status {code}"


def _drain(started, pids: dict[int, Any], began) -> None:
    """Read the workers' start messages: which process runs which job (and tell ``began``)."""
    while not started.empty():
        tag, pid = started.get()
        pids[pid] = tag
        if began is not None:
            began(tag)


def _completed(futures, started, pids: dict[int, Any], began, poll_s: float = 1.0):
    """Yield the futures as they finish, reading the start messages every ``poll_s`` meanwhile."""
    left = set(futures)
    while left:
        done, left = cf.wait(left, timeout=poll_s, return_when=cf.FIRST_COMPLETED)
        _drain(started, pids, began)  # a job's start is told before its end
        yield from done


class WorkerDied(RuntimeError):
    """The process running a job died (killed by a signal, e.g. the kernel's out-of-memory killer)."""


def run_jobs(jobs: Sequence[tuple[Any, tuple]], workers: int, finished, *, fn, bar=None, began=None) -> None:
    """Run ``fn(*args)`` for each ``(tag, args)`` on ``workers`` spawned processes (one torch thread each),
    calling ``finished(tag, value, error)`` in the driver as each ends, and ``began(tag)`` (when given) as
    a worker starts it (within about a second; always before its ``finished``).

    A job that raises is reported with its exception. A worker that dies (a signal, the OOM killer)
    costs only the job it was running: that job is reported with :class:`WorkerDied` naming the signal,
    the pool is replaced, and the jobs that were running beside it are run again. Workers exit when the
    driver dies.
    """
    import signal
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # inherited by the spawned workers
    pending = list(jobs)
    stalls = 0
    try:
        while pending:
            started = context.SimpleQueue()
            pids: dict[int, Any] = {}  # this pool's worker pid -> the job it last started
            pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(pending)), mp_context=context,
                                          initializer=_init_worker, initargs=(os.getpid(), started))
            try:
                futures = {pool.submit(_tracked, tag, fn, *args): (tag, args) for tag, args in pending}
                processes = dict(getattr(pool, "_processes", {}) or {})
                pending, lost = [], []
                for future in _completed(futures, started, pids, began):
                    tag, args = futures[future]
                    try:
                        value, error = future.result(), None
                    except BrokenProcessPool:
                        lost.append((tag, args))
                        continue
                    except Exception as exc:
                        value, error = None, exc
                    finished(tag, value, error)
                    if bar is not None:
                        bar.update(1)
            except KeyboardInterrupt:  # stop now: pending jobs cancelled, running workers terminated
                for proc in list((getattr(pool, "_processes", {}) or {}).values()):
                    proc.terminate()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            if not lost:
                break
            # Which lost job was running in the process that died? The others are run again.
            _drain(started, pids, began)
            processes.update(dict(getattr(pool, "_processes", {}) or {}))
            codes = {pid: proc.exitcode for pid, proc in processes.items()}
            lost_tags = {tag for tag, _ in lost}
            running = {pid: tag for pid, tag in pids.items() if tag in lost_tags}
            culprits = {tag: codes.get(pid) for pid, tag in running.items()
                        if codes.get(pid) not in (None, 0, -signal.SIGTERM)}
            if not culprits:  # e.g. killed with SIGTERM: every job that was running is a suspect
                culprits = {tag: codes.get(pid) for pid, tag in running.items()}
            if not culprits:  # a worker died between jobs: nothing is lost, run them again (twice in a row at most)
                stalls += 1
                if stalls >= 2:
                    culprits = {tag: None for tag in lost_tags}
            else:
                stalls = 0
            for tag, args in lost:
                if tag in culprits:
                    finished(tag, None, WorkerDied(_signal_text(culprits[tag])))
                    if bar is not None:
                        bar.update(1)
                else:
                    pending.append((tag, args))
            if pending:
                log.warning("a worker died (%s); running %d job(s) again in a new pool",
                            "; ".join(f"{t}: {_signal_text(c)}" for t, c in culprits.items()), len(pending))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
