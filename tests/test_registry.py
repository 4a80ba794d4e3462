import dataclasses

import pytest

from icml26 import registry

EXPECTED = ("lmcleaner, fox, ou_steady, hici, vimrag, asym_perturb, spard, revit, instemb, "
            "subspace_path, dmanet, confsleepnet, curvature, stream_spr, robuq, zs_expand, llr, "
            "robust_ntp, hamu").split(", ")


def test_keys_are_the_abstracts_papers_in_order():
    """EXPECTED is the order of ../shared/seeds/icml2026-abstracts.txt (kept here: CI has no shared/)."""
    assert registry.keys() == EXPECTED
    assert len(set(registry.keys())) == len(EXPECTED)


def test_statuses_consistent_with_folders():
    for spec in registry.list_papers():
        has_experiment = (spec.folder / "experiment.py").is_file()
        assert spec.implemented == has_experiment, (
            f"{spec.key}: status {spec.status} but experiment.py exists={has_experiment}")
        if spec.implemented:
            assert (spec.folder / "README.md").is_file(), f"{spec.key} has no README.md"
            assert (spec.folder / "__init__.py").is_file()


def test_every_spec_is_complete():
    for spec in registry.list_papers():
        assert spec.title and spec.claim.endswith(".")
        assert spec.area in registry.AREAS
        assert spec.url is None or spec.url.startswith("https://")
        assert spec.code is None or spec.code.startswith("https://github.com/")


def _spec(**changes):
    base = registry.PaperSpec(key="newpaper", title="t", url=None, code=None, area="lm", extras=(),
                              claim="c.")
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize("key", ["Bad", "1abc", "a-b", "x", "", "a" * 40])
def test_malformed_key_fails_loudly(key, monkeypatch):
    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    with pytest.raises(registry.RegistryError, match="malformed"):
        registry.register(_spec(key=key))


def test_duplicate_key_fails_loudly(monkeypatch):
    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    with pytest.raises(registry.RegistryError, match="twice"):
        registry.register(_spec(key="hamu"))


def test_implemented_without_folder_fails_loudly(monkeypatch):
    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    with pytest.raises(registry.RegistryError, match="experiment.py is missing"):
        registry.register(_spec(key="nofolder", status="implemented"))


@pytest.mark.parametrize("field,value,match", [("area", "astrology", "unknown area"),
                                               ("extras", ("nope",), "unknown extra"),
                                               ("status", "done", "status")])
def test_bad_fields_fail_loudly(field, value, match, monkeypatch):
    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    with pytest.raises(registry.RegistryError, match=match):
        registry.register(_spec(**{field: value}))


def test_registered_spec_is_findable(monkeypatch):
    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    registry.register(_spec())
    assert registry.get("newpaper").title == "t"
    with pytest.raises(KeyError, match="known papers"):
        registry.get("nonexistent")


def test_list_papers_by_area():
    lm = registry.list_papers("lm")
    assert lm and all(s.area == "lm" for s in lm)
    with pytest.raises(ValueError, match="unknown area"):
        registry.list_papers("astrology")


@pytest.mark.parametrize("key", registry.keys(status="implemented"))
def test_every_paper_says_what_a_user_applies_and_the_names_exist(key):
    import importlib
    import re

    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    line = spec.applies
    assert line != "-" and len(line) <= 110, line
    api = importlib.import_module(spec.api_module)
    from icml26.integrations import hf

    head = re.sub(r"'[^']*'", "", line.split(": ")[0])  # the call part, without quoted argument values
    named = {w for w in re.findall(r"(?<![\w.])([A-Za-z_]\w*)(?=\()", head)} | set(re.findall(r"\b[A-Z]\w*[a-z]\w*", head))
    assert named, line
    exported = set(getattr(api, "__all__", ())) | set(hf.__all__) | {key}
    assert not named - exported, f"{key}: {sorted(named - exported)} not in the public API"
    assert spec.usage_example(), f"{key}: the README has no runnable usage example"
