"""ShapeScenes: tiny images of coloured shapes with a planted co-occurrence prior (the reproduction's data).

* 32×32 RGB images with 1–3 objects, each one of 8 shapes × 4 colours, one per quadrant.
* The prior: three anchor shapes ``A`` each have a partner ``B`` (circle→cross, square→ring,
  triangle→diamond); when an anchor is in a training image its partner is too with
  probability ``P(B|A) = 0.85`` (like fork→knife in COCO).
* A fraction of objects (20 %) is faint: small or low-contrast, so the visual evidence is
  sometimes weak and the language prior can win.
* Captions list the objects in a canonical order (by shape index, so an anchor is always
  named before its partner): "a red circle and a blue cross ." — "." ends the caption (EOS).
* POPE questions "is there a cross ?" → yes / no, with negatives drawn at random, by
  frequency (popular) or by co-occurrence with the present objects (adversarial), as POPE does.

The prompt puts a 4-token prefix before the image so that the probe's system keys exist:
``<s> look at : <image>×16 describe :`` (captions) or ``… is there a <shape> ?`` (questions).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

import numpy as np

from icml26.common.argcheck import check_int, check_real

__all__ = [
    "ANCHORS",
    "COLOURS",
    "PARTNER",
    "PREFIX",
    "SHAPES",
    "Scene",
    "SceneConfig",
    "ShapeVocab",
    "caption_tokens",
    "pope_questions",
    "render_scenes",
    "sample_adversarial_scenes",
    "sample_scenes",
]

SHAPES = ("circle", "square", "triangle", "cross", "ring", "diamond", "bar", "frame")
COLOURS = ("red", "green", "blue", "yellow")
ANCHORS = ("circle", "square", "triangle")
PARTNER = {"circle": "cross", "square": "ring", "triangle": "diamond"}
"""Anchor -> partner of the planted prior."""
PREFIX = ("<s>", "look", "at", ":")
"""The 4 tokens before the image (BOS + a "system" prompt)."""

_RGB = {"red": (0.92, 0.16, 0.14), "green": (0.18, 0.80, 0.22), "blue": (0.20, 0.35, 0.96),
        "yellow": (0.95, 0.88, 0.15)}
_BACKGROUND = 0.12
_QUADRANTS = ((8, 8), (8, 24), (24, 8), (24, 24))  # centres (row, col)


@dataclasses.dataclass(frozen=True)
class Scene:
    """One image: its objects ``(shape, colour, quadrant, size, faint)`` and a noise seed."""

    objects: tuple[tuple[str, str, int, int, bool], ...]
    seed: int

    @property
    def shapes(self) -> tuple[str, ...]:
        """The shapes present, in caption order."""
        return tuple(o[0] for o in self.objects)


@dataclasses.dataclass(frozen=True)
class SceneConfig:
    """How scenes are drawn."""

    p_partner: float = 0.85
    """P(B | A): the planted co-occurrence prior."""
    p_anchor: float = 0.5
    """Probability that a training image contains an anchor."""
    faint_fraction: float = 0.2
    """Fraction of objects that are faint (half small, half low-contrast)."""
    size_range: tuple[int, int] = (10, 13)
    """Side of a normal object (pixels)."""
    faint_size: tuple[int, int] = (6, 7)
    """Side of a small faint object."""
    faint_contrast: float = 0.35
    """Opacity of a low-contrast faint object."""
    noise: float = 0.03
    """Pixel noise std."""

    def __post_init__(self) -> None:
        for name in ("p_partner", "p_anchor", "faint_fraction", "faint_contrast"):
            check_real(getattr(self, name), name, low=0.0, high=1.0)
        check_real(self.noise, "noise", low=0.0)
        for name in ("size_range", "faint_size"):
            lo, hi = getattr(self, name)
            if not 2 <= lo <= hi <= 16:
                raise ValueError(f"{name}={getattr(self, name)} must satisfy 2 <= low <= high <= 16")


def _draw_object(rng: np.random.Generator, shape: str, cfg: SceneConfig) -> tuple[str, str, int, bool]:
    colour = COLOURS[rng.integers(len(COLOURS))]
    faint = bool(rng.random() < cfg.faint_fraction)
    if faint and rng.random() < 0.5:
        size = int(rng.integers(cfg.faint_size[0], cfg.faint_size[1] + 1))
        return shape, colour, size, True  # small (full contrast)
    size = int(rng.integers(cfg.size_range[0], cfg.size_range[1] + 1))
    return shape, colour, size, faint  # faint here: low contrast


def _scene(rng: np.random.Generator, shapes: Sequence[str], cfg: SceneConfig) -> Scene:
    quadrants = rng.permutation(4)[: len(shapes)]
    ordered = sorted(shapes, key=SHAPES.index)
    objects = []
    for shape, quadrant in zip(ordered, quadrants):
        s, colour, size, faint = _draw_object(rng, shape, cfg)
        objects.append((s, colour, int(quadrant), size, faint))
    return Scene(objects=tuple(objects), seed=int(rng.integers(2**31)))


def sample_scenes(n: int, rng: np.random.Generator, config: SceneConfig = SceneConfig()) -> list[Scene]:
    """``n`` training-distribution scenes (1–3 objects, the planted prior)."""
    n = check_int(n, "n", low=0)
    scenes = []
    for _ in range(n):
        count = int(rng.integers(1, 4))
        if rng.random() < config.p_anchor:
            anchor = ANCHORS[rng.integers(len(ANCHORS))]
            chosen = [anchor]
            if rng.random() < config.p_partner:
                chosen.append(PARTNER[anchor])
                count = max(count, 2)
            pool = [s for s in SHAPES if s not in ANCHORS and s != PARTNER[anchor]]
        else:
            chosen = []
            pool = [s for s in SHAPES if s not in ANCHORS]
        pool = [s for s in pool if s not in chosen]
        extra = rng.choice(len(pool), size=count - len(chosen), replace=False) if count > len(chosen) else []
        chosen += [pool[i] for i in extra]
        scenes.append(_scene(rng, chosen, config))
    return scenes


def sample_adversarial_scenes(n: int, rng: np.random.Generator, config: SceneConfig = SceneConfig()) -> list[Scene]:
    """``n`` evaluation scenes with an anchor ``A`` and **without** its partner ``B`` (1–3 objects)."""
    n = check_int(n, "n", low=0)
    scenes = []
    for _ in range(n):
        anchor = ANCHORS[rng.integers(len(ANCHORS))]
        pool = [s for s in SHAPES if s not in ANCHORS and s != PARTNER[anchor]]
        count = int(rng.integers(1, 4))
        extra = rng.choice(len(pool), size=count - 1, replace=False)
        scenes.append(_scene(rng, [anchor] + [pool[i] for i in extra], config))
    return scenes


def _mask(shape: str, size: int, centre: tuple[float, float], grid: np.ndarray) -> np.ndarray:
    """Coverage in [0, 1] of ``shape`` on a supersampled pixel grid."""
    r, c = grid
    v = (r - centre[0]) / (size / 2)
    u = (c - centre[1]) / (size / 2)
    au, av = np.abs(u), np.abs(v)
    if shape == "circle":
        inside = u * u + v * v <= 1
    elif shape == "ring":
        inside = (u * u + v * v <= 1) & (u * u + v * v >= 0.45**2)
    elif shape == "square":
        inside = (au <= 0.85) & (av <= 0.85)
    elif shape == "frame":
        inside = (au <= 0.95) & (av <= 0.95) & ~((au <= 0.5) & (av <= 0.5))
    elif shape == "triangle":
        inside = (v >= -0.9) & (v <= 0.9) & (au <= (v + 0.9) / 1.8)
    elif shape == "diamond":
        inside = au + av <= 1
    elif shape == "cross":
        inside = ((au <= 0.3) & (av <= 1)) | ((av <= 0.3) & (au <= 1))
    elif shape == "bar":
        inside = (au <= 1) & (av <= 0.35)
    else:
        raise ValueError(f"unknown shape {shape!r}; shapes are {SHAPES}")
    return inside.astype(np.float32)


def render_scenes(scenes: Iterable[Scene], config: SceneConfig = SceneConfig(), size: int = 32,
                  supersample: int = 4) -> np.ndarray:
    """Images ``(N, 3, size, size)`` float32 in [0, 1] (anti-aliased by ``supersample``)."""
    scenes = list(scenes)
    fine = size * supersample
    coords = (np.arange(fine) + 0.5) / supersample
    grid = np.meshgrid(coords, coords, indexing="ij")
    out = np.empty((len(scenes), 3, size, size), dtype=np.float32)
    for i, scene in enumerate(scenes):
        rng = np.random.default_rng(scene.seed)
        image = np.full((3, fine, fine), _BACKGROUND, dtype=np.float32)
        for shape, colour, quadrant, side, faint in scene.objects:
            jitter = rng.integers(-2, 3, size=2)
            centre = (_QUADRANTS[quadrant][0] + jitter[0], _QUADRANTS[quadrant][1] + jitter[1])
            cover = _mask(shape, side, centre, grid)
            opacity = config.faint_contrast if faint and side >= config.size_range[0] else 1.0
            rgb = np.asarray(_RGB[colour], dtype=np.float32)[:, None, None]
            image = image * (1 - opacity * cover) + rgb * (opacity * cover)
        small = image.reshape(3, size, supersample, size, supersample).mean(axis=(2, 4))
        small += rng.normal(0.0, config.noise, small.shape).astype(np.float32)
        out[i] = np.clip(small, 0.0, 1.0)
    return out


def caption_tokens(scene: Scene) -> list[str]:
    """"a red circle and a blue cross ." as tokens (canonical order, "." ends it)."""
    words: list[str] = []
    for j, (shape, colour, *_rest) in enumerate(scene.objects):
        if j:
            words.append("and")
        words += ["a", colour, shape]
    return words + ["."]


def pope_questions(scenes: Sequence[Scene], kind: str, rng: np.random.Generator,
                   frequency: dict[str, float] | None = None,
                   cooccurrence: dict[tuple[str, str], float] | None = None) -> list[tuple[int, str, bool]]:
    """POPE questions ``(scene index, shape, answer)``: every present shape (yes) and as many absent ones (no).

    Negatives as POPE draws them: ``"random"`` (uniform over absent shapes), ``"popular"`` (the most
    frequent absent shapes by ``frequency``), ``"adversarial"`` (the absent shapes that co-occur most
    with the present ones, by ``cooccurrence[(present, absent)]``). Ties are broken at random.
    """
    if kind not in ("random", "popular", "adversarial"):
        raise ValueError(f"kind={kind!r} must be 'random', 'popular' or 'adversarial'")
    if kind == "popular" and frequency is None:
        raise ValueError("kind='popular' needs frequency (shape -> training frequency)")
    if kind == "adversarial" and cooccurrence is None:
        raise ValueError("kind='adversarial' needs cooccurrence ((present, absent) -> training count)")
    out = []
    for i, scene in enumerate(scenes):
        present = list(scene.shapes)
        absent = [s for s in SHAPES if s not in present]
        tiebreak = rng.random(len(absent))
        if kind == "random":
            order = list(rng.permutation(len(absent)))
        elif kind == "popular":
            order = sorted(range(len(absent)), key=lambda j: (-frequency[absent[j]], tiebreak[j]))
        else:
            order = sorted(range(len(absent)), key=lambda j: (
                -sum(cooccurrence.get((p, absent[j]), 0.0) for p in present), tiebreak[j]))
        negatives = [absent[j] for j in order[: len(present)]]
        out += [(i, s, True) for s in present] + [(i, s, False) for s in negatives]
    return out


class ShapeVocab:
    """The word-level vocabulary: specials, prompt words, colours, shapes (ids are positions)."""

    PAD, BOS, EOS, IMAGE = "<pad>", "<s>", ".", "<image>"

    def __init__(self) -> None:
        words = [self.PAD, self.BOS, self.EOS, self.IMAGE, "look", "at", ":", "describe", "is", "there", "a", "?",
                 "yes", "no", "and", *COLOURS, *SHAPES]
        self.words = tuple(words)
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, word: str) -> int:
        return self.index[word]

    def encode(self, words: Iterable[str]) -> list[int]:
        try:
            return [self.index[w] for w in words]
        except KeyError as exc:
            raise ValueError(f"word {exc.args[0]!r} is not in the ShapeScenes vocabulary") from None

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.words[int(i)] for i in ids]

    @property
    def shape_ids(self) -> dict[int, str]:
        return {self.index[s]: s for s in SHAPES}
