"""common.hf: the cache a forward returned under either name, and quiet_transformers' reach."""

from __future__ import annotations

import types

import pytest

from icml26.common.hf import output_cache


def test_output_cache_reads_either_name_and_prefers_the_new_one():
    new, old = object(), object()
    assert output_cache(types.SimpleNamespace(cache=new)) is new
    assert output_cache(types.SimpleNamespace(past_key_values=old)) is old
    assert output_cache(types.SimpleNamespace(cache=new, past_key_values=old)) is new
    assert output_cache(types.SimpleNamespace(cache=None, past_key_values=old)) is old
    assert output_cache(types.SimpleNamespace(logits=1)) is None


def test_quiet_transformers_silences_the_gguf_readers_own_bar_and_restores_it(capfd):
    pytest.importorskip("transformers")
    gguf_utils = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    from icml26.common.hf import quiet_transformers

    bar = gguf_utils.tqdm
    with quiet_transformers():
        for _ in gguf_utils.tqdm(range(3), desc="GGUF tensors"):
            pass
    assert gguf_utils.tqdm is bar
    out, err = capfd.readouterr()
    assert "GGUF tensors" not in out + err
