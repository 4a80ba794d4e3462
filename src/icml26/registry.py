"""The static table of the nineteen papers.

Each :class:`PaperSpec` names a paper, where to read it, the pip extras it needs,
the one-sentence claim its reproduction checks, and whether its experiment
exists yet (``status``). Entry points are module paths, imported only on use,
so that listing papers never imports torch models, OpenSpiel or gymnasium.

Registration is strict: a malformed or duplicate key, an unknown extra or status,
or an ``implemented`` paper without its folder raises :class:`RegistryError` at
import time.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Literal

from icml26.common.extras import EXTRAS, extra_installed

__all__ = [
    "AREAS",
    "PAPERS",
    "PaperSpec",
    "RegistryError",
    "get",
    "keys",
    "list_papers",
    "register",
]

Status = Literal["planned", "implemented"]

AREAS: dict[str, str] = {
    "unlearning": "machine unlearning",
    "vlm": "vision-language models",
    "causal": "causal inference and stochastic dynamics",
    "lm": "language models",
    "games": "games and online learning",
    "pde": "neural PDE solvers",
    "ts": "time-series forecasting",
    "sleep": "sleep staging",
    "rl": "reinforcement learning",
    "quant": "quantization",
    "vision": "zero-shot vision",
}

_KEY = re.compile(r"^[a-z][a-z0-9_]{1,31}$")
_PAPERS_DIR = Path(__file__).resolve().parent / "papers"


class RegistryError(RuntimeError):
    """The paper table is inconsistent (raised at import time)."""


@dataclasses.dataclass(frozen=True)
class PaperSpec:
    """One paper of the package."""

    key: str
    """Short identifier, also the folder name under ``icml26/papers/``."""
    title: str
    """The paper's title (or its best-known name where the exact title is not public)."""
    url: str | None
    """arXiv or OpenReview page, where one is known."""
    code: str | None
    """The authors' code repository, where one is known."""
    area: str
    """Research area (a key of :data:`AREAS`)."""
    extras: tuple[str, ...]
    """pip extras the method and its reproduction need, beyond the core."""
    claim: str
    """One sentence: what the reproduction shows."""
    status: Status = "planned"
    """``planned`` until the experiment exists, then ``implemented``."""

    @property
    def api_module(self) -> str:
        """Dotted path of the paper's public API."""
        return f"icml26.papers.{self.key}"

    @property
    def experiment_module(self) -> str:
        """Dotted path of the paper's reproduction."""
        return f"{self.api_module}.experiment"

    @property
    def folder(self) -> Path:
        """Where the paper's code lives."""
        return _PAPERS_DIR / self.key

    @property
    def implemented(self) -> bool:
        return self.status == "implemented"

    def missing_extras(self) -> list[str]:
        """The extras of this paper that are not installed."""
        return [e for e in self.extras if not extra_installed(e)]

    def install_hint(self) -> str:
        """The pip line that installs what this paper needs."""
        extras = ",".join(self.extras)
        return f'pip install "icml26[{extras}]"' if extras else 'pip install icml26'

    def load_api(self) -> ModuleType:
        """Import the paper's public API."""
        return importlib.import_module(self.api_module)

    def load_experiment(self) -> ModuleType:
        """Import the paper's reproduction (``experiment.py``)."""
        return importlib.import_module(self.experiment_module)


PAPERS: dict[str, PaperSpec] = {}


def register(spec: PaperSpec) -> PaperSpec:
    """Add a spec to the table, failing loudly if it is malformed."""
    if not isinstance(spec.key, str) or not _KEY.match(spec.key):
        raise RegistryError(
            f"paper key {spec.key!r} is malformed: use 2-32 lowercase letters, digits or '_'"
        )
    if spec.key in PAPERS:
        raise RegistryError(f"paper key {spec.key!r} is registered twice")
    if spec.area not in AREAS:
        raise RegistryError(f"{spec.key}: unknown area {spec.area!r}; known: {', '.join(AREAS)}")
    for extra in spec.extras:
        if extra not in EXTRAS:
            raise RegistryError(f"{spec.key}: unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    if spec.status not in ("planned", "implemented"):
        raise RegistryError(f"{spec.key}: status {spec.status!r} must be 'planned' or 'implemented'")
    if not spec.title or not spec.claim:
        raise RegistryError(f"{spec.key}: title and claim must not be empty")
    if spec.implemented and not (spec.folder / "experiment.py").is_file():
        raise RegistryError(
            f"{spec.key} is marked implemented but {spec.folder / 'experiment.py'} is missing"
        )
    PAPERS[spec.key] = spec
    return spec


def get(key: str) -> PaperSpec:
    """The spec of ``key``; ``KeyError`` with the known keys otherwise."""
    try:
        return PAPERS[key]
    except KeyError:
        raise KeyError(f"unknown paper {key!r}; known papers: {', '.join(PAPERS)}") from None


def keys(*, status: Status | None = None) -> list[str]:
    """Paper keys in table order, optionally only those with ``status``."""
    return [k for k, s in PAPERS.items() if status is None or s.status == status]


def list_papers(area: str | None = None) -> list[PaperSpec]:
    """All specs in table order, optionally filtered by area."""
    if area is not None and area not in AREAS:
        raise ValueError(f"unknown area {area!r}; known areas: {', '.join(AREAS)}")
    return [s for s in PAPERS.values() if area is None or s.area == area]


# --------------------------------------------------------------------------
# The table, in the order of ../shared/seeds/icml2026-abstracts.txt.
# --------------------------------------------------------------------------
for _spec in (
    PaperSpec(
        key="lmcleaner",
        title="LMCleaner: certified online unlearning via truncated influence propagation",
        url=None,
        code="https://github.com/wzh4464/open-unlearning",
        area="unlearning",
        extras=(),
        claim=(
            "Removing a deleted batch by Hessian-vector propagation over a short window gets "
            "close to retraining (residual decays geometrically in the window) at a fraction "
            "of its compute, with utility and membership-inference AUC matching retraining."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="fox",
        title="Dismantling Pathological Shortcuts: A Causal Framework for Faithful LVLM Decoding (Fox)",
        url="https://arxiv.org/abs/2606.27596",
        code="https://github.com/Cc2021start/Fox",
        area="vlm",
        extras=("lm",),
        claim=(
            "Saturating the logits of attention heads whose visual-attention entropy flags them "
            "as risky mediators, with conflict-gated cooperative decoding, reduces object "
            "hallucination relative to plain and contrastive decoding."
        ),
    ),
    PaperSpec(
        key="ou_steady",
        title=(
            "One Intervention per Component is Enough: Towards Identifiability in Linear "
            "Stochastic Dynamics from Steady State"
        ),
        url="https://openreview.net/forum?id=vjI9tsebtP",
        code=None,
        area="causal",
        extras=(),
        claim=(
            "With one soft intervention per strongly connected component, an OU process's drift "
            "and diffusion are recovered from stationary moments up to a global scale, with "
            "error falling like N^-1/2 and far below an observational-only Lyapunov baseline."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="hici",
        title="HiCI: Hierarchical Construction-Integration attention for long-context modeling",
        url="https://arxiv.org/abs/2603.20843",
        code="https://github.com/zengxyyu/HiCI",
        area="lm",
        extras=("lm",),
        claim=(
            "Segment-local attention augmented with constructed local and integrated global "
            "summaries extends a pretrained LM's context at lower attention cost than full "
            "attention, with better long-range perplexity than shifted-sparse attention."
        ),
    ),
    PaperSpec(
        key="vimrag",
        title="Navigating Massive Visual Context in Retrieval-Augmented Generation via Multimodal Memory Graph (VimRAG)",
        url="https://arxiv.org/abs/2602.12735",
        code=None,
        area="vlm",
        extras=("lm",),
        claim=(
            "Keeping retrieved multimodal observations in a memory graph and pruning by "
            "graph-modulated energy keeps the density of critical observations high and "
            "answers more multi-hop queries than a ReAct-style full history at equal budget."
        ),
    ),
    PaperSpec(
        key="asym_perturb",
        title="Asymmetric Perturbation in Solving Bilinear Saddle-Point Optimization",
        url="https://arxiv.org/abs/2506.05747",
        code="https://github.com/CyberAgentAILab/asymmetrically-perturbed-gda",
        area="games",
        extras=("games",),
        claim=(
            "Perturbing only one player gives last-iterate linear convergence to an exact Nash "
            "equilibrium in matrix games and Kuhn poker, faster than symmetric perturbation "
            "with anchor updates, while fixed-mu symmetric perturbation plateaus."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="spard",
        title="SPARD: Safety-Projected Alternating optimization with Relevance-Diversity DPP data selection",
        url=None,
        code="https://github.com/shuhao02/SPARD",
        area="lm",
        extras=("lm",),
        claim=(
            "Alternating task and safety updates with a projection that removes the conflicting "
            "component, on data chosen by a relevance-diversity DPP, keeps safety while "
            "fine-tuning better than plain fine-tuning or random data selection."
        ),
    ),
    PaperSpec(
        key="revit",
        title="ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers",
        url="https://ge.in.tum.de/download/wei-icml2026-revit.pdf",
        code="https://github.com/tum-pbs/revit",
        area="pde",
        extras=(),
        claim=(
            "A ViT on locally canonicalized patch tokens is exactly C4-equivariant and, trained on "
            "orientation-biased Navier-Stokes data, predicts rotated test flows with at most half "
            "the error of a plain ViT."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="instemb",
        title="Instruction-Following Embeddings through Glimpses of the Future (InstEmb)",
        url="https://openreview.net/forum?id=SeqQdBV6YP",
        code=None,
        area="lm",
        extras=("lm",),
        claim=(
            "Appending learnable look-ahead tokens distilled from the teacher's future answer "
            "tokens gives embeddings that follow the instruction better than last-token or "
            "mean-pooled embeddings."
        ),
    ),
    PaperSpec(
        key="subspace_path",
        title="Probe-based SubspacePath Pruner: budgeted, scenario-specific attention-head pathways",
        url="https://openreview.net/forum?id=fvkCjFvWKf",
        code="https://github.com/GongZhiren/SubspacePathPruner",
        area="lm",
        extras=("lm",),
        claim=(
            "Selecting attention heads by probe-measured scenario subspaces under a budget keeps "
            "more task accuracy at a given sparsity than magnitude or random head pruning."
        ),
    ),
    PaperSpec(
        key="dmanet",
        title="Anti-Aliasing Matters: A Dynamic Network for Time Series Forecasting (DMANet)",
        url=None,
        code="https://github.com/HenryZhou2024/DMANet",
        area="ts",
        extras=("ts",),
        claim=(
            "An ideal low-pass before each stride-s downsampling removes aliasing exactly, and "
            "DMANet forecasts a chaotic multiscale series better than its no-filter ablation "
            "and DLinear."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="confsleepnet",
        title="ConfSleepNet: A Conflict-aware Evidential Framework for Reliable Sleep Stage Classification",
        url="https://arxiv.org/abs/2605.17021",
        code="https://github.com/By4te/ConfSleepNet",
        area="sleep",
        extras=(),
        claim=(
            "Conflict-aware fusion of per-view Dirichlet opinions keeps accuracy under EOG "
            "misalignment and flags corrupted epochs by their uncertainty better than "
            "Dempster's rule and the RCML average rule."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="curvature",
        title="Contextual curvature of LLM representation trajectories and next-token entropy",
        url="https://arxiv.org/abs/2604.23985",
        code=None,
        area="lm",
        extras=("lm",),
        claim=(
            "After training (not at initialization), the contextual curvature of hidden-state "
            "trajectories correlates with next-token entropy, straightening along the trajectory "
            "lowers entropy while a matched misaligned perturbation does not."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="stream_spr",
        title="Squeezing More from the Stream: Learning Representation Online for Streaming Reinforcement Learning",
        url="https://arxiv.org/abs/2602.09396",
        code="https://github.com/chandar-lab/stream-rep-rl",
        area="rl",
        extras=("rl",),
        claim=(
            "An SPR auxiliary loss with orthogonal gradient projections (orth, orth2) trains "
            "stably inside Stream Q(lambda) with no replay buffer and keeps the return of the "
            "plain agent; the effective rank of both is reported."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="robuq",
        title="RobuQ: Pushing DiTs to W1.58A2 via Robust Activation Quantization",
        url="https://arxiv.org/abs/2509.23582",
        code="https://github.com/racoonykc/RobuQ",
        area="quant",
        extras=(),
        claim=(
            "A Hadamard rotation before low-bit activation quantization, ternary weights and "
            "layer-wise mixed activation bit-widths keep a tiny diffusion transformer's samples "
            "closer to full precision than plain quantization-aware training."
        ),
    ),
    PaperSpec(
        key="zs_expand",
        title="Granularity-Aware Adaptive Classifier Expansion via Zero-Shot Learning",
        url=None,
        code=None,
        area="vision",
        extras=(),
        claim=(
            "Expanding a trained classifier to unseen classes from their descriptions, with "
            "granularity-aware calibration, raises harmonic seen/unseen accuracy over plain "
            "attribute-to-weight mapping."
        ),
    ),
    PaperSpec(
        key="llr",
        title="Heavy-Tail Guided Layerwise Learning Rates (LLR)",
        url="https://arxiv.org/abs/2605.22297",
        code="https://github.com/hed-ucas/Layer-wise-Learning-Rate",
        area="lm",
        extras=("lm",),
        claim=(
            "Mapping each layer's power-law exponent of its weight spectrum to a learning-rate "
            "multiplier lowers a tiny LLaMA's validation loss relative to a shuffled control and "
            "to uniform AdamW at a small base learning rate."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="robust_ntp",
        title="Next-Token Prediction and Regret Minimization",
        url="https://arxiv.org/abs/2603.28499",
        code=None,
        area="games",
        extras=(),
        claim=(
            "Robustifying a next-token model (fall back to Hedge once the induced learner's "
            "regret crosses a threshold) cuts adversarial regret from linear to sublinear while "
            "staying within a tiny total-variation distance of the original model."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="hamu",
        title="HAMU: hardness-aware multi-objective machine unlearning (HAMU-Q / HAMU-U)",
        url="https://arxiv.org/abs/2606.02119",
        code="https://github.com/aoi3142/HAMU",
        area="unlearning",
        extras=(),
        claim=(
            "Solving a per-step constrained problem (least retain harm subject to a guaranteed "
            "forget increase) gives a better retain/forget trade-off than GradDiff at matched "
            "forget accuracy, and flags when harm to retain data is unavoidable."
        ),
        status="implemented",
    ),
):
    register(_spec)
del _spec
