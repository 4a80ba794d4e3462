"""How InstEmb reads a prompt: the prompt string of a text under an instruction and the token rows
of prompts and outputs, each prompt ending with its anchor (``<eos>`` appended for a decoder, the
closing ``[SEP]`` for an encoder). :class:`~icml26.papers.instemb.model.InstEmbModel` calls these.
"""

from __future__ import annotations

from typing import Any

__all__ = ["anchor_id", "chat_prompt", "output_ids", "prompt_ids", "prompt_text"]


def _require_tokenizer(tokenizer: Any) -> Any:
    if tokenizer is None:
        raise ValueError("this InstEmbModel has no tokenizer; pass tokenizer= to InstEmbModel.wrap")
    return tokenizer


def anchor_id(tokenizer: Any, kind: str) -> int:
    """The anchor token's id: ``eos`` for a ``"decoder"``, ``sep`` for an ``"encoder"``."""
    tok = _require_tokenizer(tokenizer)
    anchor = tok.eos_token_id if kind == "decoder" else tok.sep_token_id
    if anchor is None:
        raise ValueError(f"the tokenizer has no {'eos' if kind == 'decoder' else 'sep'} token")
    return int(anchor)


def prompt_text(template: str, text: str, instruction: str | None) -> str:
    """The prompt string of ``text`` under ``instruction`` (``None``: the text alone)."""
    if instruction is None:
        return text
    return template.format(instruction=instruction, text=text)


def chat_prompt(tokenizer: Any, text: str, instruction: str | None) -> str:
    """One user turn ``"{instruction}\n{text}"`` (or the text alone) in the tokenizer's chat template, without
    its closing end-of-turn token: :func:`prompt_ids` appends ``eos``, which for a chat model (SmolLM2's
    ``<|im_end|>``) is that token, so the anchor ``h_eos`` sits where the turn ends."""
    tok = _require_tokenizer(tokenizer)
    if not getattr(tok, "chat_template", None):
        raise ValueError("prompt_template='chat' needs a tokenizer with a chat template (an instruct model's)")
    content = text if instruction is None else f"{instruction}\n{text}"
    rendered = tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                       add_generation_prompt=False).rstrip()
    eos = tok.eos_token
    if not eos or not rendered.endswith(eos):
        raise ValueError(f"the chat template does not end a turn with the eos token {eos!r}; use a plain "
                         "prompt_template instead")
    return rendered[:-len(eos)]


def prompt_ids(tokenizer: Any, kind: str, prompt: str) -> list[int]:
    """Token ids of a prompt, ending with the anchor (``<eos>`` appended / the closing ``[SEP]``)."""
    tok = _require_tokenizer(tokenizer)
    if kind == "decoder":
        return list(tok(prompt, add_special_tokens=False)["input_ids"]) + [anchor_id(tokenizer, kind)]
    ids = list(tok(prompt)["input_ids"])
    if not ids or ids[-1] != anchor_id(tokenizer, kind):
        raise ValueError("the encoder's tokenizer does not close a prompt with [SEP]")
    return ids


def output_ids(tokenizer: Any, output: str) -> list[int]:
    """Token ids of a gold output (no special tokens; at least one)."""
    ids = list(_require_tokenizer(tokenizer)(output, add_special_tokens=False)["input_ids"])
    if not ids:
        raise ValueError(f"the output {output!r} has no token")
    return ids
