"""Configuration of the Fox reproduction: the synthetic scenes, the tiny vision-language model and
its training, the decoding arms and their settings, with the range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import neutral_field, validate_numbers

__all__ = ["ARMS", "Config", "TESTBEDS"]

ARMS = ("Fox", "vanilla", "VCD", "SID", "PAI", "Fox all layers")

CHECK_SETS = ("training", "evaluation")
"""What the development POPE check reads (``pope_check_on``; :attr:`~.training.TrainConfig.check_on`)."""

TESTBEDS = ("default", "pathology")
"""Which checks a run scores: ``"default"`` (the committed quick run: no pathology, no harm) or
``"pathology"`` (the CHAIR and POPE checks gated by the preconditions that the pathway Fox targets exists;
``pathology_run.py`` sets the recipe)."""


@dataclasses.dataclass
class Config:
    """Vanilla, VCD, SID, PAI and Fox greedy decoding on a tiny LLaVA (full scale: the issue's plan)."""

    train_steps: int = dataclasses.field(default=3000, metadata={"min": 1})
    """Training steps of the tiny LLaVA (batch ``batch_size``)."""
    batch_size: int = dataclasses.field(default=32, metadata={"min": 1})
    """Training examples per step."""
    lr: float = 2e-3
    """Peak AdamW learning rate."""
    vision_pretrain_steps: int = 1500
    """Steps of the vision stage (the CLIP tower alone names each quadrant's object; a stand-in for
    LLaVA's pretrained CLIP); the LLaVA stage then trains it at 0.02× the rate."""
    n_train_scenes: int = dataclasses.field(default=6000, metadata={"min": 1})
    """Training scenes (rendered once)."""
    caption_fraction: float = dataclasses.field(default=0.5, metadata={"min": 0.0, "max": 1.0})
    """Fraction of caption examples in training (the rest: yes/no questions)."""
    p_partner: float = dataclasses.field(default=0.85, metadata={"min": 0.0, "max": 1.0})
    """P(B | A), the planted prior."""
    faint_fraction: float = dataclasses.field(default=0.2, metadata={"min": 0.0, "max": 1.0})
    """Fraction of faint objects."""
    n_eval: int = dataclasses.field(default=500, metadata={"min": 1})
    """Adversarial evaluation images (A present, B absent)."""
    max_new_tokens: int = dataclasses.field(default=12, metadata={"min": 1})
    """Caption length limit (the longest caption has 12 tokens)."""
    fox_layers: tuple[int, ...] = ()
    """Fox's probed layers; ``()``: [⌈L/16⌉, ⌈L/2⌉) = {1} of 4."""
    rho: float = 0.35
    """Fox's head fraction ρ (k = 3 of 8 heads)."""
    vcd_noise_step: int = dataclasses.field(default=500, metadata={"max": 999})
    """VCD's diffusion step t."""
    decoder_layers: int = dataclasses.field(default=4, metadata={"min": 1})
    """Layers of the tiny LLaVA's decoder."""
    decoder_width: int = dataclasses.field(default=128, metadata={"min": 1})
    """Width of the decoder."""
    arms: tuple[str, ...] = ARMS
    """Greedy arms to run (``Fox``, ``vanilla`` and ``SID`` are needed by the checks; ``Fox all layers``
    probes every decoder layer, a diagnostic of the layer range)."""
    mechanism: bool = True
    """Run the mechanism measurements: head ablations, saturation effects, the streams at hallucinated mentions."""
    sampling: bool = True
    """Also caption with sampling (top-p 0.9): vanilla at T = 1, Fox at T = 1, and vanilla at T = 1/3 (the
    control for Fox's sharpening: identical streams give z = 3·l)."""
    testbed: str = neutral_field("default")
    """``"default"`` or ``"pathology"`` (:data:`TESTBEDS`): the latter scores the gated ``pathology_*`` checks
    instead of the ungated CHAIR and POPE ones (the pathology further run, ``pathology_run.py``). The three
    fields of that run are neutral: at their defaults they are not recorded, so the committed runs'
    configuration is what it was."""
    pope_target_accuracy: float = neutral_field(0.0, min=0.0, max=1.0)
    """Train until greedy POPE-random accuracy on development scenes reaches this (checked every
    ``pope_check_every`` steps; ``train_steps`` is the cap). 0 (default): train ``train_steps`` steps."""
    pope_check_every: int = neutral_field(250, min=1)
    """Steps between two development POPE checks."""
    pope_check_on: str = neutral_field("training")
    """What the development POPE check reads: ``"training"`` (one present and one absent shape per
    training-distribution scene) or ``"evaluation"`` (POPE-random as the run scores it, on adversarial
    development scenes); see :attr:`~.training.TrainConfig.check_on`."""
    pope_check_scenes: int = neutral_field(200, min=1)
    """Development scenes of each POPE check."""
    text_layers: tuple[int, ...] = neutral_field(())
    """Decoder layers in which text after the image may attend to earlier text; in the others it sees the
    prompt up to the end of the image block and itself (:func:`~.attention.route_text_attention`), so a
    language prior the model learns is computed in these layers. ``()`` (default): every layer, a plain
    decoder. The pathology testbed can set it to Fox's probed layers."""
    logit_cap: float = neutral_field(0.0, min=0.0)
    """Soft cap ``c`` of the decoder's scaled attention logits in ``cap_layers`` (``c·tanh(s/c)``,
    :func:`~.attention.cap_attention_logits`); with ``c ≤ 4`` a capped head's logits all lie in one bin of
    Fox's saturation, which then erases its routing. 0 (default): uncapped, a plain decoder."""
    cap_layers: tuple[int, ...] = neutral_field(())
    """Decoder layers ``logit_cap`` caps; ``()`` (default): every layer."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not 0.0 < self.caption_fraction < 1.0:
            raise ValueError(f"caption_fraction={self.caption_fraction} must lie strictly between 0 and 1: the model "
                             "needs caption examples (CHAIR) and yes/no questions (POPE)")
        if not 0.0 < self.rho <= 1.0:
            raise ValueError(f"rho={self.rho} must lie in (0, 1]")
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr} must be positive")
        self.fox_layers = tuple(self.fox_layers)
        if any(v >= self.decoder_layers for v in self.fox_layers):
            raise ValueError(f"fox_layers={self.fox_layers} must be below decoder_layers={self.decoder_layers}")
        self.text_layers = tuple(self.text_layers)
        if any(not 0 <= v < self.decoder_layers for v in self.text_layers):
            raise ValueError(f"text_layers={self.text_layers} must lie in 0..{self.decoder_layers - 1} "
                             f"(decoder_layers={self.decoder_layers})")
        self.cap_layers = tuple(self.cap_layers)
        if any(not 0 <= v < self.decoder_layers for v in self.cap_layers):
            raise ValueError(f"cap_layers={self.cap_layers} must lie in 0..{self.decoder_layers - 1} "
                             f"(decoder_layers={self.decoder_layers})")
        if self.cap_layers and not self.logit_cap:
            raise ValueError(f"cap_layers={self.cap_layers} needs logit_cap > 0 (the cap); set logit_cap")
        self.arms = tuple(self.arms)
        if not set(self.arms) <= set(ARMS) or not {"Fox", "vanilla"} <= set(self.arms):
            raise ValueError(f"arms={self.arms} must include 'Fox' and 'vanilla' and come from {ARMS}")
        if self.decoder_width % 8:
            raise ValueError(f"decoder_width={self.decoder_width} must be a multiple of the 8 heads")
        if self.pope_check_on not in CHECK_SETS:
            raise ValueError(f"pope_check_on={self.pope_check_on!r} must be one of {CHECK_SETS}")
        if self.testbed not in TESTBEDS:
            raise ValueError(f"testbed={self.testbed!r} must be one of {TESTBEDS}")
        if self.testbed == "pathology" and not self.mechanism:
            raise ValueError("testbed='pathology' needs mechanism=True: its preconditions are measured there")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: 2000 training steps, 300 adversarial images (about 5 min on 2 cores)."""
        return cls(train_steps=2000, n_eval=300)

    @classmethod
    def tiny(cls) -> "Config":
        """Seconds: 40 steps of a 2-layer, 64-wide model on 256 scenes, 12 images, no ablation sweep."""
        return cls(train_steps=40, vision_pretrain_steps=20, n_train_scenes=256, n_eval=12, max_new_tokens=6,
                   decoder_layers=2, decoder_width=64, mechanism=False)

