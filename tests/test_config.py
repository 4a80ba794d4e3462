import dataclasses
from typing import Literal, Optional

import pytest

from icml26.common.config import ConfigError, apply_overrides, config_fields, config_to_dict, field_docs, parse_value


@dataclasses.dataclass
class Cfg:
    """Example."""

    n: int = 3
    """How many."""
    lr: float = 0.1
    """Step size."""
    kind: Literal["a", "b"] = "a"
    """Which kind."""
    sizes: tuple[int, ...] = (1, 2)
    """Sizes."""
    cap: Optional[float] = None
    """Optional cap."""
    flag: bool = False

    @classmethod
    def quick(cls):
        return cls(n=1)


def test_field_docs_read_from_source():
    docs = field_docs(Cfg)
    assert docs == {"n": "How many.", "lr": "Step size.", "kind": "Which kind.", "sizes": "Sizes.",
                    "cap": "Optional cap."}


def test_config_fields_default_and_quick():
    fields = {f.name: f for f in config_fields(Cfg)}
    assert fields["n"].default == 3 and fields["n"].quick == 1
    assert fields["kind"].type_name == "'a' | 'b'"


@pytest.mark.parametrize("text,tp,expected", [
    ("5", int, 5), ("1e3", int, 1000), ("0.5", float, 0.5), ("true", bool, True), ("off", bool, False),
    ("b", Literal["a", "b"], "b"), ("1,2,3", tuple[int, ...], (1, 2, 3)), ("none", Optional[float], None),
    ("2.5", Optional[float], 2.5), ("x", str, "x"),
])
def test_parse_value(text, tp, expected):
    assert parse_value(text, tp) == expected


@pytest.mark.parametrize("text,tp,match", [
    ("1.5", int, "not an integer"), ("abc", float, "not a number"), ("maybe", bool, "boolean"),
    ("c", Literal["a", "b"], "not one of"),
])
def test_parse_value_errors(text, tp, match):
    with pytest.raises(ValueError, match=match):
        parse_value(text, tp)


def test_apply_overrides_types_and_unknown_field():
    cfg = apply_overrides(Cfg(), {"n": "7", "sizes": "4,5", "lr": 1})
    assert cfg.n == 7 and cfg.sizes == (4, 5) and cfg.lr == 1.0 and isinstance(cfg.lr, float)
    with pytest.raises(ValueError, match="valid fields: n, lr, kind, sizes, cap, flag"):
        apply_overrides(Cfg(), {"steps": "1"})
    with pytest.raises(ValueError, match="n='x' is not an integer"):
        apply_overrides(Cfg(), {"n": "x"})


def test_config_to_dict_is_json_ready():
    assert config_to_dict(Cfg()) == {"n": 3, "lr": 0.1, "kind": "a", "sizes": [1, 2], "cap": None,
                                     "flag": False}


def test_a_neutral_field_is_recorded_only_when_set():
    """A field added at a neutral default leaves the recorded config, and so the configuration hash of
    committed runs, as it was; set, it is recorded like any other."""
    from icml26.common.config import neutral_field
    from icml26.results import config_hash

    @dataclasses.dataclass
    class Later(Cfg):
        penalty: float = neutral_field(0.0, min=0.0)
        grid: tuple[int, ...] = neutral_field((1, 2))

    before = config_to_dict(Cfg())
    assert config_to_dict(Later()) == before
    assert config_hash("k", "quick", config_to_dict(Later())) == config_hash("k", "quick", before)
    assert config_to_dict(Later(penalty=0.05)) == {**before, "penalty": 0.05}
    assert config_to_dict(apply_overrides(Later(), {"grid": "1,3"}))["grid"] == [1, 3]
    assert config_to_dict(apply_overrides(Later(), {"grid": "1,2"})) == before  # set back to its default
    with pytest.raises(ConfigError, match="penalty"):
        apply_overrides(Later(), {"penalty": "-1"})
    with pytest.raises(TypeError, match="immutable"):
        neutral_field([1])


@pytest.mark.parametrize("key, field, value, match", [
    ("fox", "caption_fraction", 0.0, "caption_fraction"),
    ("fox", "caption_fraction", 1.0, "caption_fraction"),
    ("hici", "finetune_steps", 0, "finetune_steps"),
    ("hici", "bench_hidden", 0, "bench_hidden"),
    ("zs_expand", "similar_per_group", 0, "similar_per_group"),
])
def test_values_that_ran_to_non_finite_metrics_are_refused_before_the_run(key, field, value, match):
    """These values once passed validation and ended in NaN metrics or an internal error after the run."""
    import importlib

    config = importlib.import_module(f"icml26.papers.{key}.config").Config
    with pytest.raises(ValueError, match=match):
        config(**{field: value})
