"""InstEmb: an LM turned into an instruction-following encoder with look-ahead tokens.

Gao et al., "Instruction-Following Embeddings through Glimpses of the Future", ICML 2026
(earlier version: OpenReview SeqQdBV6YP). No code is public; every default below that the
paper does not give is ours and marked so.

:class:`InstEmbModel` wraps a Hugging Face model and runs three passes per training batch:

1. the **student** (trainable) on ``[instruction + input] <eos> [LA_1 … LA_K]``: the ``LA_k``
   are K learnable look-ahead vectors, fed through ``inputs_embeds`` right after each row's
   ``<eos>`` (padding, attention mask and positions handled per row);
2. the **teacher**, a frozen copy of the initial model (self-distillation), on
   ``[instruction + input] <eos> [gold output]``;
3. the **answer encoder** (the student itself) on ``[output] <eos>``.

Loss (:meth:`InstEmbModel.loss`, computed by :func:`~icml26.papers.instemb.losses.instemb_loss`;
the prompts and their token rows are built in :mod:`~icml26.papers.instemb.prompting`):
``L = L_con + λ · L_dist`` with

* ``L_con``: :func:`~icml26.papers.instemb.losses.info_nce` on the student's ``h_eos`` with
  in-batch negatives, averaged over the positive views (a dropout pass of the student, the
  teacher's ``h_eos``, the answer embedding);
* ``L_dist``: :func:`~icml26.papers.instemb.losses.distill_loss` between the student's
  look-ahead states and the teacher's states over the gold output.

Inference (:meth:`InstEmbModel.encode`) is one forward pass with K extra positions; the
embedding is DAAP (:func:`~icml26.papers.instemb.pooling.daap_pool`) of ``h_eos`` and the
look-ahead states.

Two backbones, one class:

* a **decoder** (any ``*ForCausalLM``: the tiny Llama, SmolLM2, Qwen2 …): ``<eos>`` is the
  tokenizer's ``eos_token`` appended to the prompt; look-ahead tokens cannot change ``h_eos``
  (causal attention; tested);
* an **encoder** (a bidirectional ``BertModel`` such as all-MiniLM-L6-v2, or the shared
  :class:`~icml26.common.encoder.MiniLMEncoder`): the anchor is the ``[SEP]`` closing the
  prompt, the look-ahead tokens follow it, the teacher reads ``[CLS] prompt [SEP] output
  [SEP]``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from typing import Any, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.papers.instemb.data import Example
from icml26.papers.instemb.losses import InstEmbLoss, instemb_loss
from icml26.papers.instemb.pooling import daap_pool
from icml26.papers.instemb.prompting import anchor_id, chat_prompt, output_ids, prompt_ids, prompt_text
from icml26.papers.instemb.settings import POOLINGS, VIEWS, InstEmbOutput, InstEmbSettings

__all__ = ["InstEmbLoss", "InstEmbModel", "InstEmbOutput", "InstEmbSettings", "POOLINGS", "VIEWS"]

log = logging.getLogger(__name__)

@dataclasses.dataclass
class _Pass:
    hidden: Tensor  # (B, W, d) final-layer states
    offsets: Tensor  # (B,) column of each row's first token
    lengths: list[int]  # real tokens per row (look-ahead excluded)


def _positions_limit(config: Any) -> int | None:
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _has_adapters(backbone: nn.Module) -> bool:
    """A ``peft`` model whose adapters can be switched off (the base model is then the teacher)."""
    return hasattr(backbone, "disable_adapter") and hasattr(backbone, "peft_config")


def _with_lora(backbone: nn.Module, lora: Any) -> nn.Module:
    from icml26.common.extras import require

    peft = require("peft", "lora")
    config = lora if isinstance(lora, peft.LoraConfig) else peft.LoraConfig(**dict(lora))
    return peft.get_peft_model(backbone, config)


class InstEmbModel(nn.Module):
    """A Hugging Face model with K learnable look-ahead vectors, a frozen teacher and InstEmb's losses.

    Build it with :meth:`wrap`. The backbone is trained in place (pass a copy to keep the
    original); the teacher is a frozen deep copy made at wrap time (``.teacher()``), or, when the
    backbone trains through LoRA adapters (``wrap(..., lora=...)``), the backbone itself with its
    adapters disabled: no second copy of the weights.
    """

    def __init__(self, backbone: nn.Module, num_lookahead: int, *, tokenizer: Any = None,
                 settings: InstEmbSettings | None = None, with_teacher: bool = True,
                 kind: str = "auto", seed: int = 0) -> None:
        super().__init__()
        if isinstance(num_lookahead, bool) or not isinstance(num_lookahead, int) or num_lookahead < 0:
            raise ValueError(f"num_lookahead={num_lookahead!r} must be a non-negative integer (K >= 0)")
        if not isinstance(backbone, nn.Module) or not hasattr(backbone, "get_input_embeddings"):
            raise TypeError(f"backbone must be a Hugging Face PreTrainedModel, got {type(backbone).__name__}")
        settings = settings or InstEmbSettings()
        if not isinstance(settings, InstEmbSettings):
            raise TypeError("settings must be an InstEmbSettings")
        if kind == "auto":
            kind = "decoder" if getattr(backbone, "can_generate", lambda: False)() else "encoder"
        if kind not in ("decoder", "encoder"):
            raise ValueError(f"kind={kind!r} must be 'auto', 'decoder' or 'encoder'")
        if num_lookahead == 0 and settings.distill_weight > 0:
            raise ValueError("num_lookahead=0 leaves no look-ahead state to distill; set distill_weight=0 "
                             "(contrastive last-token training) or num_lookahead >= 1")
        if settings.distill == "kl" and backbone.get_output_embeddings() is None:
            raise ValueError(f"distill='kl' needs an LM head; {type(backbone).__name__} has none (use 'mse')")
        if num_lookahead == 0 and settings.pooling in ("daap", "lookahead"):
            settings = dataclasses.replace(settings, pooling="eos")
        self.backbone = backbone
        self.kind = kind
        self.tokenizer = tokenizer
        self.settings = settings
        self.num_lookahead = num_lookahead
        self.max_positions = _positions_limit(backbone.config)
        embed = backbone.get_input_embeddings().weight.detach()
        # Look-ahead vectors (ours): the mean input embedding plus noise at the embeddings'
        # per-coordinate spread, so each starts as a "typical" token.
        g = torch.Generator().manual_seed(check_int(seed, "seed", low=0))
        noise = torch.randn(num_lookahead, embed.shape[1], generator=g).to(embed)
        self.lookahead = nn.Parameter(embed.mean(0) + noise * embed.std(0))
        self.teacher_model: nn.Module | None = None
        self.teacher_shares_backbone = False
        if with_teacher and _has_adapters(backbone):
            self.teacher_shares_backbone = True  # the teacher is the backbone with its adapters disabled
        elif with_teacher:
            teacher = copy.deepcopy(backbone)
            teacher.requires_grad_(False)
            self.teacher_model = teacher.eval()

    # ------------------------------------------------------------------ persistence
    def get_extra_state(self) -> dict[str, Any]:
        """The settings that decide the embedding (pooling, DAAP weight …), K and the backbone kind, saved in
        the state dict so that loading it into a model built otherwise is refused (:meth:`set_extra_state`)."""
        return {"settings": dataclasses.asdict(self.settings), "num_lookahead": self.num_lookahead,
                "kind": self.kind}

    def set_extra_state(self, state: Any) -> None:
        mine = self.get_extra_state()
        if not isinstance(state, dict) or set(state) != set(mine):
            raise ValueError(f"the saved state {state!r} is not an InstEmbModel's; the weights come from another model")
        saved = {**state["settings"], "num_lookahead": state["num_lookahead"], "kind": state["kind"]}
        ours = {**mine["settings"], "num_lookahead": mine["num_lookahead"], "kind": mine["kind"]}
        for field, value in ours.items():
            theirs = saved.get(field)
            if (list(theirs) if isinstance(theirs, (list, tuple)) else theirs) != \
                    (list(value) if isinstance(value, (list, tuple)) else value):
                raise ValueError(f"the weights were saved by a model with {field}={theirs!r}, this one has "
                                 f"{field}={value!r}: build it with the saved settings (InstEmbModel.load does)")

    def save(self, path) -> Any:
        """Save backbone, tokenizer, look-ahead vectors and settings (:func:`~icml26.papers.instemb.persist.save_instemb`)."""
        from icml26.papers.instemb.persist import save_instemb

        return save_instemb(self, path)

    @classmethod
    def load(cls, path, **kwargs: Any) -> "InstEmbModel":
        """Reload a saved model (:func:`~icml26.papers.instemb.persist.load_instemb`)."""
        from icml26.papers.instemb.persist import load_instemb

        return load_instemb(path, **kwargs)

    def as_sentence_encoder(self, instruction: str | None, pooling: str | None = None) -> Any:
        """This model behind ``encode(sentences, **kwargs)`` with ``instruction`` fixed, for
        sentence-transformers-style and MTEB-style loops (:class:`~icml26.papers.instemb.persist.SentenceEncoder`)."""
        from icml26.papers.instemb.persist import SentenceEncoder

        return SentenceEncoder(self, instruction, pooling)

    # ------------------------------------------------------------------ construction
    @classmethod
    def wrap(cls, causal_lm: Any, num_lookahead: int = 4, *, tokenizer: Any = None, with_teacher: bool = True,
             train_last_blocks: int | None = None, kind: str = "auto", seed: int = 0, lora: Any = None,
             **settings: Any) -> "InstEmbModel":
        """Wrap a Hugging Face model (or the shared :class:`~icml26.common.encoder.MiniLMEncoder`).

        Args:
            causal_lm: a ``*ForCausalLM`` (decoder path) or a bidirectional ``BertModel`` / a
                ``MiniLMEncoder`` (encoder path; a ``MiniLMEncoder``'s model is copied, because
                it is shared process-wide).
            num_lookahead: K >= 0 look-ahead tokens (K = 0 with ``distill_weight=0``:
                contrastive last-token training).
            tokenizer: the backbone's tokenizer (needed by :meth:`encode` and :meth:`loss`).
            with_teacher: keep a frozen copy of the initial model as the teacher (needed by the
                ``"teacher"`` view and by distillation; ``False`` for an encode-only wrapper).
            train_last_blocks: ``None`` trains the whole backbone; ``n`` freezes all of it but
                its last ``n`` blocks and final norm (the look-ahead vectors always train).
            kind: ``"auto"`` (a model that can generate is a decoder), ``"decoder"``, ``"encoder"``.
            seed: seeds the look-ahead vectors' initialisation.
            lora: train the backbone through LoRA adapters (``peft``, the ``lora`` extra): a
                ``peft.LoraConfig`` or its keyword arguments (e.g. ``{"r": 8, "target_modules":
                ["q_proj", "v_proj"]}``). The base weights stay frozen, and the teacher is the same
                backbone run with its adapters disabled (no copy). Not with ``train_last_blocks``.
            **settings: fields of :class:`InstEmbSettings` (``tau``, ``distill_weight``, ``distill``,
                ``views``, ``daap_weight``, ``pooling`` …).
        """
        from icml26.common.encoder import MiniLMEncoder

        if isinstance(causal_lm, MiniLMEncoder):
            tokenizer = tokenizer if tokenizer is not None else causal_lm.tokenizer
            causal_lm = copy.deepcopy(causal_lm.model)
            kind = "encoder" if kind == "auto" else kind
        if lora is not None:
            if train_last_blocks is not None:
                raise ValueError("give lora= or train_last_blocks=, not both: LoRA freezes the base weights")
            if kind == "auto":  # decided on the plain model (a PeftModel wraps generate)
                kind = "decoder" if getattr(causal_lm, "can_generate", lambda: False)() else "encoder"
            causal_lm = _with_lora(causal_lm, lora)
        model = cls(causal_lm, num_lookahead, tokenizer=tokenizer, settings=InstEmbSettings(**settings),
                    with_teacher=with_teacher, kind=kind, seed=seed)
        if train_last_blocks is not None:
            model.freeze_backbone(train_last_blocks)
        return model

    def freeze_backbone(self, train_last_blocks: int) -> None:
        """Freeze the backbone except its last ``train_last_blocks`` blocks and final norm."""
        from icml26.common.hf import decoder_blocks

        blocks = decoder_blocks(self.backbone)
        if isinstance(train_last_blocks, bool) or not isinstance(train_last_blocks, int) \
                or not 0 <= train_last_blocks <= len(blocks):
            raise ValueError(f"train_last_blocks={train_last_blocks!r} must be an integer in 0..{len(blocks)}")
        self.backbone.requires_grad_(False)
        for block in list(blocks)[len(blocks) - train_last_blocks:]:
            block.requires_grad_(True)
        if train_last_blocks > 0:
            for name, module in self.backbone.base_model.named_children():
                if "norm" in name or name == "ln_f":
                    module.requires_grad_(True)

    def teacher(self) -> nn.Module:
        """The frozen teacher (a copy of the backbone at wrap time; with LoRA, the backbone itself, which
        is the teacher only inside :meth:`teacher_scope`)."""
        if self.teacher_shares_backbone:
            return self.backbone
        if self.teacher_model is None:
            raise ValueError("this InstEmbModel was wrapped with with_teacher=False; it has no teacher")
        return self.teacher_model

    @property
    def has_teacher(self) -> bool:
        return self.teacher_model is not None or self.teacher_shares_backbone

    @contextlib.contextmanager
    def teacher_scope(self) -> Iterator[nn.Module]:
        """``with model.teacher_scope() as teacher:`` the frozen teacher, in eval mode, without gradients (with
        LoRA: the backbone with its adapters disabled, its training mode restored afterwards)."""
        teacher = self.teacher()
        if not self.teacher_shares_backbone:
            with torch.no_grad():
                yield teacher
            return
        was_training = teacher.training
        teacher.eval()
        try:
            with torch.no_grad(), teacher.disable_adapter():
                yield teacher
        finally:
            teacher.train(was_training)

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The parameters training updates: the student's unfrozen ones and the look-ahead vectors."""
        return [p for n, p in self.named_parameters() if p.requires_grad and not n.startswith("teacher_model.")]

    def train(self, mode: bool = True) -> "InstEmbModel":
        super().train(mode)
        if self.teacher_model is not None:
            self.teacher_model.eval()  # the teacher never runs dropout
        return self

    # ------------------------------------------------------------------ tokenisation (prompting.py)
    def _anchor_id(self) -> int:
        return anchor_id(self.tokenizer, self.kind)

    def prompt(self, text: str, instruction: str | None) -> str:
        """The prompt string of ``text`` under ``instruction`` (``None``: the text alone)."""
        if self.settings.prompt_template == "chat":
            return chat_prompt(self.tokenizer, text, instruction)
        return prompt_text(self.settings.prompt_template, text, instruction)

    def _prompt_ids(self, prompt: str) -> list[int]:
        """Token ids of a prompt, ending with the anchor (``<eos>`` appended / the closing ``[SEP]``)."""
        return prompt_ids(self.tokenizer, self.kind, prompt)

    def _output_ids(self, output: str) -> list[int]:
        return output_ids(self.tokenizer, output)

    # ------------------------------------------------------------------ passes
    def _device(self) -> torch.device:
        return self.lookahead.device

    def _run(self, model: nn.Module, rows: Sequence[Sequence[int]], *, lookahead: bool,
             padding_side: str = "right", dropout: float = 0.0) -> _Pass:
        """Run ``model`` on token rows, look-ahead vectors appended after each row when asked."""
        if padding_side not in ("left", "right"):
            raise ValueError(f"padding_side={padding_side!r} must be 'left' or 'right'")
        K = self.num_lookahead if lookahead else 0
        lengths = [len(r) for r in rows]
        if min(lengths) < 1:
            raise ValueError("a row has no token")
        if self.max_positions is not None and max(lengths) + K > self.max_positions:
            raise ValueError(f"an input of {max(lengths)} tokens plus {K} look-ahead tokens exceeds the model's "
                             f"{self.max_positions} positions (max_position_embeddings); shorten the texts")
        device = self._device()
        B, W = len(rows), max(lengths) + K
        ids = torch.zeros(B, W, dtype=torch.long)
        la_slot = torch.full((B, W), -1, dtype=torch.long)
        mask = torch.zeros(B, W, dtype=torch.long)
        offsets = torch.tensor([W - n - K if padding_side == "left" else 0 for n in lengths])
        for i, row in enumerate(rows):
            o, n = int(offsets[i]), lengths[i]
            ids[i, o:o + n] = torch.as_tensor(list(row), dtype=torch.long)
            la_slot[i, o + n:o + n + K] = torch.arange(K)
            mask[i, o:o + n + K] = 1
        ids, la_slot, mask = ids.to(device), la_slot.to(device), mask.to(device)
        embeds = model.get_input_embeddings()(ids)
        if K > 0:
            la = self.lookahead.to(embeds.dtype)[la_slot.clamp_min(0)]
            embeds = torch.where((la_slot >= 0).unsqueeze(-1), la, embeds)
        if dropout > 0:
            embeds = F.dropout(embeds, p=dropout, training=True)
        # positions count from each row's first real token, so padding side does not matter
        positions = (mask.cumsum(-1) - 1).clamp_min(0)
        kwargs: dict[str, Any] = {"use_cache": False} if self.kind == "decoder" else {}
        body = (model.get_base_model() if _has_adapters(model) else model).base_model  # the transformer body
        out = body(inputs_embeds=embeds, attention_mask=mask, position_ids=positions, **kwargs)
        return _Pass(hidden=out.last_hidden_state, offsets=offsets.to(device), lengths=lengths)

    @staticmethod
    def _take(p: _Pass, index: Tensor) -> Tensor:
        """``p.hidden[b, offsets[b] + index[b, j]]``: ``index`` (B, J) → (B, J, d)."""
        cols = (p.offsets.unsqueeze(1) + index).clamp(0, p.hidden.shape[1] - 1)
        return p.hidden.gather(1, cols.unsqueeze(-1).expand(-1, -1, p.hidden.shape[-1]))

    def _anchors(self, p: _Pass, anchor_at: Sequence[int], K: int) -> tuple[Tensor, Tensor]:
        device = p.hidden.device
        at = torch.as_tensor(list(anchor_at), device=device).unsqueeze(1)
        h_eos = self._take(p, at)[:, 0]
        h_la = self._take(p, at + 1 + torch.arange(K, device=device).unsqueeze(0)) if K else \
            p.hidden.new_zeros(p.hidden.shape[0], 0, p.hidden.shape[-1])
        return h_eos, h_la

    def pool(self, h_eos: Tensor, h_la: Tensor, pooling: str, *, mean: Tensor | None = None) -> Tensor:
        """Unit-norm embedding from the anchors: ``daap``, ``eos``, ``lookahead`` or ``mean``."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} must be one of {', '.join(POOLINGS)}")
        if pooling in ("daap", "lookahead") and h_la.shape[1] == 0:
            raise ValueError(f"pooling={pooling!r} needs look-ahead tokens; this model has num_lookahead=0 "
                             "(use pooling='eos')")
        if pooling == "daap":
            return daap_pool(h_eos, h_la, self.settings.daap_weight, self.settings.daap_mode)
        if pooling == "lookahead":
            return F.normalize(h_la.mean(1), dim=-1)
        if pooling == "mean":
            if mean is None:
                raise ValueError("pooling='mean' needs the prompt tokens' mean")
            return F.normalize(mean, dim=-1)
        return F.normalize(h_eos, dim=-1)

    def _check_pooling(self, pooling: str | None) -> str:
        pooling = self.settings.pooling if pooling is None else pooling
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} must be one of {', '.join(POOLINGS)}")
        if pooling in ("daap", "lookahead") and self.num_lookahead == 0:
            raise ValueError(f"pooling={pooling!r} needs look-ahead tokens; this model has num_lookahead=0 "
                             "(use pooling='eos')")
        return pooling

    def embed_rows(self, rows: Sequence[Sequence[int]], pooling: str | None = None, *,
                   padding_side: str = "right") -> InstEmbOutput:
        """Anchors and embedding of token rows, each ending with its anchor token (differentiable)."""
        pooling = self._check_pooling(pooling)
        p = self._run(self.backbone, rows, lookahead=True, padding_side=padding_side)
        h_eos, h_la = self._anchors(p, [n - 1 for n in p.lengths], self.num_lookahead)
        mean = None
        if pooling == "mean":
            real = torch.zeros(p.hidden.shape[:2], device=p.hidden.device)
            for i, n in enumerate(p.lengths):
                real[i, int(p.offsets[i]):int(p.offsets[i]) + n] = 1
            mean = (p.hidden * real.unsqueeze(-1).to(p.hidden.dtype)).sum(1) / real.sum(1, keepdim=True).to(p.hidden.dtype)
        return InstEmbOutput(h_eos=h_eos, h_la=h_la, embedding=self.pool(h_eos, h_la, pooling, mean=mean))

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> InstEmbOutput:
        """Anchors and default-pooling embedding of tokenised prompts.

        Args:
            input_ids: ``(B, T)`` ids, each row's real tokens ending with its anchor
                (``<eos>`` / ``[SEP]``).
            attention_mask: ``(B, T)``, 1 on real tokens (left or right padding); default all ones.
        """
        if input_ids.ndim != 2:
            raise ValueError(f"input_ids must be (B, T), got shape {tuple(input_ids.shape)}")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if attention_mask.shape != input_ids.shape:
            raise ValueError("attention_mask must have the shape of input_ids")
        rows = [ids[m.bool()].tolist() for ids, m in zip(input_ids.cpu(), attention_mask.cpu())]
        anchor = self._anchor_id()
        bad = [i for i, r in enumerate(rows) if not r or r[-1] != anchor]
        if bad:
            raise ValueError(f"rows {bad[:5]} of input_ids do not end with the anchor token {anchor} (eos for a decoder, "
                             "[SEP] for an encoder) on their last real position; tokenise with model.embed_rows / "
                             "encode, or append it (h_eos is read there)")
        return self.embed_rows(rows)

    @torch.no_grad()
    def encode(self, texts: Sequence[str] | str, instruction: str | Sequence[str] | None, pooling: str | None = None,
               *, batch_size: int = 64, padding_side: str = "right") -> Tensor:
        """Unit-norm embeddings of ``texts`` under ``instruction``, one forward pass each, no decoding.

        Args:
            texts: the inputs (one string or a sequence).
            instruction: one instruction for all texts, one per text, or ``None`` (the text alone).
            pooling: ``"daap"`` (DAAP of ``h_eos`` and the look-ahead states), ``"eos"`` (last
                token), ``"lookahead"`` (mean look-ahead state), ``"mean"`` (mean over the prompt's
                tokens); default: the model's ``settings.pooling``.
            batch_size: texts per forward pass (the result does not depend on it, up to float32 rounding: a
                batch pads to its own longest text, and some CPUs' kernels round other shapes differently).
            padding_side: ``"right"`` or ``"left"`` (the result does not depend on it).

        Returns:
            ``(n, d)`` float32 on CPU (``(n, 2d)`` for DAAP ``concat``), unit L2 norm.
        """
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be strings")
        if isinstance(instruction, str) or instruction is None:
            instructions = [instruction] * len(texts)
        else:
            instructions = list(instruction)
            if len(instructions) != len(texts):
                raise ValueError(f"{len(instructions)} instructions for {len(texts)} texts; give one or one per text")
        for ins in instructions:
            if ins is not None and (not isinstance(ins, str) or not ins.strip()):
                raise ValueError("instruction is empty; give a non-empty instruction (or None for the text alone)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} must be a positive integer")
        pooling = self._check_pooling(pooling)
        if not texts:
            return torch.zeros(0, self.lookahead.shape[-1])
        was_training = self.training
        self.eval()
        try:
            out = []
            for i in range(0, len(texts), batch_size):
                rows = [self._prompt_ids(self.prompt(t, ins))
                        for t, ins in zip(texts[i:i + batch_size], instructions[i:i + batch_size])]
                out.append(self.embed_rows(rows, pooling, padding_side=padding_side).embedding.float().cpu())
        finally:
            self.train(was_training)
        return torch.cat(out)

    # ------------------------------------------------------------------ training objective
    def loss(self, batch: Sequence[Example], return_parts: bool = False) -> Tensor | InstEmbLoss:
        """InstEmb's training loss on a batch of :class:`Example` (instruction, input, gold output).

        ``L = mean_v InfoNCE(h_eos, view_v) + λ · L_dist(h_LA, teacher output states)``.
        Returns the scalar ``L`` (``return_parts=True``: an :class:`InstEmbLoss`).
        """
        return instemb_loss(self, batch, return_parts)
