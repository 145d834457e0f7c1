"""The engine's training loop in PyTorch: the loss, the optimisers, the learning-rate
schedule, gradient clipping, and ``train``.

Each piece ports one file of ``crates/revtx-engine/src``: the loss and the loop are
``train.rs``, the optimisers and clipping ``optim.rs``, the schedule ``schedule.rs``.
The engine writes its optimisers out element by element, every multiply, add, divide and
square root rounded once to float32 in the order written, rather than calling libtorch's
(whose square root depends on the processor). We do the same with one PyTorch operation
per rounding, in the same order, so that from the same gradients the twin's step gives
the engine's parameters to the last bit. The gradients themselves come from PyTorch's
kernels, not the engine's, and agree only to rounding (``tests/python/test_step.py``
measures by how much).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from .tasks import IGNORE, TrainingData

TRAIN_DEFAULTS = {
    "warmup": 0,
    "decay": "none",
    "min_lr": 0.0,
    "optimizer": "adamw",
    "betas": [0.9, 0.999],
    "eps": 1e-8,
    "momentum": 0.0,
    "clip": 0.0,
}
"""The keys of ``RunConfig["train"]`` that a config leaves out when they are default."""


def train_config(run_config):
    """``RunConfig["train"]`` with its absent keys at their defaults."""
    return {**TRAIN_DEFAULTS, **run_config["train"]}


def f32(x):
    """``x`` rounded to the nearest float32, as Rust's ``x as f32`` rounds (returned as a
    Python float, which holds it exactly)."""
    return float(np.float32(x))


# The loss (train.rs).


def masked_loss(logits, targets):
    """Cross-entropy of ``logits (rows, width, vocab)`` against ``targets (rows, width)``,
    averaged over the positions that carry a target: those labelled ``IGNORE`` count
    neither in the sum nor in the number it is divided by."""
    vocab = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1),
                           ignore_index=IGNORE, reduction="mean")


# The schedule (schedule.rs, trig.rs).


def cos_pi(x):
    """``cos(π·x)`` for ``x`` in [0, 1], as the engine's ``trig::cos_pi`` computes it: a
    Taylor series in a fixed order, so that every machine gets the same bits."""
    x = min(max(x, 0.0), 1.0)
    x, sign = (1.0 - x, -1.0) if x > 0.5 else (x, 1.0)
    a = math.pi * x
    a2 = a * a
    total = 0.0
    for k in range(14, 0, -1):  # 1 - a²/2! + a⁴/4! - …, smallest term first (Horner)
        n = float(2 * k)
        total = 1.0 - a2 / (n * (n - 1.0)) * total
    return sign * total


# ANCHOR: schedule
def lr_at(t, step):
    """The learning rate of step ``step`` (counted from 1): a linear warm-up over
    ``t["warmup"]`` steps, then a decay from ``t["lr"]`` to ``t["min_lr"]`` at the last
    step (``"none"``, ``"linear"`` or ``"cosine"``)."""
    if step <= t["warmup"]:
        return t["lr"] * step / t["warmup"]
    # How far through the steps after the warm-up: from just above 0 to 1 at the last.
    progress = (step - t["warmup"]) / (t["steps"] - t["warmup"])
    span = t["lr"] - t["min_lr"]
    if t["decay"] == "none":
        return t["lr"]
    if t["decay"] == "linear":
        return t["min_lr"] + span * (1.0 - progress)
    if t["decay"] == "cosine":
        return t["min_lr"] + span * 0.5 * (1.0 + cos_pi(progress))
    raise ValueError(f"unknown decay {t['decay']!r}")
# ANCHOR_END: schedule


# The optimisers and clipping (optim.rs).


def powi(a, n):
    """``a`` to the whole power ``n >= 0`` by repeated squaring, as Rust's ``f64::powi``
    computes it (compiler-rt's ``__powidf2``), which can differ from ``a ** n`` in the
    last bit."""
    r = 1.0
    while True:
        if n & 1:
            r *= a
        n //= 2
        if n == 0:
            return r
        a *= a


def sum_of_squares(g, f=1.0):
    """Σ (x·f)² over the float32 array ``g``, in float64, in the engine's order: element
    ``i`` into lane ``i % 8``, in index order, then the eight lanes in turn. Each product
    ``x·f`` is rounded to float32 first (``f`` = 1 leaves ``x`` as it is)."""
    x = g if f == 1.0 else g * np.float32(f)
    x = x.astype(np.float64)
    x = np.concatenate([x, np.zeros(-len(x) % 8)])  # adding 0.0 to a lane changes nothing
    # A running sum down each lane (cumsum adds strictly in order); its last row holds
    # the eight lanes' totals.
    lanes = np.cumsum((x * x).reshape(-1, 8), axis=0)[-1] if len(x) else np.zeros(8)
    total = 0.0
    for lane in lanes:
        total += lane
    return total


def clip_factor(g, norm, clip):
    """The float32 factor every gradient is multiplied by when their ``norm`` exceeds
    ``clip``, or ``None``. PyTorch's ``clip_grad_norm_`` uses ``clip / (norm + 1e-6)``; the
    engine rounds that down to a float32, and lowers it one float32 at a time while the
    rounded products would still have a norm above ``clip``."""
    want = clip / (norm + 1e-6)
    if clip <= 0.0 or want >= 1.0:
        return None
    f = np.float32(want)
    if float(f) > want:
        f = np.nextafter(f, np.float32(-np.inf))
    while math.sqrt(sum_of_squares(g, float(f))) > clip:
        f = np.nextafter(f, np.float32(-np.inf))
    return float(f)


class Optimiser:
    """AdamW, Adam (weight decay added to the gradient) or SGD with momentum, as the
    engine's ``Optim`` steps them. ``t`` is ``RunConfig["train"]`` with its defaults.

    Every constant is computed in float64 and rounded to float32 once (``f32``), and every
    update below is one PyTorch operation per rounding, in the engine's order.
    """

    def __init__(self, named_parameters, t):
        # Sorted by name, as the engine lays them out in its flat buffer; only the
        # gradient norm's order of summation depends on it.
        named = sorted((n, p) for n, p in named_parameters if p.requires_grad)
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.rule = t["optimizer"]
        if self.rule not in ("adamw", "adam", "sgd"):
            raise ValueError(f"unknown optimizer {self.rule!r}")
        self.lr = t["lr"]
        self.weight_decay = t["weight_decay"]
        self.betas = t["betas"]
        self.eps = t["eps"]
        self.momentum = t["momentum"]
        self.m = [torch.zeros_like(p) for p in self.params]  # SGD: the momentum buffer
        self.v = [torch.zeros_like(p) for p in self.params] if self.rule != "sgd" else []
        self.steps = 0

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def grads(self):
        """Every parameter's gradient (zeros where backward left none)."""
        return [torch.zeros_like(p) if p.grad is None else p.grad for p in self.params]

    def flat_grads(self):
        """All gradients as one float32 array, in the parameters' order."""
        return torch.cat([g.reshape(-1) for g in self.grads()]).detach().numpy()

    def grad_norm(self):
        """The Euclidean norm of all gradients together (float64)."""
        return math.sqrt(sum_of_squares(self.flat_grads()))

    def clip(self, norm, clip):
        """Scales every gradient by ``clip_factor`` if there is one (``clip`` 0: off)."""
        if clip <= 0.0:
            return
        f = clip_factor(self.flat_grads(), norm, clip)
        if f is not None:
            for p in self.params:
                if p.grad is not None:
                    p.grad.mul_(f)

    @torch.no_grad()
    def step(self):
        self.steps += 1
        if self.rule == "sgd":
            self._sgd()
        else:
            self._adam(decoupled=self.rule == "adamw")

    def _adam(self, decoupled):
        lr, wd, (beta1, beta2), t = self.lr, self.weight_decay, self.betas, self.steps
        decay = f32(1.0 - lr * wd)  # AdamW: the parameter shrinks by 1 - lr·wd
        l2 = f32(wd)  # Adam: wd·p is added to the gradient instead
        b1, one_minus_b1 = f32(beta1), f32(1.0 - beta1)
        b2, one_minus_b2 = f32(beta2), f32(1.0 - beta2)
        root_correction2 = f32(math.sqrt(1.0 - powi(beta2, t)))  # √(1 - β₂ᵗ)
        eps = f32(self.eps)
        neg_step = f32(-(lr / (1.0 - powi(beta1, t))))  # -lr / (1 - β₁ᵗ)
        for p, g, m, v in zip(self.params, self.grads(), self.m, self.v):
            if decoupled:
                p.mul_(decay)
            else:
                g = g + p * l2
            m.mul_(b1).add_(g * one_minus_b1)  # m ← β₁·m + (1 - β₁)·g
            v.mul_(b2).add_(g * one_minus_b2 * g)  # v ← β₂·v + (1 - β₂)·g·g
            denom = v.sqrt() / root_correction2 + eps  # √v̂ + ε, with v̂ = v / (1 - β₂ᵗ)
            p.add_(neg_step * m / denom)  # p ← p - lr·m̂ / (√v̂ + ε)

    def _sgd(self):
        neg_lr, l2, mu = f32(-self.lr), f32(self.weight_decay), f32(self.momentum)
        for p, g, b in zip(self.params, self.grads(), self.m):
            g = g + p * l2
            if self.momentum > 0.0:
                if self.steps == 1:
                    b.copy_(g)  # the buffer starts at the first gradient
                else:
                    b.mul_(mu).add_(g)  # b ← μ·b + g
                g = b
            p.add_(neg_lr * g)


# The loop (train.rs).

# ANCHOR: step
def train_step(model, optimiser, data, step, t):
    """One step of the engine's loop: a fresh batch, the loss on it, the gradients
    (clipped if ``t["clip"]`` asks), then the optimiser at the schedule's rate.
    ``step`` counts from 0. Returns the loss and the gradients' norm before clipping."""
    x, y = data.next()  # (rows, width) tokens and targets, new problems every step
    logits = model(x)  # (rows, width, vocab)
    loss = masked_loss(logits, y)  # the mean over the positions with a target
    optimiser.zero_grad()
    loss.backward()
    norm = optimiser.grad_norm()  # of all gradients together
    optimiser.clip(norm, t["clip"])  # scaled down to the clip if above it (0: off)
    optimiser.lr = lr_at(t, step + 1)  # the schedule counts steps from 1
    optimiser.step()
    return loss.item(), norm
# ANCHOR_END: step


def train(run_config, seed, steps=None, log_every=100):
    """Trains the twin of the engine's run ``(run_config, seed)``; returns the model and
    the loss of every step.

    The batches are the engine's, token for token (``tasks.TrainingData``), and the
    optimiser, schedule and clipping are its too. The initial weights are not: the model
    is initialised by PyTorch's own rules from ``torch.manual_seed(seed)``, and the engine
    initialises with its own, so the two runs start from different weights and their
    losses agree in distribution, not number for number. To follow the engine's run
    exactly, load its initial weights into the model and call ``train_step`` (as
    ``tests/python/test_step.py`` does).

    ``steps`` overrides ``run_config["train"]["steps"]``, as the engine's ``--steps`` does
    (the schedule then spans the new count). ``log_every``: print the loss every so many
    steps (0: never). Like the engine's portable profile, this flushes subnormal floats to
    zero, for the whole process.
    """
    from .model import Transformer

    t = train_config(run_config)
    if steps is not None:
        t["steps"] = steps
    torch.set_flush_denormal(True)
    torch.manual_seed(seed)
    model = Transformer(run_config["model"])
    optimiser = Optimiser(model.named_parameters(), t)
    data = TrainingData(run_config, seed)
    losses = []
    for step in range(t["steps"]):
        loss, _ = train_step(model, optimiser, data, step, t)
        losses.append(loss)
        if log_every and (step + 1) % log_every == 0:
            print(f"step {step + 1}/{t['steps']} loss {loss:.4f}")
    return model, losses
