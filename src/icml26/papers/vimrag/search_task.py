"""Experiment (B): credit assignment on a two-hop search task, GGPO vs outcome-only GRPO.

Reproduction code (not part of the library API). ``N`` documents; a question names document
``a``, which holds the key to document ``b``; ``b`` is locked without that key and holds the
answer value. Every other document holds a distractor value. Actions: ``search(j)`` (``N``) and
``answer(k)`` (``K`` values; only values read so far can be given, as in extractive QA). Success
is 1 for the right value, else 0; at most ``horizon`` steps. The reward is the success less
``redundant_penalty`` per redundant search of a successful rollout (0 by default, so reward = success):

    r = 1[right answer] · max(0, 1 − c · #{searches not on P_ans})

A failed rollout has no ``P_ans`` (every search of it would count) and keeps reward 0: penalising its
searches taught the policy to answer at once, before finding anything (a pilot). GGPO's mask reads the
success (its ``1[r=1]`` is the outcome), the advantages the reward.

Each step creates a node of the rollout's memory graph. ``search(b)`` with the key builds on the
node that revealed the key, an answer on the node that revealed its value; every other step
builds on the root. ``P_ans`` is the answer node and its ancestors; ``R_val`` the steps that
first surfaced gold evidence (the key, or the answer). Redundant searches are searches not on
``P_ans``.

The policy is log-linear: a softmax over actions of ``W φ(s)``, ``φ`` a one-hot hashing of the
state's tokens (the question's document, the key and value found, the stage, the step, the
documents searched) into ``features`` buckets. The environment runs all ``questions × G``
rollouts of an iteration as one batch.
"""

from __future__ import annotations

import dataclasses
import hashlib

import torch

from icml26.papers.vimrag.ggpo import ggpo_loss, ggpo_mask_from_membership, grpo_advantages

__all__ = ["Rollouts", "SearchTask", "TrainCurve", "penalised_reward", "train"]


def _bucket(token: tuple, size: int) -> int:
    return int.from_bytes(hashlib.blake2b(repr(token).encode(), digest_size=8).digest(), "little") % size


@dataclasses.dataclass(frozen=True)
class SearchTask:
    """The environment's sizes and its reward's redundant-search penalty."""

    documents: int = 12
    values: int = 12
    horizon: int = 6
    features: int = 256
    redundant_penalty: float = 0.0
    """``c``: a successful rollout's reward is ``max(0, 1 − c·k)`` for ``k`` searches off its ``P_ans``."""

    def __post_init__(self) -> None:
        for name in ("documents", "values", "horizon", "features"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (2 if name in ("documents", "values") else 1):
                raise ValueError(f"{name}={v!r} must be an integer >= {2 if name in ('documents', 'values') else 1}")
        c = self.redundant_penalty
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 <= c < float("inf"):
            raise ValueError(f"redundant_penalty={c!r} must be a finite number >= 0")

    @property
    def actions(self) -> int:
        return self.documents + self.values

    def tables(self) -> dict[str, torch.Tensor]:
        """One-hot bucket rows per token kind (``-1`` = none is row 0 where a kind can be absent)."""
        def onehots(kind: str, n: int, shift: int = 0) -> torch.Tensor:
            m = torch.zeros(n, self.features)
            for v in range(n):
                m[v, _bucket((kind, v - shift), self.features)] = 1.0
            return m

        return {"q": onehots("q", self.documents), "key": onehots("key", self.documents + 1, 1),
                "value": onehots("value", self.values + 1, 1), "stage": onehots("stage", 3),
                "t": onehots("t", self.horizon), "seen": onehots("seen", self.documents)}


@dataclasses.dataclass
class Rollouts:
    """One iteration's batch: ``(B, H)`` per-step arrays and ``(B,)`` per-rollout ones."""

    logprobs: torch.Tensor
    token_step: torch.Tensor
    reward: torch.Tensor
    """``(B,)``: ``success · max(0, 1 − redundant_penalty · redundant)`` (``success`` without a penalty)."""
    success: torch.Tensor
    """``(B,)``: 1 for the right answer, else 0."""
    on_path: torch.Tensor
    valuable: torch.Tensor
    searches: torch.Tensor
    redundant: torch.Tensor
    kind: torch.Tensor
    """``(B, H)``: 0 no step (the rollout ended), 1 search, 2 answer."""
    parent: torch.Tensor
    """``(B, H)``: the step each step builds on besides the root (``-1``: the root only)."""


def rollout(task: SearchTask, weights: torch.Tensor, tables: dict[str, torch.Tensor], questions: int, group: int,
            gen: torch.Generator) -> Rollouts:
    """``questions × group`` rollouts of the policy ``softmax(φ(s) @ weights)`` (weights ``(features, actions)``)."""
    N, K, H = task.documents, task.values, task.horizon
    B = questions * group
    rows = torch.arange(B)
    qa = torch.randint(N, (questions,), generator=gen)
    qb = (qa + torch.randint(1, N, (questions,), generator=gen)) % N
    qk = torch.randint(K, (questions,), generator=gen)
    a, b, answer = (x.repeat_interleave(group) for x in (qa, qb, qk))
    distractor = (answer[:, None] + torch.randint(1, K, (B, N), generator=gen)) % K
    key = torch.full((B,), -1)
    value = torch.full((B,), -1)
    key_step = torch.full((B,), -1)
    value_step = torch.full((B,), -1)
    searched = torch.zeros(B, N, dtype=torch.bool)
    readable = torch.zeros(B, K, dtype=torch.bool)
    alive = torch.ones(B, dtype=torch.bool)
    reward = torch.zeros(B)
    logp = torch.zeros(B, H)
    token_step = torch.full((B, H), -1)
    act_kind = torch.zeros(B, H, dtype=torch.long)  # 0 none, 1 search, 2 answer
    parent = torch.full((B, H), -1)
    valuable = torch.zeros(B, H, dtype=torch.bool)
    none = torch.full((B,), -1)
    for t in range(H):
        stage = (key >= 0).long() + (value >= 0).long()
        phi = (tables["q"][a] + tables["key"][key + 1] + tables["value"][value + 1] + tables["stage"][stage]
               + tables["t"][t] + searched.float() @ tables["seen"])
        logits = (phi @ weights).masked_fill(~torch.cat([torch.ones(B, N, dtype=torch.bool), readable], 1),
                                             float("-inf"))
        lp = torch.log_softmax(logits, -1)
        act = torch.multinomial(lp.detach().exp(), 1, generator=gen).squeeze(1)
        logp[:, t] = torch.where(alive, lp.gather(1, act[:, None]).squeeze(1), torch.zeros(B))
        token_step[:, t] = torch.where(alive, torch.full((B,), t), none)
        is_search = alive & (act < N)
        is_answer = alive & (act >= N)
        act_kind[:, t] = is_search.long() + 2 * is_answer.long()
        j = act.clamp(max=N - 1)
        hit_a = is_search & (j == a)
        hit_b = is_search & (j == b) & (key >= 0)
        new_key, new_value = hit_a & (key < 0), hit_b & (value < 0)
        valuable[:, t] = new_key | new_value  # R_val: first surfaced the key or the answer
        parent[:, t] = torch.where(hit_b, key_step, torch.where(is_answer, value_step, none))
        key_step = torch.where(new_key, torch.full((B,), t), key_step)
        key = torch.where(new_key, b, key)
        value_step = torch.where(new_value, torch.full((B,), t), value_step)
        value = torch.where(new_value, answer, value)
        searched[rows[is_search], j[is_search]] = True
        other = is_search & (j != a) & (j != b)
        readable[rows[other], distractor[rows, j][other]] = True
        readable[rows[hit_b], answer[hit_b]] = True
        reward = torch.where(is_answer & (act - N == answer), torch.ones(B), reward)
        alive = alive & ~is_answer
    # P_ans: walk back from the answer step through the parents
    steps = torch.arange(H).expand(B, H)
    cur = torch.where(act_kind == 2, steps, torch.full((B, H), -1)).max(1).values
    on_path = torch.zeros(B, H, dtype=torch.bool)
    for _ in range(H):
        ok = cur >= 0
        on_path[rows[ok], cur[ok]] = True
        cur = torch.where(ok, parent.gather(1, cur.clamp(min=0)[:, None]).squeeze(1), cur)
    search = act_kind == 1
    redundant = (search & ~on_path).sum(1).float()
    success = reward  # the loop's reward is the outcome; the penalty (if any) applies now that P_ans is known
    return Rollouts(logprobs=logp, token_step=token_step,
                    reward=penalised_reward(success, redundant, task.redundant_penalty), success=success,
                    on_path=on_path, valuable=valuable, searches=search.sum(1).float(), redundant=redundant,
                    kind=act_kind, parent=parent)


def penalised_reward(success: torch.Tensor, redundant: torch.Tensor, penalty: float) -> torch.Tensor:
    """``r = success · max(0, 1 − penalty · redundant)`` per rollout; ``success`` itself at ``penalty = 0`` (no
    arithmetic, so the unpenalised task is bit-identical to the one before the penalty existed)."""
    if penalty == 0:
        return success
    return success * (1.0 - penalty * redundant).clamp(min=0.0)


@dataclasses.dataclass
class TrainCurve:
    """Per-iteration means over the batch's rollouts."""

    success: list[float]
    redundant: list[float]
    searches: list[float]
    masked_share: list[float]
    reward: list[float] = dataclasses.field(default_factory=list)
    """The penalised return (equal to ``success`` without a penalty)."""
    steps: list[float] = dataclasses.field(default_factory=list)
    """Steps taken per rollout (searches and the answer, if any)."""


def train(task: SearchTask, method: str, *, iterations: int, questions: int, group: int, lr: float,
          gen: torch.Generator, clip: float = 0.2, reduction: str = "sequence") -> TrainCurve:
    """Train a zero-initialised policy with ``method`` = ``"ggpo"`` or ``"grpo"`` (Adam, one update per batch).

    ``reduction`` is :func:`ggpo_loss`'s: ``"sequence"`` divides each rollout by its kept steps,
    ``"generated"`` by all its steps (masked terms dropped, not renormalised); without a mask (GRPO) the
    two are the same loss. The advantages are the group-normalised rewards (``task.redundant_penalty``
    included); GGPO's mask reads the success.
    """
    if method not in ("ggpo", "grpo"):
        raise ValueError(f"method={method!r} must be 'ggpo' or 'grpo'")
    tables = task.tables()
    weights = torch.zeros(task.features, task.actions, requires_grad=True)
    opt = torch.optim.Adam([weights], lr=lr)
    curve = TrainCurve([], [], [], [])
    for _ in range(iterations):
        ro = rollout(task, weights, tables, questions, group, gen)
        adv = grpo_advantages(ro.reward.view(questions, group)).flatten()
        if method == "ggpo":
            mask = ggpo_mask_from_membership(ro.on_path, ro.valuable, ro.success)
        else:
            mask = torch.zeros_like(ro.on_path)
        loss = ggpo_loss(ro.logprobs, ro.logprobs.detach(), adv, ro.token_step, mask, clip, reduction=reduction)
        opt.zero_grad()
        loss.backward()
        opt.step()
        taken = ro.token_step >= 0
        curve.success.append(float(ro.success.mean()))
        curve.reward.append(float(ro.reward.mean()))
        curve.steps.append(float(taken.sum(1).float().mean()))
        curve.redundant.append(float(ro.redundant.mean()))
        curve.searches.append(float(ro.searches.mean()))
        curve.masked_share.append(float((mask & taken).sum() / taken.sum()))
    return curve
