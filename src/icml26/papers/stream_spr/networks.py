"""Networks of the streaming agents: sparse initialization, parameter-free LayerNorm,
and Q / value / policy networks split into an *encoder* and a *head*.

Elsayed et al. 2024 (arXiv 2410.14606), as used by Nilaksh et al. 2026 (arXiv 2602.09396):

* sparse initialization (sparsity s = 0.9): W ~ U(−1/√fan_in, 1/√fan_in), then exactly
  ⌈s·fan_in⌉ incoming weights of every output unit (a row of a Linear, an output channel
  of a Conv over all C·kh·kw inputs) set to 0; biases 0;
* LayerNorm with no affine parameters over every non-batch dimension, before every
  LeakyReLU;
* MinAtar Q-network: Conv(C→16, 3×3, VALID) → LN → LeakyReLU → flatten (1024) →
  Linear(1024→128) → LN → LeakyReLU → Linear(128→|A|);
* Atari Q-network (``architecture="atari"``, Elsayed's Atari script): the Nature-DQN trunk
  Conv(C→32, 8×8, s4) → Conv(32→64, 4×4, s2) → Conv(64→64, 3×3, s1), each → LN → LeakyReLU,
  latent 64×7×7 on 84×84 frames, then Linear(→256) → LN → LeakyReLU → Linear(→|A|); its
  observations are channels-first (stack, 84, 84) as :func:`make_atari` returns them, and SPR
  on it has a 64-channel transition model and a 256-d projection (stream-rep-rl's Atari sizes).

The *encoder* (the conv trunk, or the first dense layer on vector observations) is the
part SPR shapes; its output is the latent z (8×8×16 on MinAtar). Image observations come
channels-last (H, W, C), as gymnasium and MinAtar return them.
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.argcheck import check_int, check_real

__all__ = [
    "Encoder",
    "LayerNorm",
    "StreamNetwork",
    "build_network",
    "init_streaming_",
    "sparse_init_",
]

HeadActivation = Literal["layernorm_leaky_relu", "relu"]
Architecture = Literal["minatar", "atari"]
#: Hidden width and SPR projection width of each architecture (stream-rep-rl: 128 / 256).
ARCHITECTURE_WIDTH = {"minatar": 128, "atari": 256}


@torch.no_grad()
def sparse_init_(weight: torch.Tensor, sparsity: float = 0.9, *,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """Sparse initialization in place (Elsayed et al. 2024, ``sparse_init``).

    Args:
        weight: a Linear weight (out, in) or a Conv weight (out, C, kh, kw).
        sparsity: s; each output unit gets exactly ⌈s·fan_in⌉ zero incoming weights.
        generator: a CPU ``torch.Generator`` for reproducible draws.

    Returns:
        ``weight``, with the rest of its entries ~ U(−1/√fan_in, 1/√fan_in).
    """
    if weight.dim() not in (2, 4):
        raise ValueError(f"sparse_init_ needs a Linear (2-D) or Conv2d (4-D) weight, got shape {tuple(weight.shape)}")
    check_real(sparsity, "sparsity", low=0.0, high=1.0)
    fan_out = weight.shape[0]
    fan_in = weight[0].numel()
    n_zeros = int(math.ceil(sparsity * fan_in))
    bound = 1.0 / math.sqrt(fan_in)
    # Draw on the CPU with the caller's generator, then copy (device-agnostic and reproducible).
    values = torch.empty(fan_out, fan_in, dtype=weight.dtype).uniform_(-bound, bound, generator=generator)
    order = torch.argsort(torch.rand(fan_out, fan_in, generator=generator), dim=1)
    values.scatter_(1, order[:, :n_zeros], 0.0)
    weight.copy_(values.reshape(weight.shape))
    return weight


@torch.no_grad()
def init_streaming_(module: nn.Module, sparsity: float = 0.9, *,
                    generator: torch.Generator | None = None) -> nn.Module:
    """Sparse-initialize every Linear and Conv2d weight of ``module`` and zero its biases."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be an nn.Module, got {type(module).__name__}")
    check_real(sparsity, "sparsity", low=0.0, high=1.0)
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            sparse_init_(layer.weight, sparsity, generator=generator)
            if layer.bias is not None:
                layer.bias.zero_()
    return module


class LayerNorm(nn.Module):
    """LayerNorm with no affine parameters over all non-batch dimensions (Elsayed; streaming-drl issue #4).

    NaN in a row makes that row NaN (as ``torch.nn.functional.layer_norm``).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[1:])


def _norm_act() -> list[nn.Module]:
    return [LayerNorm(), nn.LeakyReLU()]


class Encoder(nn.Module):
    """The trunk whose output is the latent z.

    Image observations (batch, H, W, C) (or (batch, C, H, W) with ``channels_last=False``):
    Conv(C→channels, 3×3, stride 1, VALID) → LN → LeakyReLU, latent (batch, channels, H−2, W−2).
    Vector observations (batch, d): Linear(d→width) → LN → LeakyReLU, latent (batch, width).
    """

    def __init__(self, obs_shape: Sequence[int], *, channels: int = 16, width: int = 128,
                 channels_last: bool = True, architecture: Architecture = "minatar") -> None:
        super().__init__()
        obs_shape = tuple(check_int(s, "obs_shape", low=1) for s in obs_shape)
        check_int(channels, "channels", low=1)
        check_int(width, "width", low=1)
        if architecture not in ARCHITECTURE_WIDTH:
            raise ValueError(f"architecture={architecture!r} must be one of {', '.join(ARCHITECTURE_WIDTH)}")
        self.obs_shape = obs_shape
        self.channels_last = channels_last
        if architecture == "atari":
            if len(obs_shape) != 3:
                raise ValueError(f"architecture='atari' needs image observations (C, H, W), got shape {obs_shape}")
            in_ch = obs_shape[2] if channels_last else obs_shape[0]
            h, w = (obs_shape[0], obs_shape[1]) if channels_last else (obs_shape[1], obs_shape[2])
            sizes = [(h, w)]
            for k, s in ((8, 4), (4, 2), (3, 1)):
                sizes.append(((sizes[-1][0] - k) // s + 1, (sizes[-1][1] - k) // s + 1))
            if min(sizes[-1]) < 1:
                raise ValueError(f"architecture='atari' needs frames of at least 36x36, got obs_shape {obs_shape}")
            self.body = nn.Sequential(nn.Conv2d(in_ch, 32, 8, 4), *_norm_act(), nn.Conv2d(32, 64, 4, 2),
                                      *_norm_act(), nn.Conv2d(64, 64, 3, 1), *_norm_act())
            self.latent_shape = (64, *sizes[-1])
        elif len(obs_shape) == 3:
            in_ch = obs_shape[2] if channels_last else obs_shape[0]
            h, w = (obs_shape[0], obs_shape[1]) if channels_last else (obs_shape[1], obs_shape[2])
            if h < 3 or w < 3:
                raise ValueError(f"image observations need H, W >= 3 for the 3x3 conv, got {obs_shape}")
            self.body = nn.Sequential(nn.Conv2d(in_ch, channels, 3, 1), *_norm_act())
            self.latent_shape: tuple[int, ...] = (channels, h - 2, w - 2)
        elif len(obs_shape) == 1:
            self.body = nn.Sequential(nn.Linear(obs_shape[0], width), *_norm_act())
            self.latent_shape = (width,)
        else:
            raise ValueError(f"observations must be vectors (d,) or images (H, W, C); got shape {obs_shape}")

    @property
    def image(self) -> bool:
        return len(self.obs_shape) == 3

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs: (batch, *obs_shape) → latent (batch, *latent_shape)."""
        if not isinstance(obs, torch.Tensor) or tuple(obs.shape[1:]) != self.obs_shape:
            raise ValueError(f"obs must be (batch, {', '.join(map(str, self.obs_shape))}), got "
                             f"{tuple(obs.shape) if isinstance(obs, torch.Tensor) else type(obs).__name__}")
        if self.image and self.channels_last:
            obs = obs.permute(0, 3, 1, 2)
        return self.body(obs)


class StreamNetwork(nn.Module):
    """Encoder → flatten → Linear(hidden) → activation → Linear(outputs).

    ``head_activation="layernorm_leaky_relu"`` is Elsayed's MinAtar network, used for both
    arms here; ``"relu"`` is the stream-rep-rl SPR network's head (no LN, plain ReLU),
    which differs from that code's own baseline (a defect we reproduce only on request).
    """

    def __init__(self, encoder: Encoder, outputs: int, *, hidden: int = 128,
                 head_activation: HeadActivation = "layernorm_leaky_relu") -> None:
        super().__init__()
        if check_int(outputs, "outputs") < 1:
            raise ValueError(f"outputs={outputs} must be at least 1")
        check_int(hidden, "hidden", low=1)
        self.encoder = encoder
        if head_activation == "layernorm_leaky_relu":
            act: list[nn.Module] = _norm_act()
        elif head_activation == "relu":
            act = [nn.ReLU()]
        else:
            raise ValueError(f"head_activation={head_activation!r} must be 'layernorm_leaky_relu' or 'relu'")
        latent = math.prod(encoder.latent_shape)
        self.hidden = nn.Sequential(nn.Flatten(), nn.Linear(latent, hidden), *act)
        self.out = nn.Linear(hidden, outputs)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs: (batch, *obs_shape) → (batch, outputs)."""
        return self.out(self.hidden(self.encoder(obs)))

    def features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(latent z flattened (batch, latent_dim), hidden layer (batch, hidden))."""
        z = self.encoder(obs)
        return z.flatten(1), self.hidden(z)


def build_network(obs_shape: Sequence[int], outputs: int, *, hidden: int | None = None, channels: int = 16,
                  head_activation: HeadActivation = "layernorm_leaky_relu", sparsity: float = 0.9,
                  channels_last: bool | None = None, architecture: Architecture = "minatar",
                  generator: torch.Generator | None = None,
                  device: torch.device | str | None = None) -> StreamNetwork:
    """Elsayed's streaming network for ``obs_shape``, sparse-initialized, on ``device``.

    ``architecture="minatar"`` (default; any image or vector observation) or ``"atari"`` (the
    Nature trunk). ``hidden`` defaults to the architecture's width (128 / 256); ``channels_last``
    defaults to True for MinAtar (H, W, C) and False for Atari (stack, H, W).
    """
    if architecture not in ARCHITECTURE_WIDTH:
        raise ValueError(f"architecture={architecture!r} must be one of {', '.join(ARCHITECTURE_WIDTH)}")
    hidden = ARCHITECTURE_WIDTH[architecture] if hidden is None else hidden
    check_int(hidden, "hidden", low=1)
    if channels_last is None:
        channels_last = architecture != "atari"
    encoder = Encoder(obs_shape, channels=channels, width=hidden, channels_last=channels_last,
                      architecture=architecture)
    net = StreamNetwork(encoder, outputs, hidden=hidden, head_activation=head_activation)
    init_streaming_(net, sparsity, generator=generator)
    return net.to(device) if device is not None else net
