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

from icml26.common.extras import EXTRAS, extra_installed, install_hint

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
    def applies(self) -> str:
        """One line: the library call a user applies, and to what (``icml26 list``)."""
        from icml26.papers import APPLIES

        return APPLIES.get(self.key, "-")

    def usage_example(self) -> str | None:
        """The first runnable python block of the paper's README (the one ``make test`` executes)."""
        path = self.folder / "README.md"
        if not path.is_file():
            return None
        blocks = re.finditer(r"(<!--\s*not-run:[^>]*-->\s*\n)?```python\n(?P<code>.*?)```", path.read_text("utf-8"), re.S)
        return next((m["code"] for m in blocks if not m.group(1)), None)

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
        return install_hint(*self.extras) if self.extras else "pip install icml26"

    def load_api(self) -> ModuleType:
        """Import the paper's public API."""
        return importlib.import_module(self.api_module)

    def load_experiment(self) -> ModuleType:
        """Import the paper's reproduction (``experiment.py``)."""
        return importlib.import_module(self.experiment_module)

    def load_claims(self) -> dict:
        """The paper's declared checks ``{id: CheckSpec}`` (its ``claims.py``), without running anything.

        Empty for a planned paper.
        """
        if not (self.folder / "claims.py").is_file():
            return {}
        return dict(importlib.import_module(f"{self.api_module}.claims").CHECKS)

    def load_arms(self) -> dict:
        """The paper's declared arms ``{id: ArmSpec}`` (its ``claims.py`` ``ARMS``); empty if none."""
        if not (self.folder / "claims.py").is_file():
            return {}
        return dict(getattr(importlib.import_module(f"{self.api_module}.claims"), "ARMS", {}))

    def load_replication(self):
        """The paper's unit of replication (its ``claims.py`` ``REPLICATION``; default: a master seed)."""
        from icml26.contract import Replication

        if not (self.folder / "claims.py").is_file():
            return Replication()
        return getattr(importlib.import_module(f"{self.api_module}.claims"), "REPLICATION", None) or Replication()


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
            "On a tiny LLaVA trained with a planted co-occurrence prior, saturating the attention "
            "logits of the heads that a visual-entropy probe flags as risky, with conflict-gated "
            "fusion of the two streams, lowers object hallucination (CHAIR) below vanilla, VCD and "
            "SID greedy decoding without losing recall or POPE F1."
        ),
        status="implemented",
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
        extras=("lm", "lora"),
        claim=(
            "Extending a tiny pretrained Llama from 128 to 512 tokens with HiCI (segment-local "
            "attention plus learned local slots and an integrated global summary) retrieves the "
            "marked segment's topic about as well as LongLoRA S2-Attn and full fine-tuning, where "
            "chunked attention without slots cannot, at an attention cost that grows near-linearly "
            "with length."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="vimrag",
        title="Navigating Massive Visual Context in Retrieval-Augmented Generation via Multimodal Memory Graph (VimRAG)",
        url="https://arxiv.org/abs/2602.12735",
        code=None,
        area="vlm",
        extras=("lm",),
        claim=(
            "At 40 % of the full visual-token budget, allocating resolution by graph-modulated energy answers "
            "multi-hop digit questions over a memory graph at least 10 points more often than uniform and 3 more "
            "than priority-only allocation (all policies equal at 100 %), and graph-guided credit assignment "
            "(GGPO, masked steps dropped from the loss) learns a two-hop search task faster than outcome-only "
            "GRPO: a larger area under the success curve, averaged over learning rates 0.01, 0.02 and 0.05."
        ),
        status="implemented",
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
        extras=(),
        claim=(
            "Half-space projection with DPP-selected safety data keeps a language model safe through a harmful "
            "fine-tuning attack at task parity: on SmolLM2-135M-Instruct fine-tuned with LoRA on a task with 10 % "
            "harmful prompts, SPARD loses at most 15 % of the base model's held-out refusals (SFT: at least 60 %) "
            "and at most half the best baseline's share, within 3 task points of plain fine-tuning; on a digits "
            "analogue the same bars hold on attack success, and DPP selection beats random selection at p up to 3 %."
        ),
        status="implemented",
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
            "the error of a plain ViT and no more error than the same ViT trained with rotation "
            "augmentation (the strongest baseline)."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="instemb",
        title="Instruction-Following Embeddings through Glimpses of the Future (InstEmb)",
        url="https://openreview.net/forum?id=SeqQdBV6YP",
        code=None,
        area="lm",
        extras=("lm", "embed"),
        claim=(
            "Look-ahead tokens distilled from the teacher's answer states, with dual-anchor pooling, "
            "turn a tiny SFT'd LM into an encoder whose embeddings cluster and rank texts by the "
            "attribute the instruction asks for, far better than the SFT model's last-token embedding "
            "and better than contrastive-only training."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="subspace_path",
        title="Probe-based SubspacePath Pruner: budgeted, scenario-specific attention-head pathways",
        url="https://openreview.net/forum?id=fvkCjFvWKf",
        code="https://github.com/GongZhiren/SubspacePathPruner",
        area="lm",
        extras=("lm",),
        claim=(
            "Head masks compiled from probe-measured domain subspaces, from one input per scenario, "
            "keep more exact-match accuracy of a tiny multi-skill Llama with 30-50% of its attention "
            "heads removed than global gradient importance, Wanda-style scores and random heads at "
            "the same budget."
        ),
        status="implemented",
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
            "Dempster's rule (the strongest of TMC's reduced rule, the same with the common-space "
            "conflict, and set-valued Dempster-Shafer) and the RCML average rule."
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
        extras=("diffusion",),
        claim=(
            "With ternary weights, Hadamard-rotated Gaussian-clipped activation quantization keeps a "
            "tiny class-conditional DiT's denoising error and sample class accuracy at 2-bit "
            "activations far closer to full precision than naive W1.58A2 quantization-aware training, "
            "and activation-only mixed precision at an average of 2 bits improves on uniform 2 bits."
        ),
        status="implemented",
    ),
    PaperSpec(
        key="zs_expand",
        title="Granularity-Aware Adaptive Classifier Expansion via Zero-Shot Learning",
        url=None,
        code=None,
        area="vision",
        extras=("embed",),
        claim=(
            "Expanding a trained linear head to unseen classes from nuisance-averaged description "
            "embeddings with granularity-aware (group plus within-group) weight synthesis beats a "
            "shared regressor on unseen and similar-class accuracy and an ICIS-style autoencoder on "
            "generalized zero-shot harmonic accuracy, with weights less sensitive to nuisance "
            "wording."
        ),
        status="implemented",
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
            "multiplier lowers a tiny LLaMA's validation loss relative to fit-free controls at their own "
            "tuned rates (uniform AdamW with the embedding/head at r_max, per-kind multipliers fixed at the "
            "step-0 fit), fixed per-kind multipliers and a within-kind shuffle."
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
