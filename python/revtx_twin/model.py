"""The reversal transformer in PyTorch: a twin of the engine's model, top to bottom.

The engine (crates/revtx-engine/src/model/) is written in Rust on libtorch. This file
computes the same function with PyTorch's own operations, so that a trained model
exported by the engine loads here with ``model.load_state_dict(state)`` and decodes
the same strings. It reads in the order the engine's model is built:

    config → attention → heads → MLP → block → transformer → greedy decoding

Every choice of the engine's ``ModelConfig`` is here: the three switches of attention
(``scale``, ``softmax``, ``causal``), five position encodings, three norm placements,
two norm kinds and two activations. A config is the engine's JSON of ``ModelConfig``,
for instance a model's ``config`` in the site's ``models/manifest.json``; keys it leaves
out take the engine's defaults.

Parameter names are the engine's (``blocks.0.attn.qkv.weight``, ...). The fixed
tables (sinusoids, rotary angles, ALiBi's biases) are buffers that are not saved, as
the engine does not save them either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .tasks import Alphabet

# ---------------------------------------------------------------------------------------
# The configuration
# ---------------------------------------------------------------------------------------

POSITION_ENCODINGS = ("learned", "sinusoidal", "rope", "alibi", "none")
NORM_PLACEMENTS = ("pre", "post", "none")
NORM_KINDS = ("layer", "rms")
ACTIVATIONS = ("gelu", "relu")
SOFTMAX_AXES = ("keys", "queries")

# Layer norm's epsilon (PyTorch's default), which RMS norm uses too.
EPS = 1e-5


@dataclass(frozen=True)
class AttnOptions:
    """The switches of the attention function; the chapter's faults turn one off."""

    scale: bool = True  # divide the scores by √d_k
    softmax: str = "keys"  # "keys": each query's weights sum to one; "queries": the fault
    causal: bool = True  # mask the keys after each query

    @classmethod
    def from_json(cls, d: dict) -> "AttnOptions":
        _no_unknown_keys(d, {"scale", "softmax", "causal"}, "attn")
        opts = cls(bool(d["scale"]), d["softmax"], bool(d["causal"]))
        _one_of(opts.softmax, SOFTMAX_AXES, "attn.softmax")
        return opts


@dataclass(frozen=True)
class ModelConfig:
    """The shape of the model and its choices: the engine's ``ModelConfig``."""

    vocab: int  # tokens: the letters, the separator and the pad (12 in the chapter)
    positions: int  # the longest sequence the model reads
    d_model: int  # width of every token vector
    n_heads: int  # attention heads per block, each d_model / n_heads wide
    n_layers: int  # blocks
    d_mlp: int  # hidden width of each block's MLP
    attn: AttnOptions = field(default_factory=AttnOptions)
    position_encoding: str = "learned"
    norm: str = "pre"
    norm_kind: str = "layer"
    activation: str = "gelu"

    @classmethod
    def from_json(cls, d: dict) -> "ModelConfig":
        """The config of the engine's JSON; absent choices take the engine's defaults."""
        _no_unknown_keys(d, set(cls.__dataclass_fields__), "model config")
        sizes = {k: int(d[k]) for k in ("vocab", "positions", "d_model", "n_heads",
                                         "n_layers", "d_mlp")}
        choices = {k: d[k] for k in ("position_encoding", "norm", "norm_kind",
                                     "activation") if k in d}
        cfg = cls(**sizes, attn=AttnOptions.from_json(d["attn"]), **choices)
        cfg.check()
        return cfg

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def check(self) -> None:
        _one_of(self.position_encoding, POSITION_ENCODINGS, "position_encoding")
        _one_of(self.norm, NORM_PLACEMENTS, "norm")
        _one_of(self.norm_kind, NORM_KINDS, "norm_kind")
        _one_of(self.activation, ACTIVATIONS, "activation")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")
        if self.position_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError("sinusoidal positions need an even d_model")
        if self.position_encoding == "rope" and self.d_head % 2:
            raise ValueError("rotary positions need an even d_model / n_heads")


def _no_unknown_keys(d: dict, known: set, what: str) -> None:
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"unknown {what} keys: {', '.join(unknown)}")


def _one_of(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} is {value!r}, not one of {', '.join(allowed)}")


# ---------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------

# ANCHOR: attention
def attention(q: Tensor, k: Tensor, v: Tensor, opts: AttnOptions) -> tuple[Tensor, Tensor]:
    """Attention over the last two axes of q, k, v, each shaped (..., tokens, d_k).

    Returns the output (..., tokens, d_k) and the weights (..., queries, keys).
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)  # (..., queries, keys)
    if opts.scale:
        scores = scores / math.sqrt(d_k)
    if opts.causal:
        t = scores.shape[-1]
        # True above the diagonal: key j comes after query i.
        later = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(later, float("-inf"))  # before the softmax
    axis = {
        "keys": -1,  # each query's weights sum to one
        "queries": -2,  # the fault: each key's weights sum to one
    }[opts.softmax]
    weights = scores.softmax(axis)
    return weights @ v, weights
# ANCHOR_END: attention


def biased_attention(
    q: Tensor, k: Tensor, v: Tensor, bias: Tensor, opts: AttnOptions
) -> tuple[Tensor, Tensor]:
    """``attention`` with ``bias`` added to the scores after the division and before the
    mask: ALiBi's biases, (heads, tokens, tokens) against scores (batch, heads, tokens,
    tokens)."""
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    if opts.scale:
        scores = scores / math.sqrt(d_k)
    scores = scores + bias
    if opts.causal:
        t = scores.shape[-1]
        later = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(later, float("-inf"))
    weights = scores.softmax(-1 if opts.softmax == "keys" else -2)
    return weights @ v, weights


# ---------------------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------------------
#
# The fixed tables are computed in float64 with Python's math and rounded to float32
# once, as the engine computes them with its own float64 routines (trig.rs).

LN_10000 = 9.210340371976184  # ln 10000, the engine's constant


def frequency(i: int, width: int) -> float:
    """The angular frequency of pair i of ``width`` dimensions: 10000^(-2i/width)."""
    return math.exp(-(2 * i) / width * LN_10000)


def sinusoidal_table(rows: int, d: int) -> Tensor:
    """Vaswani et al.'s table, (rows, d): sin(p·ωᵢ) in column 2i, cos(p·ωᵢ) in 2i + 1."""
    table = [
        [(math.sin if c % 2 == 0 else math.cos)(p * frequency(c // 2, d)) for c in range(d)]
        for p in range(rows)
    ]
    return torch.tensor(table, dtype=torch.float64).float()


class Rope(nn.Module):
    """Su et al.'s rotation in the "rotate half" layout: dimension i of a head's first
    half pairs with dimension i + d_k/2, and the pair turns by p·ωᵢ at position p."""

    def __init__(self, rows: int, d_k: int):
        super().__init__()
        half = d_k // 2
        angles = torch.tensor(
            [[p * frequency(c % half, d_k) for c in range(d_k)] for p in range(rows)],
            dtype=torch.float64,
        )
        # (positions, d_k): cos(p·ωᵢ) and sin(p·ωᵢ) in columns i and i + d_k/2.
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    # ANCHOR: rope
    def rotate(self, x: Tensor) -> Tensor:
        """Rotates x (batch, t, heads, d_k): x·cos + rotate_half(x)·sin, where
        rotate_half([a, b]) = [-b, a]."""
        t, d_k = x.shape[1], x.shape[3]
        half = d_k // 2
        cos = self.cos[:t].view(1, t, 1, d_k)
        sin = self.sin[:t].view(1, t, 1, d_k)
        turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + turned * sin
    # ANCHOR_END: rope

    def rotate_qkv(self, qkv: Tensor, heads: int) -> Tensor:
        """Rotates the query and key thirds of qkv (batch, t, 3·d), whose heads sit side
        by side in each third; the values pass unchanged."""
        b, t, three_d = qkv.shape
        d = three_d // 3
        q, k, v = qkv.split(d, dim=-1)
        q = self.rotate(q.view(b, t, heads, d // heads)).view(b, t, d)
        k = self.rotate(k.view(b, t, heads, d // heads)).view(b, t, d)
        return torch.cat([q, k, v], dim=-1)


def alibi_slope(h: int, heads: int) -> float:
    """ALiBi's slope of head h (from 1) of ``heads``: 2^(-8h/heads)."""
    return 2.0 ** (-8.0 * h / heads)


def alibi_bias(heads: int, rows: int) -> Tensor:
    """Press et al.'s biases, (heads, rows, rows): -m_h·|i - j| for query i and key j."""
    slopes = torch.tensor([alibi_slope(h, heads) for h in range(1, heads + 1)],
                          dtype=torch.float64)
    i = torch.arange(rows, dtype=torch.float64)
    distance = (i[:, None] - i[None, :]).abs()
    return (-slopes[:, None, None] * distance).float()


# ---------------------------------------------------------------------------------------
# The parts of a block
# ---------------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """x / √(mean(x²) + ε) · w over the last axis: a learned scale, no shift."""

    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: Tensor) -> Tensor:
        mean_square = (x * x).mean(-1, keepdim=True)
        return x / torch.sqrt(mean_square + EPS) * self.weight


def make_norm(cfg: ModelConfig) -> nn.Module:
    """A norm of the config's kind over d_model (weights named as nn.LayerNorm's)."""
    if cfg.norm_kind == "rms":
        return RMSNorm(cfg.d_model)
    return nn.LayerNorm(cfg.d_model, eps=EPS)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention: one Linear makes q, k and v, one mixes the heads.
    Under rotary positions, queries and keys are turned by position before the scores;
    under ALiBi, each head's scores get its linear biases."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.n_heads = cfg.n_heads
        self.opts = cfg.attn
        pe = cfg.position_encoding
        self.rope = Rope(cfg.positions, cfg.d_head) if pe == "rope" else None
        alibi = alibi_bias(cfg.n_heads, cfg.positions) if pe == "alibi" else None
        self.register_buffer("alibi", alibi, persistent=False)  # None unless ALiBi

    def project(self, x: Tensor) -> Tensor:
        """q, k and v side by side, (batch, tokens, 3·d_model), queries and keys rotated
        under rotary positions."""
        qkv = self.qkv(x)
        return self.rope.rotate_qkv(qkv, self.n_heads) if self.rope is not None else qkv

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x (batch, tokens, d_model) → the output of the same shape and the weights
        (batch, heads, tokens, tokens)."""
        if self.alibi is not None:
            return self.biased(x)
        return self.reference(x)

    # ANCHOR: heads
    def reference(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The heads split apart, attention in each, the heads side by side again."""
        b, t, d = x.shape
        h, d_k = self.n_heads, d // self.n_heads
        qkv = self.project(x).split(d, dim=-1)  # 3 × (batch, tokens, d_model), one matmul

        def heads(z: Tensor) -> Tensor:  # (batch, heads, tokens, d_k)
            return z.view(b, t, h, d_k).transpose(1, 2)

        q, k, v = heads(qkv[0]), heads(qkv[1]), heads(qkv[2])
        y, w = attention(q, k, v, self.opts)  # every head at once: heads act as batch entries
        y = y.transpose(1, 2).reshape(b, t, d)  # (batch, tokens, d_model): heads side by side
        return self.out(y), w
    # ANCHOR_END: heads

    def biased(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``reference`` with ALiBi's biases on the scores."""
        b, t, d = x.shape
        h, d_k = self.n_heads, d // self.n_heads
        q, k, v = (z.view(b, t, h, d_k).transpose(1, 2) for z in self.project(x).split(d, -1))
        y, w = biased_attention(q, k, v, self.alibi[:, :t, :t], self.opts)
        y = y.transpose(1, 2).reshape(b, t, d)
        return self.out(y), w


class Mlp(nn.Module):
    """The position-wise feed-forward network: d_model → d_mlp → d_model."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.up = nn.Linear(cfg.d_model, cfg.d_mlp)
        self.down = nn.Linear(cfg.d_mlp, cfg.d_model)
        self.activation = cfg.activation

    def forward(self, x: Tensor) -> Tensor:
        u = self.up(x)
        # GELU is the exact one, x·Φ(x), not the tanh approximation.
        u = F.relu(u) if self.activation == "relu" else F.gelu(u)
        return self.down(u)


class Block(nn.Module):
    """Attention, then the MLP, each added to the residual stream, with norms where the
    config puts them (the chapter's: before each sublayer)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm = cfg.norm
        has_norms = cfg.norm != "none"
        self.ln1 = make_norm(cfg) if has_norms else None
        self.attn = MultiHeadAttention(cfg)
        self.ln2 = make_norm(cfg) if has_norms else None
        self.mlp = Mlp(cfg)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x (batch, tokens, d_model) → the same shape, and the attention weights."""
        if self.norm == "pre":
            return self.pre_norm(x)
        a, weights = self.attn(x)
        if self.norm == "post":  # the original transformer's: normalise after each addition
            x = self.ln1(x + a)
            x = self.ln2(x + self.mlp(x))
        else:
            x = x + a
            x = x + self.mlp(x)
        return x, weights

    # ANCHOR: block
    def pre_norm(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The pre-norm block: x + attn(ln1(x)), then x + mlp(ln2(x))."""
        a, weights = self.attn(self.ln1(x))
        x = x + a
        x = x + self.mlp(self.ln2(x))
        return x, weights
    # ANCHOR_END: block


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------

class Transformer(nn.Module):
    """Token embeddings and positions, the blocks, a final norm (under pre-norm) and an
    untied head."""

    def __init__(self, config: ModelConfig | dict):
        super().__init__()
        cfg = config if isinstance(config, ModelConfig) else ModelConfig.from_json(config)
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        # A trained table of positions (learned), or a fixed one (sinusoidal); rotary and
        # ALiBi act inside attention, and "none" adds nothing.
        self.pos = (nn.Embedding(cfg.positions, cfg.d_model)
                    if cfg.position_encoding == "learned" else None)
        sinusoids = (sinusoidal_table(cfg.positions, cfg.d_model)
                     if cfg.position_encoding == "sinusoidal" else None)
        self.register_buffer("sinusoids", sinusoids, persistent=False)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = make_norm(cfg) if cfg.norm == "pre" else None
        self.head = nn.Linear(cfg.d_model, cfg.vocab)

    def embed(self, idx: Tensor) -> Tensor:
        """The tokens of idx (batch, tokens) as vectors, with their positions added."""
        t = idx.shape[1]
        if t > self.cfg.positions:
            raise ValueError(f"{t} tokens, but the model has {self.cfg.positions} positions")
        x = self.tok(idx)  # (batch, tokens, d_model)
        if self.pos is not None:
            x = x + self.pos(torch.arange(t, device=idx.device))
        elif self.sinusoids is not None:
            x = x + self.sinusoids[:t]
        return x

    def forward(
        self, idx: Tensor, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """idx (batch, tokens) of token ids → logits (batch, tokens, vocab), and with
        ``return_attention`` each block's weights (batch, heads, tokens, tokens)."""
        x = self.embed(idx)
        weights = []
        for block in self.blocks:
            x, w = block(x)
            weights.append(w)
        if self.ln_f is not None:
            x = self.ln_f(x)
        logits = self.head(x)
        return (logits, weights) if return_attention else logits


# ---------------------------------------------------------------------------------------
# Tokens and greedy decoding
# ---------------------------------------------------------------------------------------

# The tokens of a task are its alphabet's (tasks.py): letters, separator, pad.
# The chapter's: reversal over a..j, separator 10, pad 11.
CHAPTER = Alphabet()


def letters_to_ids(text: str, alphabet: Alphabet = CHAPTER) -> list[int]:
    """``"fgca"`` → [5, 6, 2, 0]."""
    return alphabet.encode(text)


def ids_to_letters(ids: Sequence[int], alphabet: Alphabet = CHAPTER) -> str:
    """[5, 6, 2, 0] → ``"fgca"`` (``|`` for the separator, ``.`` for the pad)."""
    return alphabet.text(ids)


@torch.no_grad()
def generate(model: Transformer, x: Tensor, steps: int) -> Tensor:
    """Appends the argmax of the last row's logits to x (batch, tokens), ``steps`` times,
    running the whole sequence each time; returns the grown x. Ties go to the first
    maximum, as in libtorch."""
    for _ in range(steps):
        logits = model(x)  # (batch, tokens, vocab)
        next_id = logits[:, -1].argmax(-1, keepdim=True)  # (batch, 1)
        x = torch.cat([x, next_id], dim=1)
    return x


@torch.no_grad()
def greedy(model: Transformer, problems: Sequence[str], alphabet: Alphabet = CHAPTER) -> list[str]:
    """Greedy decoding as the engine's ``greedy`` (eval.rs): each prompt and the
    separator in, then the argmax appended once per token of the answer. Problems of
    the same size run as one batch. Returns each answer as text."""
    prompts = [alphabet.encode(p) for p in problems]
    out = [""] * len(prompts)
    for n in sorted({len(p) for p in prompts}):
        rows = [i for i, p in enumerate(prompts) if len(p) == n]
        x = torch.tensor([prompts[i] + [alphabet.sep] for i in rows], dtype=torch.long)
        answers = generate(model, x, alphabet.answer_tokens(n))[:, n + 1:]
        for i, answer in zip(rows, answers.tolist()):
            out[i] = alphabet.text(answer)
    return out


@torch.no_grad()
def attention_of(model: Transformer, tokens: Sequence[int]) -> list[Tensor]:
    """The attention of one pass over ``tokens``: per block, (heads, queries, keys)."""
    _, weights = model(torch.tensor([list(tokens)], dtype=torch.long), return_attention=True)
    return [w[0] for w in weights]
