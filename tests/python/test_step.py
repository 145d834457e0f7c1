"""The twin's training step against the engine's, for every option the book's runs use.

For each option below, the engine (``revtx-engine exec``) runs twice from the same seed:

* once with a learning rate of 1e-300, which every optimiser turns into a step of
  exactly zero in float32 (``-lr`` and ``-lr / (1 - β₁)`` round to -0.0, ``1 - lr·wd`` to
  1.0), so the weights it saves are its initial weights. The engine refuses
  ``train.steps = 0``, and its initialisation depends only on the model's config and the
  seed, so this is the same model as the second run's before its first step; the test
  checks that the two runs' first losses agree to the bit.
* once for the option's steps (one, or two or three where a schedule or momentum needs
  more to show), saving the weights after them.

The twin (python/revtx_twin) loads the initial weights, takes the same steps on the same
batches (``tasks.TrainingData``, checked against the rows the engine's result prints) with
its own loss, optimiser, schedule and clipping, and must end at the engine's weights
within the tolerances below, with every step's loss within ``LOSS_TOL`` of the engine's.

Bitwise equality is not expected: the twin's forward and backward passes run PyTorch's
kernels, not the engine's (fused attention and MLP, its own GELU, matrix products summed
in another order), so the gradients differ in their last bits. The optimiser then turns
most of that into differences of a few float32 ulps, except where a gradient is as small
as Adam's ε (1e-8) or smaller: Adam's first step is ``lr·g / (|g| + ε)``, so there a
difference of 1e-10 in ``g`` is one of 1e-2·lr in the update. That happens: the gradient
of each attention key's bias is zero in exact arithmetic (a bias on every key shifts each
query's scores by one constant), so both programs compute rounding noise there, 1e-11 to
1e-9 of it, and Adam divides it by about ε.
Hence two tolerances on the parameters: nearly all of them (99%) within a float32 ulp or
so of the update, and every one within a fraction of the learning rate. The measured
figures go to ``tests/artifacts/twin-step.json``.

A self-test then breaks the twin on purpose (Adam without its bias correction; the loss
averaged over every position rather than the scored ones; clipping left out; SGD without
momentum) and requires the same comparison to fail, so that a pass above means something.

    PYTHONPATH=<torch's site>:python python3 -m unittest tests/python/test_step.py -v

The engine is ``$REVTX_ENGINE``, by default ``target/release/revtx-engine``.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F

from revtx_twin import train as twin_train
from revtx_twin.model import Transformer
from revtx_twin.tasks import IGNORE, TrainingData
from revtx_twin.train import Optimiser, lr_at, train_config, train_step
from revtx_twin.weights import load_safetensors

REPO = Path(__file__).resolve().parents[2]
ENGINE = Path(os.environ.get("REVTX_ENGINE", REPO / "target" / "release" / "revtx-engine"))
ARTIFACT = REPO / "tests" / "artifacts" / "twin-step.json"

# Tolerances, chosen from the measured figures (tests/artifacts/twin-step.json) with a
# wide margin; see the module's docstring for why they are not zero.
# Parameters are compared in units of Σlr, the summed learning rates of the steps: Adam
# moves a parameter by up to about lr a step, so a fault in the update rule is off by a
# large part of 1 in these units, and rounding by about 1e-6.
LOSS_TOL = 1e-5
"""Largest relative difference between the engine's and the twin's loss, at every step
(measured: at most 1.8e-7, one or two float32 ulps; most are 0)."""
BULK_SHARE, BULK_TOL = 0.99, 1e-4
"""99% of all parameters must be within 1e-4·Σlr of the engine's (measured: within
9.4e-6·Σlr, most options 1.2e-6·Σlr, a float32 ulp of the update; each fault of the
self-test puts 1% of them beyond 3e-3·Σlr)."""
MAX_TOL = 0.25
"""Every parameter must be within 0.25·Σlr (measured: at most 0.088·Σlr, in a few
hundred of the elements whose gradient is rounding noise next to Adam's ε, about 0.1% of
the parameters: noise ``n`` moves Adam's first step by up to ``lr·n / (n + ε)``, about
0.1·lr for the ~1e-9 of noise measured; Adam without bias correction is off by 2.2·Σlr)."""

GRAD_NORM_TOL = 1e-4
"""Largest relative difference between the engine's and the twin's global gradient norm,
at every step (the norm clipping reads: two programs that sum in another order differ in
its last bits, a fault of the loss or the model by far more; measured: at most 2.0e-7)."""
SGD_TOL = 1e-3
"""Under SGD every parameter must be within 1e-3 of the engine's largest update: SGD moves
a parameter by ``lr·g``, a small fraction of ``lr``, so ``MAX_TOL``'s units (Σlr) would let
a whole update or more go wrong; there is no ε to amplify rounding noise either (measured:
at most 1.2e-5 of the largest update)."""

SEED = 0

# The chapter's reference run (RunConfig::reference() in crates/revtx-spec), its
# evaluation shrunk: evaluation runs after training and changes nothing about it.
# Every value is written out, as the engine requires (a config has no defaults).
REFERENCE = {
    "kind": "train",
    "model": {
        "vocab": 12, "positions": 25, "d_model": 64, "n_heads": 2, "n_layers": 2,
        "d_mlp": 256, "attn": {"scale": True, "softmax": "keys", "causal": True},
        "position_encoding": "learned", "norm": "pre", "norm_kind": "layer",
        "activation": "gelu",
    },
    "data": {"task": "reverse", "letters": 10, "min_len": 3, "max_len": 8,
             "targets": "answer", "random_offset": False},
    "train": {
        "steps": 1, "batch_size": 64, "lr": 0.003, "warmup": 0, "decay": "none",
        "min_lr": 0.0, "weight_decay": 0.01, "optimizer": "adamw", "betas": [0.9, 0.999],
        "eps": 1e-8, "momentum": 0.0, "clip": 0.0, "threads": 1, "block": 250,
        "window": 25, "threshold": 0.01,
    },
    "eval": {
        "test_seed": 1000003, "test_size": 1, "test_min_len": 3, "test_max_len": 8,
        "long_size": 1, "long_min_len": 9, "long_max_len": 12, "decode": [],
        "attention_input": "fgcabe", "variance_dims": [32, 256], "variance_samples": 2,
    },
}

# Chapter 2's base (learned_reverse): 33 positions, tested up to 16 letters.
CHAPTER2 = {"model.positions": 33, "eval.long_max_len": 16}
ADD = {
    "data.task": "add", "model.vocab": 13, "data.min_len": 1, "data.max_len": 3,
    "eval.test_min_len": 1, "eval.test_max_len": 3, "eval.long_min_len": 4,
    "eval.long_max_len": 5, "eval.attention_input": "12+34",
}
RECALL = {
    "data.task": "recall", "data.min_len": 2, "data.max_len": 6, "eval.test_min_len": 2,
    "eval.test_max_len": 6, "eval.long_min_len": 7, "eval.long_max_len": 8,
    "eval.attention_input": "acbdb",
}

# Every option the book's run blocks use (book/chapter-*.md), as changes to REFERENCE.
# `train.steps` is 1 unless a schedule or SGD's momentum needs more steps to show: the
# engine requires `warmup <= steps` and decays to `min_lr` at the last step, so one step
# cannot show a warm-up or a decay.
OPTIONS = {
    # Chapter 1: AdamW at a constant rate, pre-norm LayerNorm, GELU, learned positions.
    "reference": {},
    "noscale": {"model.attn.scale": False},
    "softmax_queries": {"model.attn.softmax": "queries"},
    "nomask": {"model.attn.causal": False},
    "allpos": {"data.targets": "all-positions"},
    "lengths_3_12": {"data.max_len": 12},
    "wide": {"model.d_model": 256, "model.d_mlp": 1024},
    "wide_noscale": {"model.d_model": 256, "model.d_mlp": 1024, "model.attn.scale": False},
    "small": {"model.n_layers": 1, "model.n_heads": 1},
    "offsets": {"data.random_offset": True},
    # Chapter 2: the ways of giving positions, on reversal and on copying.
    "learned_reverse": CHAPTER2,
    "sin_reverse": {**CHAPTER2, "model.position_encoding": "sinusoidal"},
    "rope_reverse": {**CHAPTER2, "model.position_encoding": "rope"},
    "alibi_reverse": {**CHAPTER2, "model.position_encoding": "alibi"},
    "nopos_reverse": {**CHAPTER2, "model.position_encoding": "none"},
    "learned_copy": {**CHAPTER2, "data.task": "copy"},
    "rope_copy": {**CHAPTER2, "data.task": "copy", "model.position_encoding": "rope"},
    "learned_reverse_offsets": {**CHAPTER2, "data.random_offset": True},
    "sin_copy_offsets": {**CHAPTER2, "data.task": "copy", "data.random_offset": True,
                         "model.position_encoding": "sinusoidal"},
    # Chapter 3: schedules, clipping, optimisers, norms, depth, harder tasks.
    "warmup": {"train.steps": 2, "train.warmup": 2},
    "cosine_only": {"train.steps": 3, "train.decay": "cosine"},
    "warmup_cosine": {"train.steps": 3, "train.warmup": 1, "train.decay": "cosine"},
    "warmup_linear": {"train.steps": 3, "train.warmup": 1, "train.decay": "linear",
                      "train.min_lr": 0.0003},
    # The book clips at 1.0, above the first steps' gradient norm (about 0.66), so the
    # clip would not act; 0.25 does. Adam's first step hardly depends on the gradient's
    # scale, so SGD shows the clip's effect.
    "clipped": {"train.clip": 1.0},
    "clip_acting": {"train.clip": 0.25},
    "sgd_clip_acting": {"train.optimizer": "sgd", "train.lr": 0.1, "train.clip": 0.25},
    "no_decay": {"train.weight_decay": 0.0},
    "adam_coupled": {"train.optimizer": "adam"},
    "sgd": {"train.steps": 2, "train.optimizer": "sgd", "train.lr": 0.1,
            "train.momentum": 0.9},
    "rmsnorm": {"model.norm_kind": "rms"},
    "post_norm": {"model.norm": "post"},
    "pre4": {"model.n_layers": 4},
    "post4": {"model.norm": "post", "model.n_layers": 4},
    "pre4_lr10_wc": {"train.steps": 3, "model.n_layers": 4, "train.lr": 0.01,
                     "train.warmup": 2, "train.decay": "cosine"},
    "add": ADD,
    "add_wc": {**ADD, "train.steps": 3, "train.warmup": 1, "train.decay": "cosine"},
    "recall": RECALL,
    # Not in the book, but a choice the config offers.
    "relu": {"model.activation": "relu"},
}
EXPECTED_OPTIONS = 38
"""How many options OPTIONS lists: a comparison that silently drops one fails."""

# The book's own schedules over their full length, compared rate for rate (the engine
# records every step's rate): a tiny model, since only `train` matters here.
SCHEDULES = {
    "warmup_cosine_1500": {"train.steps": 1500, "train.warmup": 100, "train.decay": "cosine"},
    "warmup_linear_1500": {"train.steps": 1500, "train.warmup": 100, "train.decay": "linear"},
    "wc_600_min_lr": {"train.steps": 600, "train.warmup": 200, "train.decay": "cosine",
                      "train.min_lr": 0.0001},
}
TINY = {"model.d_model": 2, "model.n_heads": 1, "model.n_layers": 1, "model.d_mlp": 1,
        "train.batch_size": 1}


def configure(changes: dict) -> dict:
    """REFERENCE with ``changes`` (dotted keys, as a run block writes them) applied; a key
    REFERENCE lacks is a mistake of the option, not a new field."""
    cfg = copy.deepcopy(REFERENCE)
    for dotted, value in changes.items():
        *path, key = dotted.split(".")
        node = cfg
        for part in path:
            node = node[part]
        if key not in node:
            raise KeyError(f"{dotted}: no such key in the engine's config")
        node[key] = value
    return cfg


def initial_config(cfg: dict) -> dict:
    """``cfg`` for one step at a rate of 1e-300: its weights are the initial ones."""
    init = copy.deepcopy(cfg)
    t = init["train"]
    t.update(steps=1, lr=1e-300, warmup=0, decay="none", min_lr=0.0, clip=0.0)
    return init


def engine_fingerprint() -> str:
    """The code fingerprint the engine expects in a request (``numerics`` prints it)."""
    out = subprocess.run([str(ENGINE), "numerics"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["engine"]


def run_engine(cfg: dict, label: str, fingerprint: str, workdir: Path) -> tuple[dict, dict]:
    """Runs ``cfg`` at ``SEED`` in the engine; returns its result and saved weights."""
    request = workdir / f"{label}.json"
    out = workdir / label
    request.write_text(json.dumps({"config": cfg, "seed": SEED, "profile": "portable",
                                   "label": label, "engine": fingerprint}))
    done = subprocess.run([str(ENGINE), "exec", "--request", str(request), "--out", str(out)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"engine exec {label} failed:\n{done.stderr}")
    result = json.loads((out / "result.json").read_text())
    return result, load_safetensors(out / "weights.safetensors")


def twin_steps(cfg: dict, initial: dict) -> tuple[dict, list, list, list, TrainingData]:
    """The twin's ``train.steps`` steps of ``cfg`` at ``SEED`` from the weights
    ``initial``; returns its parameters, losses, gradient norms, rates and data."""
    model = Transformer(cfg["model"])
    missing = model.load_state_dict(initial, strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    t = train_config(cfg)
    optimiser = Optimiser(model.named_parameters(), t)
    data = TrainingData(cfg, SEED)
    losses, norms, lrs, first_rows = [], [], [], None
    for step in range(t["steps"]):
        loss, norm = train_step(model, optimiser, data, step, t)
        if first_rows is None:
            first_rows = data.last
        losses.append(loss)
        norms.append(norm)
        lrs.append(optimiser.lr)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return params, losses, norms, lrs, first_rows


def compare(name: str, cfg: dict, start: tuple, end: tuple) -> dict:
    """The twin's steps of ``cfg`` against the engine's: the figures the test asserts."""
    (start_result, initial), (result, final) = start, end
    tr = result["train"]
    params, losses, norms, lrs, batch = twin_steps(cfg, initial)
    alphabet = TrainingData(cfg, SEED).alphabet
    rows = [{"string": alphabet.problem_text(batch.strings[r]),
             "input": alphabet.render_row(batch.x[r]),
             "target": alphabet.render_row(batch.y[r])} for r in range(2)]
    rel = [abs(a - b) / abs(b) for a, b in zip(losses, tr["losses"])]
    lr_sum = sum(tr["lr"])
    diffs = {n: float((params[n] - final[n]).abs().max()) for n in sorted(final)}
    # Every parameter's difference, as a fraction of the steps' summed rates.
    flat = torch.cat([(params[n] - final[n]).abs().reshape(-1) for n in sorted(final)])
    flat = flat.double() / lr_sum
    bulk = float(flat.kthvalue(max(1, int(BULK_SHARE * flat.numel()))).values)
    moved = max(float((final[n] - initial[n]).abs().max()) for n in final)
    return {
        "option": name,
        "changes": OPTIONS.get(name, {}),
        "steps": cfg["train"]["steps"],
        "same_initial_weights": start_result["train"]["first_loss"] == tr["first_loss"],
        "same_batch": rows == tr["examples"],
        "same_parameters": sorted(params) == sorted(final),
        "engine_losses": tr["losses"],
        "twin_losses": losses,
        "loss_rel_diff": max(rel),
        "first_loss_rel_diff": rel[0],
        "grad_norm_rel_diff": max(abs(a - b) / b for a, b in zip(norms, tr["grad_norm"])),
        "clip_acted": any(n > cfg["train"].get("clip", 0) > 0 for n in tr["grad_norm"]),
        "same_lrs": lrs == tr["lr"],
        "lr_sum": lr_sum,
        "largest_engine_change": moved,
        "parameters": flat.numel(),
        "max_param_diff": max(diffs.values()),
        "max_param_diff_over_lr": max(diffs.values()) / lr_sum,
        "max_param_diff_over_update": max(diffs.values()) / moved,
        "sgd": cfg["train"].get("optimizer") == "sgd",
        "bulk_param_diff_over_lr": bulk,
        "params_above_1e-3_lr": int((flat > 1e-3).sum()),
        "param_diffs": diffs,
    }


def problems(c: dict) -> list[str]:
    """What is wrong with one comparison's figures, in words (empty: it passes)."""
    out = []
    for key in ("same_initial_weights", "same_batch", "same_parameters", "same_lrs"):
        if not c[key]:
            out.append(f"{key} is false")
    if not c["loss_rel_diff"] <= LOSS_TOL:
        out.append(f"loss differs by {c['loss_rel_diff']:.2e} relative (tolerance {LOSS_TOL})")
    if not c["bulk_param_diff_over_lr"] <= BULK_TOL:
        out.append(f"{BULK_SHARE:.0%} of the parameters are within only "
                   f"{c['bulk_param_diff_over_lr']:.1e}·Σlr (tolerance {BULK_TOL}·Σlr)")
    if not c["grad_norm_rel_diff"] <= GRAD_NORM_TOL:
        out.append(f"the gradient norm differs by {c['grad_norm_rel_diff']:.2e} relative "
                   f"(tolerance {GRAD_NORM_TOL})")
    if c["sgd"] and not c["max_param_diff_over_update"] <= SGD_TOL:
        out.append(f"a parameter differs by {c['max_param_diff_over_update']:.2e} of the engine's "
                   f"largest update (tolerance {SGD_TOL} under SGD)")
    if not c["max_param_diff_over_lr"] <= MAX_TOL:
        out.append(f"a parameter differs by {c['max_param_diff']:.2e} = "
                   f"{c['max_param_diff_over_lr']:.3f}·Σlr (tolerance {MAX_TOL}·Σlr)")
    return out


class StepTest(unittest.TestCase):
    """Runs every option once (engine and twin) in ``setUpClass``; the tests read the
    figures."""

    figures: dict = {}
    engine_runs: dict = {}
    schedules: dict = {}
    seconds: float = 0.0

    @classmethod
    def setUpClass(cls) -> None:
        if not ENGINE.exists():
            raise RuntimeError(f"no engine at {ENGINE}: build it (make build) or set "
                               "REVTX_ENGINE")
        started = time.time()
        torch.set_num_threads(1)
        torch.set_flush_denormal(True)  # the engine's portable profile flushes subnormals
        fingerprint = engine_fingerprint()
        configs = {name: configure(changes) for name, changes in OPTIONS.items()}
        jobs = {}
        for name, cfg in configs.items():
            jobs[(name, "start")] = initial_config(cfg)
            jobs[(name, "end")] = cfg
        for name, changes in SCHEDULES.items():
            jobs[(name, "schedule")] = configure({**TINY, **changes})
        with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
            futures = {key: pool.submit(run_engine, cfg, "-".join(key), fingerprint, Path(tmp))
                       for key, cfg in jobs.items()}
            runs = {key: f.result() for key, f in futures.items()}
        cls.engine_runs = runs
        for name, cfg in configs.items():
            c = compare(name, cfg, runs[(name, "start")], runs[(name, "end")])
            cls.figures[name] = c
            print(f"{name:24} steps {c['steps']}  loss rel diff {c['loss_rel_diff']:.1e}  "
                  f"max param diff {c['max_param_diff']:.1e} "
                  f"({c['max_param_diff_over_lr']:.3f}·Σlr; {BULK_SHARE:.0%} within "
                  f"{c['bulk_param_diff_over_lr']:.1e}·Σlr)")
        for name, changes in SCHEDULES.items():
            cfg = jobs[(name, "schedule")]
            t = train_config(cfg)
            twin = [lr_at(t, s) for s in range(1, t["steps"] + 1)]
            engine = runs[(name, "schedule")][0]["train"]["lr"]
            cls.schedules[name] = {"changes": changes, "steps": t["steps"],
                                   "identical": twin == engine,
                                   "max_abs_diff": max(abs(a - b) for a, b in zip(twin, engine))}
        cls.seconds = time.time() - started

    @classmethod
    def tearDownClass(cls) -> None:
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        ARTIFACT.write_text(json.dumps({
            "seed": SEED,
            "loss_tolerance_relative": LOSS_TOL,
            "bulk_share": BULK_SHARE,
            "bulk_tolerance_over_lr_sum": BULK_TOL,
            "max_tolerance_over_lr_sum": MAX_TOL,
            "grad_norm_tolerance_relative": GRAD_NORM_TOL,
            "sgd_tolerance_over_update": SGD_TOL,
            "seconds": round(cls.seconds, 1),
            "options": list(cls.figures.values()),
            "schedules": cls.schedules,
            "broken": getattr(cls, "broken", {}),
        }, indent=2) + "\n")

    def test_every_option_compared(self) -> None:
        """A comparison that finds nothing to compare must fail, not pass."""
        self.assertEqual(len(OPTIONS), EXPECTED_OPTIONS)
        self.assertEqual(sorted(self.figures), sorted(OPTIONS))

    def test_step_matches_engine(self) -> None:
        for name, c in self.figures.items():
            with self.subTest(option=name):
                self.assertEqual(problems(c), [])
                if name.endswith("clip_acting"):
                    self.assertTrue(c["clip_acted"], "the clip never acted")

    def test_schedules_identical(self) -> None:
        """The schedule is plain float64 arithmetic in both: the same rates to the bit."""
        self.assertEqual(len(self.schedules), len(SCHEDULES))
        for name, s in self.schedules.items():
            with self.subTest(schedule=name):
                self.assertTrue(s["identical"], s)

    def test_broken_twin_fails(self) -> None:
        """Each deliberate fault in the twin must make the comparison fail."""

        def mean_over_all_positions(logits, targets):
            # The fault: ignored positions add nothing but still count in the mean.
            vocab = logits.shape[-1]
            total = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1),
                                    ignore_index=IGNORE, reduction="sum")
            return total / targets.numel()

        faults = {
            # Without bias correction, Adam's first step is √(1-β₂)/(1-β₁) ≈ 0.32 of lr.
            "adam_without_bias_correction": (
                "reference", mock.patch.object(twin_train, "powi", lambda a, n: 0.0)),
            "loss_mean_over_all_positions": (
                "reference", mock.patch.object(twin_train, "masked_loss",
                                               mean_over_all_positions)),
            "clipping_left_out": (
                "sgd_clip_acting", mock.patch.object(Optimiser, "clip",
                                                     lambda self, norm, clip: None)),
            "sgd_without_momentum": (
                "sgd", mock.patch.object(Optimiser, "_sgd", _sgd_without_momentum)),
        }
        broken = {}
        for fault, (name, patch) in faults.items():
            with self.subTest(fault=fault), patch:
                cfg = configure(OPTIONS[name])
                c = compare(name, cfg, self.engine_runs[(name, "start")],
                            self.engine_runs[(name, "end")])
                found = problems(c)
                broken[fault] = {"option": name, "problems": found}
                print(f"broken twin, {fault}: {'; '.join(found) or 'NOT DETECTED'}")
                self.assertNotEqual(found, [], f"{fault} went unnoticed")
        type(self).broken = broken


@torch.no_grad()
def _sgd_without_momentum(self: Optimiser) -> None:
    """The fault for the self-test: SGD that ignores ``momentum``."""
    neg_lr, l2 = twin_train.f32(-self.lr), twin_train.f32(self.weight_decay)
    for p, g in zip(self.params, self.grads()):
        p.add_(neg_lr * (g + p * l2))


if __name__ == "__main__":
    unittest.main()
