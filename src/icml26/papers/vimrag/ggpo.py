"""Graph-Guided Policy Optimization (GGPO): outcome-reward RL with graph-pruned credit.

For each question a group of ``G`` rollouts gets binary rewards ``r`` and group-normalised
advantages ``Â = (r − mean)/std`` (GRPO). Before the policy-gradient step each step ``t``
(whose node is ``v_t``) gets a pruning mask (brief §1.4, formula as quoted second-hand)

    μ_t = 1[r=1]·1[v_t ∉ P_ans] + 1[r=0]·1[v_t ∈ R_val]

with ``P_ans`` the answer node and its ancestors and ``R_val`` the retrievals whose results
hold gold evidence: dead ends of a successful rollout are not reinforced and useful
retrievals of a failed one are not penalised. Masked steps get no gradient:
``L = Σ_t (1 − μ_t)·ℓ_t`` with ``ℓ_t`` the clipped GRPO (token ratio) or GSPO (sequence ratio)
objective of the step's tokens.

HF causal LMs plug in through per-token step spans: :func:`token_logprobs` gives
``log π(y_t | y_<t)`` for a batch of token sequences, :func:`token_steps` or
:func:`tokenize_trajectory` mark which tokens each step generated (``-1`` for prompt,
observation and padding tokens, which never enter the loss).
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Hashable, Literal, Sequence

import torch

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite

__all__ = [
    "ggpo_loss",
    "ggpo_mask",
    "ggpo_mask_from_membership",
    "grpo_advantages",
    "token_logprobs",
    "token_steps",
    "tokenize_trajectory",
]


def _binary_reward(reward: Any, name: str = "reward") -> int:
    if isinstance(reward, torch.Tensor):
        if reward.numel() != 1:
            raise ValueError(f"{name} must be one number, got a tensor of shape {tuple(reward.shape)}")
        reward = reward.item()
    if isinstance(reward, bool):
        return int(reward)
    try:
        value = float(reward)
    except (TypeError, ValueError):
        raise TypeError(f"{name}={reward!r} must be 0 or 1") from None
    if value not in (0.0, 1.0):
        raise ValueError(f"{name}={reward!r} must be binary (0 or 1): GGPO's mask is defined for outcome rewards; "
                         "threshold a graded reward first")
    return int(value)


def ggpo_mask(steps: Sequence[Hashable], reward: Any, answer_path: Collection[Hashable],
              valuable: Collection[Hashable]) -> torch.Tensor:
    """``μ``, one bool per step: ``True`` where the step gets no gradient.

    Args:
        steps: ``v_t``, the node each step created (e.g. the ids :func:`run_agent` records).
        reward: the rollout's binary reward ``r`` (0/1, ``bool`` or ``0.0``/``1.0``).
        answer_path: ``P_ans`` (e.g. ``graph.answer_path()``; empty for a rollout without an answer).
        valuable: ``R_val``, the retrieval nodes whose results contain gold evidence.

    Returns:
        ``(len(steps),)`` ``torch.bool`` (CPU).
    """
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise TypeError(f"steps must be a sequence of node ids, got {type(steps).__name__}")
    r = _binary_reward(reward)
    for name, s in (("answer_path", answer_path), ("valuable", valuable)):
        if isinstance(s, (str, bytes)) or not isinstance(s, Collection):
            raise TypeError(f"{name} must be a collection of node ids, got {type(s).__name__}")
    path, val = set(answer_path), set(valuable)
    # μ_t = 1[r=1]·1[v_t ∉ P_ans] + 1[r=0]·1[v_t ∈ R_val]
    mu = [(v not in path) if r == 1 else (v in val) for v in steps]
    return torch.tensor(mu, dtype=torch.bool)


def ggpo_mask_from_membership(on_path: Any, valuable: Any, rewards: Any) -> torch.Tensor:
    """``μ`` for a batch from membership flags: ``(B, S)`` bools, ``rewards`` ``(B,)`` in {0, 1}.

    ``on_path[b, t]``: step ``t`` of rollout ``b`` is on its ``P_ans``; ``valuable[b, t]``: it is
    in ``R_val``. Same formula as :func:`ggpo_mask`; tensors stay on their device.
    """
    on_path = as_tensor(on_path, "on_path", floating=False)
    valuable = as_tensor(valuable, "valuable", floating=False)
    rewards = as_tensor(rewards, "rewards")
    if on_path.dim() != 2 or valuable.shape != on_path.shape:
        raise ValueError(f"on_path and valuable must be (B, S) of one shape, got {tuple(on_path.shape)} and "
                         f"{tuple(valuable.shape)}")
    if rewards.shape != on_path.shape[:1]:
        raise ValueError(f"rewards must be (B,) = ({on_path.shape[0]},), got {tuple(rewards.shape)}")
    require_finite(rewards, "rewards")
    if not bool(((rewards == 0) | (rewards == 1)).all()):
        raise ValueError("rewards must be binary (0 or 1); threshold a graded reward first")
    for name, t in (("on_path", on_path), ("valuable", valuable)):
        if t.dtype != torch.bool and not bool(((t == 0) | (t == 1)).all()):
            raise ValueError(f"{name} must hold booleans (0/1)")
    success = rewards.bool().unsqueeze(1)
    return torch.where(success, ~on_path.bool(), valuable.bool())


def grpo_advantages(rewards: Any, *, eps: float = 1e-6, scale: bool = True) -> torch.Tensor:
    """Group-normalised advantages ``Â = (r − mean(r)) / (std(r) + eps)`` along the last axis.

    Args:
        rewards: ``(..., G)`` rewards of ``G >= 2`` rollouts per group (tensor keeps its device).
        eps: added to the (unbiased, as in TRL's ``GRPOTrainer``) standard deviation; a group of equal
            rewards gets zero advantages.
        scale: ``False`` skips the division (Dr. GRPO).

    Each group's advantages sum to 0. NaN or inf rewards are a ``ValueError``.
    """
    r = as_tensor(rewards, "rewards")
    if r.dim() == 0 or r.shape[-1] < 2:
        raise ValueError(f"rewards must be (..., G) with G >= 2 rollouts per group, got shape {tuple(r.shape)}")
    require_finite(r, "rewards")
    eps = check_real(eps, "eps", low=0.0)
    centred = r - r.mean(-1, keepdim=True)
    if not scale:
        return centred
    std = r.std(-1, keepdim=True)
    # a group of equal rewards has nothing to prefer: zero advantages, also at eps = 0 (not 0/0)
    return torch.where(std > 0, centred / (std + eps), torch.zeros_like(centred))


def ggpo_loss(logprobs: torch.Tensor, old_logprobs: Any, advantages: Any, token_step: Any, mask: Any,
              clip: float = 0.2, *, clip_high: float | None = None,
              ratio: Literal["token", "sequence"] = "token",
              reduction: Literal["sequence", "generated", "token", "sum"] = "sequence") -> torch.Tensor:
    """The clipped GRPO/GSPO surrogate over the unmasked steps' tokens (a loss to minimise).

    Args:
        logprobs: ``(B, T)`` ``log π_θ(y_t | y_<t)`` of the generated tokens (with grad), e.g.
            :func:`token_logprobs`.
        old_logprobs: ``(B, T)`` the same under the policy that sampled the rollouts (no grad).
        advantages: ``(B,)`` per rollout (e.g. :func:`grpo_advantages` flattened) or ``(B, T)``
            per token (token ratio only).
        token_step: ``(B, T)`` integer step index of each token; ``-1`` for tokens the policy did
            not generate (prompt, observations, padding).
        mask: ``(B, S)`` ``μ`` per step (bool or 0/1), ``S > max(token_step)``; ``True`` drops the
            step's tokens from the loss.
        clip: ``ε``; the ratio is clipped to ``[1 − ε, 1 + ε_high]``.
        clip_high: ``ε_high`` (default ``ε``; DAPO's clip-higher uses a larger one).
        ratio: ``"token"``: ``ρ_t = π/π_old`` per token (GRPO); ``"sequence"``: GSPO's
            ``s = exp(mean_t log(π/π_old))`` over each rollout's kept tokens.
        reduction: ``"sequence"`` (GRPO/GSPO: mean over rollouts of each rollout's mean over its
            kept tokens; rollouts with none are left out), ``"generated"`` (mean over rollouts of
            each rollout's kept-token sum divided by its *generated* tokens: masked terms are
            dropped, the rest keep GRPO's weights, as the method is described; equal to
            ``"sequence"`` without a mask), ``"token"`` (mean over every kept token, as DAPO) or
            ``"sum"``.

    Per token, ``ℓ_t = −min(ρ Â, clip(ρ) Â)``, counted where ``token_step >= 0`` and
    ``μ[token_step] = 0``; with every token dropped the loss is ``0`` (still differentiable).
    """
    if not isinstance(logprobs, torch.Tensor):
        raise TypeError(f"logprobs must be a torch.Tensor (with grad), got {type(logprobs).__name__}")
    if logprobs.dim() != 2 or not logprobs.is_floating_point():
        raise ValueError(f"logprobs must be a floating (B, T) tensor, got {logprobs.dtype} {tuple(logprobs.shape)}")
    device, dtype = logprobs.device, logprobs.dtype
    old = as_tensor(old_logprobs, "old_logprobs").to(device=device, dtype=dtype).detach()
    steps = as_tensor(token_step, "token_step", floating=False).to(device)
    mu = as_tensor(mask, "mask", floating=False).to(device)
    adv = as_tensor(advantages, "advantages").to(device=device, dtype=dtype).detach()
    B, T = logprobs.shape
    if old.shape != logprobs.shape:
        raise ValueError(f"old_logprobs must match logprobs {tuple(logprobs.shape)}, got {tuple(old.shape)}")
    if steps.shape != logprobs.shape or steps.is_floating_point():
        raise ValueError(f"token_step must be an integer (B, T) = {tuple(logprobs.shape)} tensor, got "
                         f"{steps.dtype} {tuple(steps.shape)}")
    generated = steps >= 0
    for name, values in (("logprobs", logprobs.detach()), ("old_logprobs", old)):
        at = values[generated]
        # log π <= 0 at every generated token (one test, one sync); NaN fails it too
        if not bool((at <= 1e-6).all()):
            if bool(torch.isnan(at).any()):
                raise ValueError(f"{name} is NaN at generated tokens; the policy's forward diverged or read NaN")
            raise ValueError(f"{name} has positive entries at generated tokens (max {float(at.max()):.3g}); pass "
                             "log-probabilities log π(y_t | y_<t) <= 0 (e.g. token_logprobs), not probabilities "
                             "or logits")
    if mu.dim() != 2 or mu.shape[0] != B:
        raise ValueError(f"mask must be (B, S) with B = {B}, got {tuple(mu.shape)}")
    if mu.dtype != torch.bool:
        if not bool(((mu == 0) | (mu == 1)).all()):
            raise ValueError("mask must hold booleans (0/1): μ_t = 1 drops step t")
        mu = mu.bool()
    if bool((steps < -1).any()) or (steps.numel() and int(steps.max()) >= mu.shape[1]):
        raise ValueError(f"token_step must be -1 or a step index below mask's S = {mu.shape[1]}")
    if adv.shape not in ((B,), (B, T)):
        raise ValueError(f"advantages must be (B,) = ({B},) or (B, T), got {tuple(adv.shape)}")
    if ratio == "sequence" and adv.shape != (B,):
        raise ValueError("ratio='sequence' (GSPO) needs one advantage per rollout: advantages of shape (B,)")
    require_finite(adv, "advantages")
    require_finite(old, "old_logprobs")
    eps_lo = check_real(clip, "clip", low=0.0)
    eps_hi = eps_lo if clip_high is None else check_real(clip_high, "clip_high", low=0.0)
    if ratio not in ("token", "sequence"):
        raise ValueError(f"ratio={ratio!r} must be 'token' (GRPO) or 'sequence' (GSPO)")
    if reduction not in ("sequence", "generated", "token", "sum"):
        raise ValueError(f"reduction={reduction!r} must be 'sequence', 'generated', 'token' or 'sum'")

    gathered = torch.gather(mu, 1, steps.clamp(min=0).long())
    keep = (steps >= 0) & ~gathered                                    # (B, T) tokens in the loss
    w = keep.to(dtype)
    n_kept = w.sum(1)                                                  # (B,)
    # masked tokens must not carry NaN/inf into the gradient: zero their log-ratio
    log_ratio = torch.where(keep, logprobs - old, torch.zeros_like(logprobs))
    if ratio == "token":
        rho = torch.exp(log_ratio)
        a = adv if adv.dim() == 2 else adv.unsqueeze(1)
    else:
        # GSPO: s_i = exp( (1/|y_i|) Σ_t log(π/π_old) ) over the kept tokens
        seq = (log_ratio * w).sum(1) / n_kept.clamp(min=1.0)
        rho = torch.exp(seq).unsqueeze(1).expand(B, T)
        a = adv.unsqueeze(1)
    # ℓ_t = −min(ρ Â, clip(ρ, 1−ε, 1+ε_high) Â)
    per_token = -torch.minimum(rho * a, rho.clamp(1.0 - eps_lo, 1.0 + eps_hi) * a)
    per_token = per_token * w
    if reduction == "sum":
        return per_token.sum()
    if reduction == "token":
        return per_token.sum() / w.sum().clamp(min=1.0)
    if reduction == "generated":
        # Σ_t (1 − μ_t) ℓ_t / |y_i|: the mask removes terms without re-weighting the others
        n_gen = generated.to(dtype).sum(1)
        has = n_gen > 0
        per_seq = per_token.sum(1) / n_gen.clamp(min=1.0)
        return (per_seq * has.to(dtype)).sum() / has.sum().clamp(min=1).to(dtype)
    has = n_kept > 0
    per_seq = per_token.sum(1) / n_kept.clamp(min=1.0)
    return (per_seq * has.to(dtype)).sum() / has.sum().clamp(min=1).to(dtype)


def token_logprobs(model: Callable[..., Any], input_ids: Any, attention_mask: Any | None = None) -> torch.Tensor:
    """``(B, T)`` log-probabilities ``log p(input_ids[:, t] | input_ids[:, :t])`` under a causal LM.

    ``model(input_ids=..., attention_mask=...)`` must return logits ``(B, T, V)`` or an object
    with ``.logits`` (any HF ``*ForCausalLM``). Position 0 has no prediction and gets ``0``; mark
    it ``-1`` in ``token_step``.
    """
    if not callable(model):
        raise TypeError(f"model must be a callable causal LM, got {type(model).__name__}")
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.is_floating_point():
        raise ValueError("input_ids must be an integer (B, T) torch.Tensor")
    kwargs = {"input_ids": input_ids}
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask
    out = model(**kwargs)
    logits = out.logits if hasattr(out, "logits") else out
    if not isinstance(logits, torch.Tensor) or logits.shape[:2] != input_ids.shape:
        raise ValueError("model must return logits of shape (B, T, V) for input_ids (B, T)")
    # log-softmax in at least float32 (half-precision logits are upcast; float64 stays float64)
    logp = torch.log_softmax(logits[:, :-1].to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
    picked = torch.gather(logp, 2, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return torch.cat([torch.zeros_like(picked[:, :1]), picked], dim=1)


def token_steps(spans: Sequence[Sequence[tuple[int, int]]], length: int) -> torch.Tensor:
    """``(B, length)`` step index per token from each rollout's step spans; ``-1`` elsewhere.

    ``spans[b][s] = (start, end)``: the half-open token range generated at step ``s`` of rollout
    ``b``. Overlapping or out-of-range spans are a ``ValueError``.
    """
    length = check_int(length, "length", low=1)
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Sequence):
        raise TypeError("spans must be a list (one per rollout) of lists of (start, end) pairs")
    out = torch.full((len(spans), length), -1, dtype=torch.long)
    for b, row in enumerate(spans):
        for s, span in enumerate(row):
            if not isinstance(span, (tuple, list)) or len(span) != 2:
                raise TypeError(f"spans[{b}][{s}] must be a (start, end) pair, got {span!r}")
            start = check_int(span[0], f"spans[{b}][{s}] start", low=0)
            end = check_int(span[1], f"spans[{b}][{s}] end", low=start, high=length)
            if bool((out[b, start:end] >= 0).any()):
                raise ValueError(f"spans[{b}][{s}] = {span} overlaps an earlier step's tokens")
            out[b, start:end] = s
    return out


def tokenize_trajectory(encode: Callable[[str], Sequence[int]],
                        segments: Sequence[tuple[str, int | None]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and their step indices for one rollout written as text segments.

    Args:
        encode: ``text -> token ids`` without special tokens, e.g.
            ``lambda s: tokenizer.encode(s, add_special_tokens=False)``.
        segments: ``(text, step)`` in order; ``step`` is the step index for text the policy
            generated and ``None`` for prompt and observation text.

    Returns:
        ``(input_ids, token_step)``, both ``(T,)`` long. Tokenising segments separately can
        differ from tokenising the joined text at the seams; generate and score with the same ids.
    """
    if not callable(encode):
        raise TypeError("encode must be a callable text -> token ids")
    ids: list[int] = []
    step_of: list[int] = []
    for i, seg in enumerate(segments):
        if not isinstance(seg, (tuple, list)) or len(seg) != 2 or not isinstance(seg[0], str):
            raise TypeError(f"segments[{i}] must be a (text, step or None) pair, got {seg!r}")
        step = -1 if seg[1] is None else check_int(seg[1], f"segments[{i}] step", low=0)
        toks = [check_int(t, f"token of segments[{i}]", low=0) for t in encode(seg[0])]
        ids.extend(toks)
        step_of.extend([step] * len(toks))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(step_of, dtype=torch.long)
