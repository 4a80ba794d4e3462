"""Configuration of the curvature reproduction: the tiny language model and its training, the
curvature windows, the perturbation study, the regularised arm and the pretrained arm, with the
range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers
from icml26.common.tiny_lm import PretrainConfig, TinyLMConfig

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """Tiny GPT-2 on the stdlib corpus (full scale: the brief's CPU plan, §4.3-4.4)."""

    arch: str = "gpt2"
    """Architecture of the tiny LM: ``gpt2`` (the paper studies GPT-2 XL) or ``llama``."""
    vocab_size: int = 2048
    """BPE vocabulary of the shared tokenizer (brief §4.2: 2048)."""
    d_model: int = dataclasses.field(default=192, metadata={"min": 3})
    """Residual width (brief §4.3: 192)."""
    n_layers: int = 6
    """Transformer blocks (brief §4.3: 6)."""
    n_heads: int = 6
    """Attention heads (brief §4.3: 6)."""
    context: int = 128
    """Training and analysis window in tokens (brief §4.3: 128)."""
    steps: int = dataclasses.field(default=1000, metadata={"min": 1})
    """Optimizer steps of each training run (brief §4.3: 1000)."""
    batch_size: int = dataclasses.field(default=16, metadata={"min": 1})
    """Sequences per step (brief §4.3: 16)."""
    lr: float = 3e-3
    """Peak AdamW learning rate, cosine decay (brief §4.3: 3e-3)."""
    warmup: int = 60
    """Linear warm-up steps."""
    checkpoints: tuple[int, ...] = (0, 30, 100, 300, 1000)
    """Steps whose weights are analysed; must include 0 and ``steps`` (brief §4.3)."""
    window: int = 3
    """``W`` of ``kappa(t; W)`` (not given by the paper; brief §1.3: 3)."""
    window_grid: tuple[int, ...] = (1, 3, 8)
    """Windows compared at the final checkpoint (brief §6: {1, 3, 8})."""
    eval_tokens: int = 20_000
    """Held-out tokens (consecutive validation windows) for the correlations (brief §4.4: 20k)."""
    perturb_positions: int = dataclasses.field(default=2000, metadata={"min": 2})
    """Held-out prefixes perturbed at their last position (issue: at least 2,000)."""
    perturb_length: int = dataclasses.field(default=64, metadata={"min": 3})
    """Tokens per perturbed prefix (ours; the last one is perturbed and measured)."""
    epsilons: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1)
    """Perturbation sizes as fractions of the state's norm, ``|delta| = epsilon |x_t|``: comparable across layers and prefixes."""
    pretrained_tokens: int = 60_000
    """Analysed tokens of the pretrained arm (SmolLM2; at least 20k, and a 95% interval no wider
    than +/- 0.015: 20k tokens gave +/- 0.021, 48k +/- 0.0144 [0.0132, 0.0156] over 3 seeds); 0 skips the arm."""
    pretrained_layers: tuple[int, ...] = ()
    """``hidden_states`` indices of the pretrained arm's correlation analysis; empty (default): every
    layer. The others stay in the per-layer curves as missing (on a deep model most of the analysis'
    time is the angles of every layer); the perturbation study's layer is the best of those analysed."""
    pretrained_context: int = 128
    """Tokens per window of the pretrained arm."""
    pretrained_batch: int = dataclasses.field(default=8, metadata={"min": 1})
    """Windows per forward pass of the pretrained model."""
    pretrained_perturb_positions: int = dataclasses.field(default=2000, metadata={"min": 2, "sentinels": (0,)})
    """Prefixes of the pretrained arm's perturbation study (at least 2,000 for a resolved slope); 0 skips it."""
    pretrained_perturb_length: int = dataclasses.field(default=24, metadata={"min": 3})
    """Tokens per perturbed prefix of the pretrained arm (ours)."""
    pretrained_perturb_batch: int = dataclasses.field(default=100, metadata={"min": 1})
    """Prefixes per batch of the pretrained perturbation study."""
    onmanifold_prefixes: int = dataclasses.field(default=300, metadata={"min": 2, "sentinels": (0,)})
    """Prefixes of the on-manifold control study on SmolLM2 (steps of one size in many directions, with
    the angle change each causes); 0 skips it. Its further run at a fixed layer,
    ``python -m icml26.papers.curvature.onmanifold_run``, reads 300 too."""
    onmanifold_layer: int = dataclasses.field(default=-1, metadata={"sentinels": (-1,)})
    """``hidden_states`` index of the on-manifold study; -1 (a sentinel): the pretrained perturbation
    study's layer (the inner layer of maximal rho)."""
    onmanifold_directions: int = dataclasses.field(default=8, metadata={"min": 2})
    """Isotropic random directions in ``span{x_{t-2}, x_{t-1}, x_t}`` per prefix (the regression of the
    entropy slope on the angle slope runs over them)."""
    onmanifold_pc_draws: int = dataclasses.field(default=16, metadata={"min": 1})
    """``N`` of the precursor code's best-of-N rule in the top-10 principal subspace."""
    tiny_model: bool = True
    """Train and analyse the tiny model (straightening, its perturbation study, the regulariser). Off: the
    pretrained arm and its on-manifold study only (needs ``pretrained_tokens > 0``); the quick setting's
    tiny model does not beat its interpolated bigram, so its sections run in the full setting."""
    onmanifold_only: bool = False
    """Run the on-manifold study alone (a further run: no tiny model, no correlation analysis); needs
    ``onmanifold_layer >= 0``."""
    bootstrap: int = dataclasses.field(default=1000, metadata={"min": 2})
    """Window-bootstrap resamples of the pretrained correlations' 95% interval."""
    perturb_layer: int = dataclasses.field(default=-1, metadata={"sentinels": (-1,)})
    """``hidden_states`` index to perturb; -1 (a sentinel): the inner layer (1 .. L-1) of maximal Spearman rho."""
    valid_batches: int = dataclasses.field(default=40, metadata={"min": 1})
    """Batches of 32 validation windows for the final validation losses (40 covers the stream at context 128)."""
    reg_weight: float = 0.1
    """``lambda`` of the curvature regulariser (brief §4.4 and the precursor code: 0.1)."""
    reg_layers: tuple[int, ...] = (3, 4)
    """``hidden_states`` indices the regulariser straightens (brief §4.4: layers 3-4 of 6)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        TinyLMConfig(arch=self.arch, vocab_size=self.vocab_size, d_model=self.d_model,  # validates
                     n_layers=self.n_layers, n_heads=self.n_heads, context=self.context)
        cps = self.checkpoints
        if list(cps) != sorted(set(cps)) or not cps or cps[0] != 0 or cps[-1] != self.steps:
            raise ValueError(f"checkpoints={cps} must be increasing, start at 0 and end at steps={self.steps}")
        for w in (self.window, *self.window_grid):
            if w < 1 or w + 2 > self.context:
                raise ValueError(f"window {w} must be in 1 .. context - 2 = {self.context - 2}")
        if self.eval_tokens < 2 * self.context:
            raise ValueError(f"eval_tokens={self.eval_tokens} must be at least two windows (2 * context)")
        if self.perturb_length > self.context:
            raise ValueError(f"perturb_length={self.perturb_length} must be in 3 .. context={self.context}")
        if not self.epsilons or any(not e > 0 for e in self.epsilons) or len(set(self.epsilons)) != len(self.epsilons):
            raise ValueError(f"epsilons={self.epsilons} must be distinct positive sizes (epsilon=0 perturbs nothing)")
        if self.pretrained_context < self.window + 3:
            raise ValueError(f"pretrained_context={self.pretrained_context} must exceed window + 2 = {self.window + 2}")
        if self.lr <= 0:
            raise ValueError(f"lr={self.lr} must be positive")
        if not (self.perturb_layer == -1 or 0 <= self.perturb_layer <= self.n_layers):
            raise ValueError(f"perturb_layer={self.perturb_layer} must be -1 or in 0 .. n_layers={self.n_layers}")
        if not self.reg_layers or any(not 0 <= layer <= self.n_layers for layer in self.reg_layers):
            raise ValueError(f"reg_layers={self.reg_layers} must be non-empty and in 0 .. n_layers={self.n_layers}")
        if self.onmanifold_only and (self.onmanifold_layer < 0 or self.onmanifold_prefixes == 0):
            raise ValueError("onmanifold_only=True runs the on-manifold study alone: set onmanifold_layer >= 0 "
                             f"(got {self.onmanifold_layer}) and onmanifold_prefixes > 0 (got {self.onmanifold_prefixes})")
        if not self.tiny_model and self.pretrained_tokens == 0 and not self.onmanifold_only:
            raise ValueError("tiny_model=False leaves the pretrained arm only, and pretrained_tokens=0 turns it off: "
                             "set pretrained_tokens > 0 or tiny_model=True")
        if any(layer < 0 for layer in self.pretrained_layers) or len(set(self.pretrained_layers)) != len(
                self.pretrained_layers):
            raise ValueError(f"pretrained_layers={self.pretrained_layers} must be distinct hidden_states indices "
                             "(>= 0), or empty for every layer")
        if self.reg_weight <= 0:
            raise ValueError(f"reg_weight={self.reg_weight} must be positive (lambda = 0 is the baseline arm)")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: SmolLM2-135M-Instruct, its correlation, perturbation and on-manifold
        studies (``tiny_model=False``: the tiny GPT-2 of this size, 600 steps, does not beat its bigram, so
        its sections run in the full setting; the tiny-model fields below are those its five committed
        quick seeds used, results/curvature/quick_tiny_model)."""
        return cls(d_model=128, n_layers=4, n_heads=4, steps=600, checkpoints=(0, 30, 100, 300, 600),
                   reg_layers=(2,), tiny_model=False)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(vocab_size=512, d_model=32, n_layers=2, n_heads=2, context=32, steps=12,
                   batch_size=8, warmup=3, checkpoints=(0, 12), window_grid=(1, 3), eval_tokens=1024,
                   perturb_positions=64, perturb_length=12, valid_batches=2, reg_layers=(1,), pretrained_tokens=0,
                   onmanifold_prefixes=0)

    def model_config(self) -> TinyLMConfig:
        return TinyLMConfig(arch=self.arch, vocab_size=self.vocab_size, d_model=self.d_model,
                            n_layers=self.n_layers, n_heads=self.n_heads, context=self.context)

    def train_config(self, seed: int) -> PretrainConfig:
        return PretrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                              warmup=min(self.warmup, self.steps), seed=seed,
                              eval_every=max(1, self.steps // 6), eval_batches=10)
