"""The Hugging Face Trainer integrations, a few steps each with a tiny HF model on CPU."""

from __future__ import annotations

import dataclasses

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from icml26.common.tiny_lm import TinyLMConfig, build_model  # noqa: E402
from icml26.integrations.hf import LLRCallback, curvature_trainer, hamu_trainer, llr_optimizer  # noqa: E402


class _Rows(torch.utils.data.Dataset):
    def __init__(self, n=16, T=16, vocab=97, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (n, T), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.ids[i]}


def _model():
    return build_model(TinyLMConfig(arch="llama", vocab_size=97, d_model=64, n_layers=2, n_heads=2, context=16), seed=0)


def _args(tmp_path, steps=4, lr=1e-3):
    return transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=4,
                                          learning_rate=lr, report_to=[], save_strategy="no", use_cpu=True,
                                          logging_strategy="no", disable_tqdm=True, seed=0)


def test_llr_callback_fits_and_scales_layers(tmp_path):
    model = _model()
    optimizer = llr_optimizer(model, lr=1e-3)
    callback = LLRCallback(every=2, ramp_steps=0, active_fraction=1.0, min_eigs=16, r_min=1.0, r_max=3.0)
    trainer = transformers.Trainer(model=model, args=_args(tmp_path), train_dataset=_Rows(),
                                   optimizers=(optimizer, None), callbacks=[callback])
    trainer.train()
    mult = callback.llr.multipliers
    fitted = [v for k, v in mult.items() if "layers" in k]
    assert fitted and min(fitted) == pytest.approx(1.0) and max(fitted) == pytest.approx(3.0)
    assert callback.llr.history.steps[:2] == [0, 2]


def test_llr_callback_refuses_a_single_group_optimizer(tmp_path):
    model = _model()
    trainer = transformers.Trainer(model=model, args=_args(tmp_path, steps=1), train_dataset=_Rows(),
                                   callbacks=[LLRCallback()],
                                   optimizers=(torch.optim.AdamW(model.parameters(), lr=1e-3), None))
    with pytest.raises(ValueError, match="llr_optimizer"):
        trainer.train()


def test_curvature_trainer_adds_the_regulariser_and_straightens(tmp_path):
    from icml26.papers.curvature import CurvatureLoss

    data = _Rows()
    loss_fn = CurvatureLoss(layers=(1,), weight=1.0)
    batch = {k: torch.stack([data[i][k] for i in range(4)]) for k in ("input_ids", "attention_mask", "labels")}
    model = _model()
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
        before_total = float(out.loss + loss_fn(out, batch["input_ids"], batch["attention_mask"]))
        before_curv = float(loss_fn(out, batch["input_ids"], batch["attention_mask"]))
    trainer = curvature_trainer(loss_fn, model=model, args=_args(tmp_path, steps=12, lr=3e-3), train_dataset=data)
    assert trainer.compute_loss(model, dict(batch)).item() == pytest.approx(before_total, rel=1e-5)
    trainer.train()
    assert set(trainer.last_losses) == {"lm", "curvature"}
    with torch.no_grad():
        after_curv = float(loss_fn(model(**batch, output_hidden_states=True), batch["input_ids"], batch["attention_mask"]))
    assert after_curv < before_curv
    with pytest.raises(TypeError, match="CurvatureLoss"):
        curvature_trainer(0.1, model=model, args=_args(tmp_path))


def test_hamu_trainer_raises_forget_loss_and_logs_each_step(tmp_path):
    model = _model()
    retain, forget = _Rows(n=16, seed=1), _Rows(n=8, seed=2)

    def lm_loss(data):
        batch = {k: torch.stack([data[i][k] for i in range(len(data))]) for k in ("input_ids", "attention_mask", "labels")}
        with torch.no_grad():
            return float(model(**batch).loss)

    before = lm_loss(forget)
    trainer = hamu_trainer(forget, hamu={"bound": 0.5}, model=model, args=_args(tmp_path, steps=6, lr=1.0),
                           train_dataset=retain)
    trainer.train()
    assert len(trainer.hamu_logs) == 6 and all(log.applied for log in trainer.hamu_logs)
    assert all(log.predicted_forget_change > 0 for log in trainer.hamu_logs)
    assert lm_loss(forget) > before
    with pytest.raises(ValueError, match="learning_rate"):
        hamu_trainer(forget, hamu={"lr": 1.0}, model=model, args=_args(tmp_path), train_dataset=retain)


@pytest.mark.parametrize("which", ["curvature", "plain"])
def test_gradient_accumulation_gives_the_update_of_one_large_batch(tmp_path, which):
    """Two micro-batches of 4 accumulated = one batch of 8, as for the plain Trainer (SGD, one step)."""
    from icml26.papers.curvature import CurvatureLoss

    data = _Rows(n=8)
    updates = {}
    for accumulation in (1, 2):
        model = _model()
        before = [p.detach().clone() for p in model.parameters()]
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / str(accumulation)), max_steps=1, per_device_train_batch_size=8 // accumulation,
            gradient_accumulation_steps=accumulation, learning_rate=0.1, optim="sgd", lr_scheduler_type="constant",
            max_grad_norm=0.0, report_to=[], save_strategy="no", use_cpu=True, logging_strategy="no",
            disable_tqdm=True, seed=0, dataloader_drop_last=True)
        kwargs = dict(model=model, args=args, train_dataset=data)
        trainer = (curvature_trainer(CurvatureLoss(layers=(1,), weight=1.0), **kwargs) if which == "curvature"
                   else transformers.Trainer(**kwargs))
        trainer.train()
        updates[accumulation] = torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before)])
    ratio = float(updates[2].norm() / updates[1].norm())
    assert ratio == pytest.approx(1.0, abs=1e-4), ratio
    torch.testing.assert_close(updates[2], updates[1], rtol=1e-3, atol=1e-6)


def test_hamu_trainer_accumulates_both_gradients_into_one_step_per_optimizer_step(tmp_path):
    """Accumulation 2 x 4 rows = one HAMU step on 8 rows (retain and forget), max_steps steps in all."""
    retain, forget = _Rows(n=16, seed=1), _Rows(n=16, seed=2)
    updates, counts = {}, {}
    for accumulation in (1, 2):
        model = _model()
        before = [p.detach().clone() for p in model.parameters()]
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / str(accumulation)), max_steps=2, per_device_train_batch_size=8 // accumulation,
            per_device_eval_batch_size=8 // accumulation, gradient_accumulation_steps=accumulation,
            learning_rate=0.5, lr_scheduler_type="constant", report_to=[], save_strategy="no", use_cpu=True,
            logging_strategy="no", disable_tqdm=True, seed=0, dataloader_drop_last=True)
        trainer = hamu_trainer(forget, hamu={"bound": 0.5}, model=model, args=args, train_dataset=retain)
        trainer.train()
        counts[accumulation] = len(trainer.hamu_logs)
        updates[accumulation] = torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before)])
    assert counts == {1: 2, 2: 2}
    assert float(updates[2].norm() / updates[1].norm()) == pytest.approx(1.0, abs=1e-4)
    torch.testing.assert_close(updates[2], updates[1], rtol=1e-3, atol=1e-6)


def test_hamu_trainer_follows_the_learning_rate_schedule(tmp_path):
    retain, forget = _Rows(n=16, seed=1), _Rows(n=8, seed=2)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=4, learning_rate=0.4,
        lr_scheduler_type="linear", warmup_steps=2, report_to=[], save_strategy="no", use_cpu=True,
        logging_strategy="no", disable_tqdm=True, seed=0)
    trainer = hamu_trainer(forget, hamu={"bound": 0.5}, model=_model(), args=args, train_dataset=retain)
    trainer.train()
    # linear warm-up over 2 steps then linear decay to 0 at step 4: 0 (skipped), 0.2, 0.4, 0.2
    assert trainer.hamu_lrs == pytest.approx([0.2, 0.4, 0.2])
    assert len(trainer.hamu_logs) == 3 and trainer.hamu.lr == pytest.approx(0.2)


def test_llr_callback_resumes_from_a_checkpoint_as_if_never_interrupted(tmp_path):
    """4 steps straight vs 2 steps, a checkpoint, and a fresh Trainer resuming to 4: the same weights."""
    def trainer_for(out, model, steps=4):
        args = transformers.TrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=4,
                                              learning_rate=1e-3, report_to=[], save_strategy="steps", save_steps=2,
                                              use_cpu=True, logging_strategy="no", disable_tqdm=True, seed=0)
        callback = LLRCallback(every=2, ramp_steps=1, active_fraction=1.0, min_eigs=16, r_min=1.0, r_max=3.0)
        return transformers.Trainer(model=model, args=args, train_dataset=_Rows(), callbacks=[callback],
                                    optimizers=(llr_optimizer(model, lr=1e-3), None)), callback

    straight_model = _model()
    straight, cb_straight = trainer_for(tmp_path / "a", straight_model)
    straight.train()
    assert (tmp_path / "a" / "checkpoint-2" / "llr_state.json").is_file()

    resumed_model = _model()
    resumed, cb_resumed = trainer_for(tmp_path / "a", resumed_model)
    resumed.train(resume_from_checkpoint=str(tmp_path / "a" / "checkpoint-2"))
    diff = max(float((a - b).abs().max()) for a, b in zip(straight_model.parameters(), resumed_model.parameters()))
    assert diff == 0.0
    assert cb_resumed.llr.multipliers == cb_straight.llr.multipliers
    assert cb_resumed.llr.history.steps == cb_straight.llr.history.steps

    (tmp_path / "a" / "checkpoint-2" / "llr_state.json").unlink()
    again, _ = trainer_for(tmp_path / "a", _model())
    with pytest.raises(FileNotFoundError, match="llr_state.json"):
        again.train(resume_from_checkpoint=str(tmp_path / "a" / "checkpoint-2"))


def test_the_methods_quantities_reach_the_trainers_logs(tmp_path):
    from icml26.papers.curvature import CurvatureLoss

    def logged(trainer):
        trainer.train()
        return [h for h in trainer.state.log_history if "loss" in h]

    args = dict(max_steps=2, per_device_train_batch_size=4, learning_rate=0.1, report_to=[], save_strategy="no",
                use_cpu=True, logging_strategy="steps", logging_steps=1, disable_tqdm=True, seed=0)
    curv = curvature_trainer(CurvatureLoss(layers=(1,), weight=1.0), model=_model(), train_dataset=_Rows(),
                             args=transformers.TrainingArguments(output_dir=str(tmp_path / "c"), **args))
    rows = logged(curv)
    assert len(rows) == 2 and all({"curvature_lm_loss", "curvature_regularizer"} <= set(r) for r in rows)
    hamu = hamu_trainer(_Rows(n=8, seed=2), hamu={"bound": 0.5}, model=_model(), train_dataset=_Rows(seed=1),
                        args=transformers.TrainingArguments(output_dir=str(tmp_path / "h"), **args))
    rows = logged(hamu)
    assert len(rows) == 2 and all({"hamu_hardness", "hamu_step_norm", "hamu_lr", "hamu_forget_loss"} <= set(r)
                                  for r in rows)
    assert rows[-1]["hamu_step_norm"] == pytest.approx(hamu.hamu_logs[-1].step_norm)


def test_llr_multipliers_reach_the_trainers_logs(tmp_path):
    model = _model()
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=4,
                                          learning_rate=1e-3, report_to=[], save_strategy="no", use_cpu=True,
                                          logging_strategy="steps", logging_steps=2, disable_tqdm=True, seed=0)
    callback = LLRCallback(every=2, ramp_steps=0, active_fraction=1.0, min_eigs=16, r_min=1.0, r_max=3.0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_Rows(), callbacks=[callback],
                                   optimizers=(llr_optimizer(model, lr=1e-3), None))
    trainer.train()
    rows = [h for h in trainer.state.log_history if "loss" in h]
    assert len(rows) == 2 and all({"llr_multiplier_min", "llr_multiplier_max", "llr_alpha_mean"} <= set(r) for r in rows)
    assert rows[-1]["llr_multiplier_max"] == pytest.approx(max(callback.llr.multipliers.values()))


class _Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    def forward(self, x, labels=None):
        logits = self.net(x)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = torch.nn.functional.cross_entropy(logits, labels)
        return out


def _lmcleaner_setup(tmp_path, accumulation=2, **overrides):
    from icml26.papers.lmcleaner import SupervisedProblem

    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(24, 5, generator=g), torch.randint(0, 3, (24,), generator=g)
    rows = [{"x": x[i], "labels": y[i], "sample_id": i} for i in range(24)]
    model = _Classifier()
    settings = dict(output_dir=str(tmp_path), max_steps=6, per_device_train_batch_size=4 // accumulation,
                    gradient_accumulation_steps=accumulation, learning_rate=0.5, optim="sgd",
                    lr_scheduler_type="linear", max_grad_norm=0.0, report_to=[], save_strategy="no", use_cpu=True,
                    logging_strategy="no", disable_tqdm=True, seed=0, dataloader_drop_last=True)
    settings.update(overrides)
    problem = SupervisedProblem(model, lambda out, t: torch.nn.functional.cross_entropy(out["logits"], t,
                                                                                          reduction="none"), x, y)
    return model, rows, transformers.TrainingArguments(**settings), problem


@pytest.mark.parametrize("accumulation", [1, 2])
def test_lmcleaner_trainer_records_plain_sgd_steps_that_replay_exactly(tmp_path, accumulation):
    """Replaying SGD on the recorded (ids, η) from θ[0] through the problem's own objective gives the
    Trainer's final parameters: the recorder saw every step, the union of micro-batches, the scheduled rate."""
    from icml26.integrations.hf import lmcleaner_trainer

    model, rows, args, problem = _lmcleaner_setup(tmp_path, accumulation)
    theta0 = problem.flat_params().clone()
    trainer = lmcleaner_trainer(model=model, args=args, train_dataset=rows)
    trainer.train()
    recorder = trainer.recorder
    assert recorder.num_steps == trainer.state.global_step == 6
    assert all(len(recorder.batch_ids(s)) == 4 for s in range(6))
    lrs = [recorder.lr(s) for s in range(6)]
    assert lrs == pytest.approx([0.5 * (1 - s / 6) for s in range(6)])  # the linear schedule, step by step
    theta = theta0
    for s in range(6):
        theta = problem.sgd_step(theta, recorder.batch_ids(s), recorder.lr(s))
    torch.testing.assert_close(theta, problem.flat_params(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(recorder.params_at(0), theta0, rtol=1e-5, atol=1e-6)


def test_lmcleaner_trainer_correction_equals_a_hand_recorded_loop(tmp_path):
    """The same batches and rates recorded by hand give the same LMCleaner correction."""
    from icml26.integrations.hf import lmcleaner_trainer
    from icml26.papers.lmcleaner import TrajectoryRecorder, lmcleaner_unlearn, make_hvp

    model, rows, args, problem = _lmcleaner_setup(tmp_path, accumulation=1)
    theta0 = problem.flat_params().clone()
    trainer = lmcleaner_trainer(model=model, args=args, train_dataset=rows)
    trainer.train()
    forget = trainer.recorder.batch_ids(2)[:1]
    ours = lmcleaner_unlearn(problem, trainer.recorder, trainer.recorder.current_params(), forget,
                             trainer.recorder.num_steps, window=3, hvp=make_hvp(problem))

    hand_model, _, _, _ = _lmcleaner_setup(tmp_path / "hand")
    hand_problem = dataclasses.replace(problem, model=hand_model)
    hand_problem.set_flat_params(theta0)
    sgd = torch.optim.SGD(hand_model.parameters(), lr=0.5)
    hand = TrajectoryRecorder(hand_model, sgd)
    for s in range(6):
        ids = trainer.recorder.batch_ids(s)
        for group in sgd.param_groups:
            group["lr"] = trainer.recorder.lr(s)
        with hand.step(ids):
            sgd.zero_grad()
            loss = torch.nn.functional.cross_entropy(hand_model(problem.inputs[ids])["logits"], problem.targets[ids])
            loss.backward()
            sgd.step()
    theirs = lmcleaner_unlearn(hand_problem, hand, hand.current_params(), forget, hand.num_steps, window=3,
                               hvp=make_hvp(hand_problem))
    torch.testing.assert_close(ours.params, theirs.params, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(ours.params, trainer.recorder.current_params())  # the correction moved θ


@pytest.mark.parametrize("overrides, match", [
    ({"optim": "adamw_torch"}, "optim='sgd'"),
    ({"max_grad_norm": 1.0}, "max_grad_norm"),
    ({"weight_decay": 0.1}, "weight decays"),
])
def test_lmcleaner_trainer_refuses_runs_its_propagator_does_not_describe(tmp_path, overrides, match):
    from icml26.integrations.hf import lmcleaner_trainer

    model, rows, args, _ = _lmcleaner_setup(tmp_path, accumulation=1, **overrides)
    with pytest.raises(ValueError, match=match):
        lmcleaner_trainer(model=model, args=args, train_dataset=rows).train()


def test_lmcleaner_trainer_names_a_missing_id_column(tmp_path):
    from icml26.integrations.hf import lmcleaner_trainer

    model, rows, args, _ = _lmcleaner_setup(tmp_path, accumulation=1)
    rows = [{k: v for k, v in row.items() if k != "sample_id"} for row in rows]
    with pytest.raises(ValueError, match="'sample_id'"):
        lmcleaner_trainer(model=model, args=args, train_dataset=rows).train()
