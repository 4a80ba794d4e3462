"""A run's files as one unit: staged first (a failure leaves the old files and no temporaries), then
renamed with interrupts held (a signal lands after the last rename, and says so); SIGTERM unwinds the
CLI like Ctrl-C. Under signals at random moments the folder holds the old run or the new one, never a mix."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from icml26 import atomic
from icml26.atomic import WrittenBeforeStop, write_together


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_write_together_writes_every_file_and_removes_the_stale_ones(tmp_path):
    (tmp_path / "old.png").write_bytes(b"old")
    write_together(tmp_path, {"a.png": b"A", "result.json": b"{}"}, last="result.json", remove=["old.png"])
    assert _listing(tmp_path) == ["a.png", "result.json"]
    assert (tmp_path / "a.png").read_bytes() == b"A"


def test_a_failure_while_staging_leaves_the_old_files_and_no_temporary(tmp_path, monkeypatch):
    write_together(tmp_path, {"a.png": b"old-a", "result.json": b"old"}, last="result.json")
    calls = []
    real = os.fsync

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:  # the second file does not fit
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_together(tmp_path, {"a.png": b"new-a", "result.json": b"new"}, last="result.json")
    assert _listing(tmp_path) == ["a.png", "result.json"]
    assert (tmp_path / "a.png").read_bytes() == b"old-a" and (tmp_path / "result.json").read_bytes() == b"old"


def test_an_interrupt_during_the_renames_waits_for_the_last_one_and_says_the_run_was_written(tmp_path, monkeypatch):
    real = os.replace
    order = []

    def replace_then_interrupt(src, dst):
        order.append(os.path.basename(dst))
        if len(order) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C between the first and the second rename
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace_then_interrupt)
    with pytest.raises(WrittenBeforeStop, match="result.json was written in full"):
        write_together(tmp_path, {"b.png": b"B", "a.png": b"A", "result.json": b"{}"}, last="result.json")
    assert order[-1] == "result.json" and len(order) == 3
    assert _listing(tmp_path) == ["a.png", "b.png", "result.json"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back


def test_last_must_be_one_of_the_files(tmp_path):
    with pytest.raises(ValueError, match="last='result.json'"):
        write_together(tmp_path, {"a.png": b"A"}, last="result.json")


_WRITER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from icml26.atomic import sigterm_as_interrupt
    from icml26.runner import write_result

    folder = Path(sys.argv[1])
    print("ready", flush=True)
    with sigterm_as_interrupt():
        for gen in range(1, 10**9):
            big = bytes([gen % 251]) * 200_000     # figures big enough that a write takes a moment
            write_result(folder, {"generation": gen}, {"a.png": big + b"a", "b.png": big + b"b"})
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_at_any_moment_leaves_the_old_run_or_the_new_one_never_a_mix(sig, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    for i, delay in enumerate((0.03, 0.11, 0.26)):
        folder = tmp_path / f"run{i}"
        proc = subprocess.Popen([sys.executable, str(script), str(folder)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.time() + 60
        while not (folder / "result.json").exists() and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert proc.returncode != 0
        names = _listing(folder)
        assert names == ["a.png", "b.png", "result.json"], names   # no temporary left behind
        gen = json.loads((folder / "result.json").read_text())["generation"]
        for fig in ("a.png", "b.png"):
            assert (folder / fig).read_bytes()[0] == gen % 251, f"{fig} is from another run than result.json"
