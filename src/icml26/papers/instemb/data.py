"""AttrWorld: synthetic texts whose similarity depends on the instruction.

Each text describes one object by four attributes (colour, shape, size, position; 5–6
values each), in a random clause order with filler words. Each instruction asks for one
attribute, in three paraphrases, and its gold output is ``"it is <value>"``. Under an
instruction about attribute ``a``, two texts are similar iff their ``a``-values match
(the construction of InBedder's Inst-STS and NYTClusters, brief §4.1; every detail here is
ours).

The whole language has a word-level vocabulary of 70 words (:func:`attrworld_tokenizer`), so a
tiny LM trains on it in seconds.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

__all__ = [
    "ATTRIBUTES",
    "AttrWorld",
    "Example",
    "INSTRUCTIONS",
    "attrworld_tokenizer",
    "attrworld_vocabulary",
]

#: attribute -> its values (each value word belongs to exactly one attribute).
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "colour": ("red", "blue", "green", "yellow", "black", "white"),
    "shape": ("circle", "square", "triangle", "star", "cube", "ring"),
    "size": ("tiny", "small", "medium", "large", "huge"),
    "position": ("left", "right", "top", "bottom", "middle", "corner"),
}

#: attribute -> its three instruction paraphrases.
INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    "colour": ("what colour is it", "tell me the hue", "which paint was used"),
    "shape": ("what shape is it", "tell me the form", "which outline does it have"),
    "size": ("what size is it", "tell me how big", "which scale does it have"),
    "position": ("what position is it", "tell me where it sits", "which place does it have"),
}

# Clause templates per attribute ("{v}" is the value).
_CLAUSES: dict[str, tuple[str, ...]] = {
    "colour": ("painted {v}", "in {v}"),
    "shape": ("shaped like a {v}", "a {v}"),
    "size": ("{v} sized", "of {v} size"),
    "position": ("at the {v}", "placed {v}"),
}
_INTROS = ("there is an object", "we see an object", "here is an object", "an object")
_FILLERS = ("very", "quite", "now", "here", "and")

SPECIALS = ("<pad>", "<eos>", "<unk>")


def attrworld_vocabulary() -> list[str]:
    """Every word of AttrWorld, specials first (``<pad>`` = 0, ``<eos>`` = 1, ``<unk>`` = 2)."""
    words: list[str] = []
    for phrase in (*[v for vs in ATTRIBUTES.values() for v in vs], *ATTRIBUTES,
                   *[p for ps in INSTRUCTIONS.values() for p in ps],
                   *[c for cs in _CLAUSES.values() for c in cs], *_INTROS, *_FILLERS, "it is"):
        for w in phrase.split():
            if w != "{v}" and w not in words:
                words.append(w)
    return [*SPECIALS, *words]


def attrworld_tokenizer():
    """A word-level ``PreTrainedTokenizerFast`` over :func:`attrworld_vocabulary` (needs the ``lm`` extra).

    Splits on whitespace; unknown words map to ``<unk>``; ``eos_token = "<eos>"``,
    ``pad_token = "<pad>"``; no special tokens are added by ``encode``.
    """
    from icml26.common.extras import require

    tokenizers = require("tokenizers", "lm")
    transformers = require("transformers", "lm")
    vocab = {w: i for i, w in enumerate(attrworld_vocabulary())}
    raw = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    raw.decoder = tokenizers.decoders.WordPiece(prefix="##", cleanup=False)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>", pad_token="<pad>",
                                                unk_token="<unk>")


@dataclasses.dataclass(frozen=True)
class Example:
    """One training example: an instruction, an input text and the gold output (answer)."""

    instruction: str
    text: str
    output: str

    def __post_init__(self) -> None:
        for name in ("instruction", "text", "output"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Example.{name} must be a string, got {type(value).__name__}")
            if not value.strip():
                raise ValueError(f"Example.{name} is empty; every example needs a non-empty {name}")


@dataclasses.dataclass(frozen=True)
class AttrWorld:
    """A set of AttrWorld texts with their attribute values.

    Attributes:
        texts: the descriptions.
        values: ``{attribute: (n,) int array}``, the index of each text's value in
            :data:`ATTRIBUTES[attribute]`.
    """

    texts: tuple[str, ...]
    values: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.texts)

    @classmethod
    def sample(cls, n: int, rng: np.random.Generator, *, filler_prob: float = 0.3) -> "AttrWorld":
        """``n`` random texts: uniform values, random clause order and templates, random fillers.

        Args:
            n: number of texts (>= 1).
            rng: the NumPy generator every draw comes from.
            filler_prob: probability of a filler word before each clause, in [0, 1].
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n={n!r} must be a positive integer")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not 0.0 <= filler_prob <= 1.0:
            raise ValueError(f"filler_prob={filler_prob} must be in [0, 1]")
        names = list(ATTRIBUTES)
        values = {a: rng.integers(0, len(ATTRIBUTES[a]), size=int(n)) for a in names}
        texts = []
        for i in range(int(n)):
            words = [_INTROS[rng.integers(len(_INTROS))]]
            for j in rng.permutation(len(names)):
                a = names[j]
                if rng.random() < filler_prob:
                    words.append(_FILLERS[rng.integers(len(_FILLERS))])
                clause = _CLAUSES[a][rng.integers(len(_CLAUSES[a]))]
                words.append(clause.format(v=ATTRIBUTES[a][values[a][i]]))
            texts.append(" ".join(words))
        return cls(texts=tuple(texts), values=values)

    def value_words(self, attribute: str) -> list[str]:
        """The value word of ``attribute`` for every text."""
        _check_attribute(attribute)
        return [ATTRIBUTES[attribute][k] for k in self.values[attribute]]

    def examples(self, attributes: Sequence[str] | None = None,
                 paraphrases: Sequence[int] = (0, 1, 2)) -> list["Example"]:
        """Every (text, instruction) pair as an :class:`Example`, gold output ``"it is <value>"``."""
        attributes = list(ATTRIBUTES) if attributes is None else list(attributes)
        out = []
        for a in attributes:
            _check_attribute(a)
            words = self.value_words(a)
            for p in paraphrases:
                if not 0 <= p < len(INSTRUCTIONS[a]):
                    raise ValueError(f"paraphrase index {p} must be in 0..{len(INSTRUCTIONS[a]) - 1}")
                out.extend(Example(INSTRUCTIONS[a][p], t, f"it is {w}") for t, w in zip(self.texts, words))
        return out


def _check_attribute(attribute: str) -> None:
    if attribute not in ATTRIBUTES:
        raise ValueError(f"attribute={attribute!r} must be one of {', '.join(ATTRIBUTES)}")
