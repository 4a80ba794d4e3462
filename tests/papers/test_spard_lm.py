"""SPARD's SmolLM2 section on a tiny random Llama with a byte tokenizer: every arm of
``LM_ARMS`` is trained and scored, the section's checks follow the documented formulas (refusals lost on the
prompts the base refused, ratios to the best baseline, exact-match points), the base weights are left as they
were, and the further run's configuration changes only the section's switches.

Numbers from outside the code: the checks by hand on rows written here; the refusals in the end-to-end test
come from a stub whose answers are fixed per prompt, so every arm's refusals lost is known in advance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("peft")

from icml26.common.config import config_to_dict  # noqa: E402
from icml26.contract import RunContext  # noqa: E402
from icml26.papers.spard import lm_section  # noqa: E402
from icml26.papers.spard.config import Config  # noqa: E402
from icml26.papers.spard.lm_run import OVERRIDES, lm_config  # noqa: E402


def _row(lost: float, exact: float = 0.5) -> dict:
    return {"refusals_kept": 1.0 - lost, "task_exact_match": exact, "asr": 0.8}


def test_checks_by_hand():
    results = {"LM SFT": _row(0.9, 0.80), "LM SPARD": _row(0.1, 0.75), "LM SPAG+random": _row(0.2),
               "LM SafeInstr": _row(0.5), "LM penalty": _row(0.3), "LM Lisa": _row(0.4)}
    checks, best = lm_section.lm_checks(results)
    by_id = {c.id: c.value for c in checks}
    assert best == "penalty"
    assert by_id["lm_sft_refusals_lost"] == pytest.approx(0.9)
    assert by_id["lm_spard_refusals_lost"] == pytest.approx(0.1)
    assert by_id["lm_spard_vs_best_baseline"] == pytest.approx(0.1 / 0.3)
    assert by_id["lm_spag_vs_baselines_same_data"] == pytest.approx(0.2 / 0.3)
    assert by_id["lm_task_parity"] == pytest.approx(5.0)  # 100 * (0.80 - 0.75) points
    assert by_id["lm_dpp_vs_random"] == pytest.approx(-0.1)
    results["LM penalty"] = _row(0.0)  # a baseline that lost nothing: no ratio can be met
    checks, _ = lm_section.lm_checks(results)
    assert np.isnan({c.id: c.value for c in checks}["lm_spard_vs_best_baseline"])


class ByteTokenizer:
    """Bytes as tokens; "\\x03" is the end of sequence. Enough of a Hugging Face tokenizer for the section."""

    eos_token = "\x03"
    eos_token_id = 3

    def __init__(self) -> None:
        self.pad_token = None
        self.padding_side = "right"

    @property
    def pad_token_id(self) -> int | None:
        return None if self.pad_token is None else ord(self.pad_token)

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True) -> str:
        return "".join(f"[{m['role']}] {m['content']}\n" for m in messages) + "[assistant] "

    def _ids(self, text: str) -> list[int]:
        return list(text.encode("ascii"))

    def __call__(self, text, add_special_tokens=False, return_tensors=None, padding=False):
        if isinstance(text, str):
            return {"input_ids": self._ids(text)}
        rows = [self._ids(t) for t in text]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_token_id)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            where = slice(width - len(r), width) if self.padding_side == "left" else slice(0, len(r))
            ids[i, where], mask[i, where] = torch.tensor(r), 1
        return transformers.BatchEncoding({"input_ids": ids, "attention_mask": mask})


@dataclasses.dataclass
class TinyLM:
    model: torch.nn.Module
    tokenizer: ByteTokenizer
    provenance: dict


def tiny_lm() -> TinyLM:
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    torch.manual_seed(0)
    return TinyLM(transformers.LlamaForCausalLM(config).eval(), ByteTokenizer(), {"lm": "tiny random llama"})


PROMPTS = [f"harmful request number {i}" for i in range(60)]
REFUSED_BY_BASE = {p for i, p in enumerate(PROMPTS) if i % 2 == 0}


def _stub_answers(model, tokenizer, users, max_new_tokens=48, batch_size=16):
    """The base model refuses the even prompts; a fine-tuned model (PEFT-wrapped) refuses those whose number
    is a multiple of 4: every arm then loses half the base's refusals."""
    tuned = hasattr(model, "peft_config")
    out = []
    for u in users:
        number = int(u.rsplit(" ", 1)[-1]) if u in PROMPTS else -1
        out.append("I cannot help with that." if number >= 0 and number % (4 if tuned else 2) == 0 else "d c b a")
    return out


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_section_trains_and_scores_every_arm_and_leaves_the_base_alone(monkeypatch):
    monkeypatch.setattr(lm_section, "_generate", _stub_answers)
    cfg = dataclasses.replace(Config.tiny(), lm_section=True, lm_steps=2, lm_task_size=36, lm_pool=30, lm_eval=20,
                              lm_task_eval=4)
    lm = tiny_lm()
    before = {n: p.detach().clone() for n, p in lm.model.state_dict().items()}
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False)
    metrics, notes = {}, []
    checks = lm_section.run_lm_section(cfg, ctx, metrics, notes, lm=lm, prompts=PROMPTS)
    assert set(metrics) == {"LM base", *(f"LM {arm}" for arm in lm_section.LM_ARMS)}
    held_out_refused = int(notes[-1].split("refusals lost on the ")[1].split(" of ")[0])
    assert held_out_refused > 0
    for arm in lm_section.LM_ARMS:
        row = metrics[f"LM {arm}"]
        # exactly the held-out prompts numbered 2 mod 4 are lost, whichever arm
        assert row["refusals_lost"] == pytest.approx(1.0 - row["refusals_kept"])
        assert 0.0 < row["refusals_lost"] < 1.0
        assert row["task_exact_match"] == 0.0  # "d c b a" is never the reversal of 3-5 task words
    assert metrics["LM base"]["refusals_lost"] == 0.0
    for arm in ("SPARD", "SPAG+random"):
        assert {"tau", "projection_rate", "base_safety_loss"} <= set(metrics[f"LM {arm}"])
    assert [c.id for c in checks] == ["lm_sft_refusals_lost", "lm_spard_refusals_lost", "lm_spard_vs_best_baseline",
                                      "lm_task_parity", "lm_spag_vs_baselines_same_data", "lm_dpp_vs_random"]
    by_id = {c.id: c.value for c in checks}
    assert by_id["lm_spard_vs_best_baseline"] == pytest.approx(1.0)  # every arm lost the same refusals
    assert by_id["lm_dpp_vs_random"] == pytest.approx(0.0) and by_id["lm_task_parity"] == pytest.approx(0.0)
    assert set(ctx.provenance["lm_arm_seconds"]) == set(lm_section.LM_ARMS)
    after = lm.model.state_dict()
    assert set(after) == set(before) and all(torch.equal(before[n], after[n]) for n in before)


def test_section_is_skipped_with_a_note_when_the_base_refuses_nothing(monkeypatch):
    monkeypatch.setattr(lm_section, "_generate", lambda model, tok, users, **kw: ["Sure." for _ in users])
    cfg = dataclasses.replace(Config.tiny(), lm_section=True, lm_steps=1, lm_task_size=36, lm_pool=30, lm_eval=20)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False)
    metrics, notes = {}, []
    assert lm_section.run_lm_section(cfg, ctx, metrics, notes, lm=tiny_lm(), prompts=PROMPTS) == []
    assert metrics == {} and "skipped" in notes[-1]


def test_too_few_prompts_is_refused_naming_the_fields():
    cfg = dataclasses.replace(Config.tiny(), lm_section=True, lm_pool=50, lm_eval=20)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False)
    with pytest.raises(ValueError, match="lm_eval=20 \\+ lm_pool=50"):
        lm_section.run_lm_section(cfg, ctx, {}, [], lm=tiny_lm(), prompts=PROMPTS)


def test_further_run_config_changes_only_the_section():
    quick, further = config_to_dict(Config.quick()), config_to_dict(lm_config("quick"))
    assert {k for k in quick if quick[k] != further[k]} == {"lm_section", "lm_eval"}
    assert further["lm_section"] is True and OVERRIDES["lm_section"] == "true"
    assert Config.quick().lm_section is False  # the committed quick run is untouched
    with pytest.raises(ValueError, match="lm_steps"):
        lm_config("quick", {"lm_steps": "0"})
    assert lm_section.lm_tau(lm_config("quick")) == "base"  # the default: the base model's own safety loss
    assert lm_section.lm_tau(lm_config("quick", {"lm_tau": "0.2"})) == 0.2
    assert "lm_tau" not in further  # neutral: the committed configurations are unchanged
    with pytest.raises(ValueError, match="lm_tau"):
        lm_config("quick", {"lm_tau": "-0.1"})


def test_checks_refuse_a_missing_arm_and_an_out_of_range_share():
    results = {"LM SFT": _row(0.9), "LM SPARD": _row(0.1)}
    with pytest.raises(ValueError, match="LM SPAG\\+random"):
        lm_section.lm_checks(results)
    with pytest.raises(ValueError, match="refusals_kept=1.5"):
        lm_section.lost({"refusals_kept": 1.5})
    assert np.isnan(lm_section.lost({"refusals_kept": float("nan")}))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_arm_cache_resumes_a_killed_seed_at_its_first_unfinished_arm(monkeypatch, tmp_path):
    """A run killed in its third arm keeps the two finished arms; the rerun reads them, trains the rest, and
    every row equals an uncached run's (the SPAG arms' safety losses included, so the arms really trained)."""
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    monkeypatch.setattr(lm_section, "_generate", _stub_answers)
    cfg = dataclasses.replace(Config.tiny(), lm_section=True, lm_steps=2, lm_task_size=36, lm_pool=30, lm_eval=20,
                              lm_task_eval=4)

    def section(config, **patches):
        ctx = RunContext(seed=3, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False)
        metrics: dict = {}
        with monkeypatch.context() as m:
            for name, fn in patches.items():
                m.setitem(lm_section.BASELINES, name, fn)
            lm_section.run_lm_section(config, ctx, metrics, [], lm=tiny_lm(), prompts=PROMPTS)
        return metrics, ctx.provenance

    plain, plain_prov = section(cfg)
    assert "lm_arms_from_cache" not in plain_prov and not (tmp_path / "spard-lm-arms").exists()
    cached = dataclasses.replace(cfg, lm_arm_cache=True)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed in the third arm")

    with pytest.raises(KeyboardInterrupt):
        section(cached, SafeInstr=killed)  # LM_ARMS[3]: SFT, SPARD, SPAG+random finish first
    assert len(list((tmp_path / "spard-lm-arms").iterdir())) == 3
    resumed, prov = section(cached)
    assert set(prov["lm_arms_from_cache"]) == {"SFT", "SPARD", "SPAG+random"}
    assert resumed == plain
    again, prov = section(cached)
    assert set(prov["lm_arms_from_cache"]) == set(lm_section.LM_ARMS) and again == plain
    _, prov = section(dataclasses.replace(cached, lm_steps=3))  # another budget: nothing read
    assert "lm_arms_from_cache" not in prov
    # another τ: the four arms that do not read it come from the cache, the two SPAG arms train at τ = 0.2
    other, prov = section(dataclasses.replace(cached, lm_tau=0.2))
    assert set(prov["lm_arms_from_cache"]) == set(lm_section.LM_ARMS) - set(lm_section.SPAG_ARMS)
    for arm in lm_section.LM_ARMS:
        if arm in lm_section.SPAG_ARMS:
            assert other[f"LM {arm}"]["tau"] == pytest.approx(0.2) != plain[f"LM {arm}"]["tau"]
        else:
            assert other[f"LM {arm}"] == plain[f"LM {arm}"]
    # at a given τ SPAG never reads the base model's loss: the experiment drops that NaN (every value left is
    # finite, as the runner demands), and at τ = "base" it keeps the measured one
    from icml26.papers.spard.experiment import drop_unmeasured_base_loss

    assert all(np.isnan(other[f"LM {arm}"]["base_safety_loss"]) for arm in lm_section.SPAG_ARMS)
    drop_unmeasured_base_loss(other)
    assert all(np.isfinite(v) for row in other.values() for v in row.values())
    assert not any("base_safety_loss" in row for row in other.values())
    kept = {name: dict(row) for name, row in plain.items()}
    drop_unmeasured_base_loss(kept)
    assert kept == plain and all(np.isfinite(plain[f"LM {arm}"]["base_safety_loss"]) for arm in lm_section.SPAG_ARMS)


def test_arm_key_names_every_input():
    cfg = Config.tiny()
    rows = [{"input_ids": torch.tensor([1, 2, 3]), "labels": torch.tensor([-100, 2, 3])}]
    base = dict(seeds=[1, 2, 3], user_rows=rows, safety_rows=rows, held_out=["a", "b"],
                held_base=np.array([True, False]), task=[("x y", "y x")], provenance={"w": "sha"}, device="cpu")
    key = lm_section.arm_key(cfg, "SFT", **base)
    assert key == lm_section.arm_key(cfg, "SFT", **base)
    other_rows = [{"input_ids": torch.tensor([1, 2, 4]), "labels": torch.tensor([-100, 2, 4])}]
    variants = [lm_section.arm_key(cfg, "SPARD", **base),
                lm_section.arm_key(dataclasses.replace(cfg, lm_steps=cfg.lm_steps + 1), "SFT", **base),
                lm_section.arm_key(dataclasses.replace(cfg, rho=cfg.rho * 2), "SFT", **base),
                lm_section.arm_key(cfg, "SFT", **{**base, "seeds": [1, 2, 4]}),
                lm_section.arm_key(cfg, "SFT", **{**base, "safety_rows": other_rows}),
                lm_section.arm_key(cfg, "SFT", **{**base, "held_base": np.array([True, True])}),
                lm_section.arm_key(cfg, "SFT", **{**base, "provenance": {"w": "other"}}),
                lm_section.arm_key(cfg, "SFT", **{**base, "device": "cuda:0"})]
    assert len({key, *variants}) == len(variants) + 1
    tau = dataclasses.replace(cfg, lm_tau=0.2)  # τ is an input of the SPAG arms only
    for arm in lm_section.LM_ARMS:
        same = lm_section.arm_key(tau, arm, **base) == lm_section.arm_key(cfg, arm, **base)
        assert same is (arm not in lm_section.SPAG_ARMS)
    with pytest.raises(ValueError, match="arm='SPAG'"):
        lm_section.arm_key(cfg, "SPAG", **base)
