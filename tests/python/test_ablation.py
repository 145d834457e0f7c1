"""Ablations: the engine's intervening runs against the PyTorch twin.

A fixture book (a run trained for 400 steps, and a run that switches off each head, each
attention sublayer, one MLP and the learned position table of it, from revtx-intervene) is built with REVTX_BOOK
(default target/release/revtx-book). The engine zeroes weights: a head's value rows, a
sublayer's last projection. The twin does not touch the weights: it loads the trained
run's safetensors and zeroes *activations* with forward hooks (a head's slice of the
attention's output before its projection; a sublayer's whole output). For every target,
the twin's greedy decodes of every test and long string must be the engine's, and so its
accuracy. A self-test hooks the other head of each block and requires a disagreement, so
that a pass means the hook and the engine switched off the same head.

The fixture also patches (`patch`): the twin draws the same strings and corruptions with
its port of the engine's generator, swaps each component's output at each position from
the clean run into the corrupted one with hooks, and must give the engine's map, cell by
cell, to 1e-6 of the margin (the largest difference seen is about 4e-8), for a corrupted
letter and for two letters' places swapped (a hook on the position table's rows).

Targets zeroed at some positions only (`b0.h0@input`, `b0.h1@answer`) are zeroed by the
same hooks on those rows only, and a self-test requires the other place to disagree.

    PYTHONPATH=<torch's site>:python python3 -m unittest tests/python/test_ablation.py -v
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest
from contextlib import contextmanager
from pathlib import Path

import torch

from revtx_twin.model import Alphabet, Transformer, greedy
from revtx_twin.tasks import Rng, draw, encode, sequence_len
from revtx_twin.weights import load_safetensors

REPO = Path(__file__).resolve().parents[2]
ARTIFACT = REPO / "tests" / "artifacts" / "twin-ablation.json"
BOOK = """# Ablations

```run trained
base = "reference"
seeds = [0, 1]
[train]
steps = 400
block = 100
[eval]
test_size = 120
long_size = 20
```

```run off
from = "trained"
ablate = ["b0.h0", "b0.h1", "b1.h0", "b1.h1", "b0.attn", "b1.attn", "b0.mlp", "pos", "b0.h0+b1.h1",
          "b0.h0@input", "b0.h1@answer", "b0.mlp@input"]
```

```run patched
from = "trained"
patch = { length = 6, letter = 1, strings = 40, seed = 9 }
```

```run placed
from = "trained"
patch = { length = 6, letter = 1, strings = 40, seed = 9, corrupt = "place" }
```
"""


def build_fixture(root: Path) -> Path:
    """Builds the fixture book in ``root`` and returns its run cache."""
    (root / "book").mkdir()
    (root / "book" / "book.toml").write_text(
        'title = "Ablations"\nauthor = "Tests"\nchapters = ["chapter.md"]\n')
    (root / "book" / "chapter.md").write_text(BOOK)
    binary = os.environ.get("REVTX_BOOK", str(REPO / "target" / "release" / "revtx-book"))
    done = subprocess.run([binary, "build", "--root", str(root), "--no-pdf", "--quiet"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the fixture book did not build:\n{done.stderr}")
    return root / ".revtx-cache" / "runs"


def entries(runs: Path) -> tuple[dict, dict]:
    """The trained entries (by seed: result and folder) and the intervening results (by
    seed) of the cache."""
    trained, off = {}, {}
    for result in runs.glob("*/result.json"):
        r = json.loads(result.read_text())
        if "train" in r:
            trained[r["seed"]] = (r, result.parent)
        elif "ablated" in r and "patched" not in r["ablated"]:
            off[r["seed"]] = r
    return trained, off


def patched_entries(runs: Path) -> dict:
    """The patching runs' results of the cache, by what they corrupt and seed."""
    out = {}
    for result in runs.glob("*/result.json"):
        r = json.loads(result.read_text())
        if "patched" in r.get("ablated", {}):
            out[(r["config"]["intervene"]["patch"]["corrupt"], r["seed"])] = r
    return out


# ANCHOR: hooks
@contextmanager
def switched_off(model: Transformer, target: str, prompt: int | None = None):
    """The twin with ``target``'s parts giving zero, by hooks on activations; a target
    written ``…@input`` or ``…@answer`` only at the first ``prompt`` positions (the input's
    letters) or at the others."""
    d_head = model.cfg.d_model // model.cfg.n_heads
    handles = []
    target, _, place = target.partition("@")
    rows = {"": slice(None), "input": slice(None, prompt), "answer": slice(prompt, None)}[place]
    for part in target.split("+"):
        if part == "pos":  # the learned table's rows, as the embedding returns them
            handles.append(model.pos.register_forward_hook(lambda _m, _i, out: torch.zeros_like(out)))
            continue
        block, what = part.split(".")
        b = model.blocks[int(block[1:])]
        def zero_rows(y):
            y = y.clone()
            y[:, rows] = 0
            return y
        if what == "attn":
            handles.append(b.attn.register_forward_hook(
                lambda _m, _i, out: (zero_rows(out[0]), out[1])))
        elif what == "mlp":
            handles.append(b.mlp.register_forward_hook(lambda _m, _i, out: zero_rows(out)))
        else:
            h = int(what[1:])

            def zero_head(_m, inputs, h=h):
                y = inputs[0].clone()  # (batch, tokens, d_model): heads side by side
                y[:, rows, h * d_head:(h + 1) * d_head] = 0
                return (y,)
            handles.append(b.attn.out.register_forward_pre_hook(zero_head))
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()
# ANCHOR_END: hooks


# ANCHOR: patching
def pairs(alphabet: Alphabet, patch: dict) -> list[tuple[list[int], list[int]]]:
    """The clean strings and their corrupted copies, drawn as revtx-intervene draws them:
    each string, then the step (1 to letters − 1) that moves its letter at ``letter``."""
    rng = Rng(patch["seed"])
    out = []
    at = patch["letter"]
    for _ in range(patch["strings"]):
        clean = draw(rng, alphabet, patch["length"])
        step = rng.range(1, alphabet.letters - 1)
        moved = (clean[at] + step) % alphabet.letters
        if patch["corrupt"] == "place":  # the letters stay; the next one differs from it
            if clean[at + 1] == clean[at]:
                clean[at + 1] = moved
            out.append((clean, list(clean)))
            continue
        corrupt = list(clean)
        corrupt[at] = moved
        out.append((clean, corrupt))
    return out


def patching_map(model: Transformer, alphabet: Alphabet, patch: dict) -> dict:
    """Activation patching by hooks: each component's output at each position taken from
    the clean run into the corrupted one; the share of the mean logit difference restored."""
    drawn = pairs(alphabet, patch)
    length, letter = patch["length"], patch["letter"]
    query = length + (letter if alphabet.task == "copy" else length - 1 - letter)
    n = sequence_len(alphabet.task, length)
    rows = lambda which: torch.tensor([encode(p[which], alphabet, n, "answer", 0)[0] for p in drawn])
    clean, corrupt = rows(0), rows(1)
    placed = patch["corrupt"] == "place"
    want = [(c[letter], c[letter + 1] if placed else k[letter]) for c, k in drawn]
    d_head = model.cfg.d_model // model.cfg.n_heads

    def hooks_on(name):
        """(module, kind, slice) where the component's output passes."""
        if name.startswith("resid.b"):
            return model.blocks[int(name[7:])], "pre", slice(None)
        b, part = name.split(".")
        block = model.blocks[int(b[1:])]
        if part == "mlp":
            return block.mlp, "out", slice(None)
        h = int(part[1:])
        return block.attn.out, "pre", slice(h * d_head, (h + 1) * d_head)

    def run(idx, name=None, swap=None, keep=None, moved=False):
        module, kind, cols = hooks_on(name) if name else (None, None, None)
        rows = list(range(n))
        rows[letter], rows[letter + 1] = rows[letter + 1], rows[letter]

        def edit(t):
            if keep is not None:
                keep[name] = t.detach().clone()
            if swap is not None:
                t = t.clone()
                t[:, swap[0], cols] = swap[1][:, swap[0], cols]
            return t
        handles = []
        if module is not None:
            handles.append(module.register_forward_pre_hook(lambda _m, i: (edit(i[0]),)) if kind == "pre"
                           else module.register_forward_hook(lambda _m, _i, o: edit(o)))
        if moved:  # the table's rows of the two letters swapped: each read at the other's place
            handles.append(model.pos.register_forward_hook(lambda _m, _i, o: o[rows]))
        try:
            with torch.no_grad():
                logits = model(idx)[:, query, :].double()
        finally:
            for handle in handles:
                handle.remove()
        return sum(float(logits[i, a] - logits[i, b]) for i, (a, b) in enumerate(want)) / len(want)

    names = [f"resid.b{b}" for b in range(model.cfg.n_layers)]
    names += [f"b{b}.h{h}" for b in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]
    names += [f"b{b}.mlp" for b in range(model.cfg.n_layers)]
    kept = {}
    clean_ld = run(clean)
    for name in names:
        run(clean, name, keep=kept)
    corrupt_ld = run(corrupt, moved=placed)
    restored = {name: [(run(corrupt, name, swap=(p, kept[name]), moved=placed) - corrupt_ld) / (clean_ld - corrupt_ld)
                       for p in range(query + 1)] for name in names}
    return {"query": query, "clean": clean_ld, "corrupt": corrupt_ld, "restored": restored,
            "first": alphabet.text(encode(drawn[0][0], alphabet, n, "answer", 0)[0][:query + 1])}
# ANCHOR_END: patching


def decodes(model: Transformer, alphabet: Alphabet, inputs: list[str], target: str) -> list[str]:
    """The twin's greedy decodes of ``inputs`` with ``target`` switched off; one length at
    a time, so that a target at some positions knows where the input's letters end."""
    out = [""] * len(inputs)
    for n in sorted({len(i) for i in inputs}):
        rows = [k for k, i in enumerate(inputs) if len(i) == n]
        with torch.no_grad(), switched_off(model, target, prompt=n):
            for k, d in zip(rows, greedy(model, [inputs[k] for k in rows], alphabet)):
                out[k] = d
    return out


def other_head(target: str) -> str | None:
    """The same target with each head replaced by the other head of its block (a
    two-head model); None when it names no head."""
    parts = target.split("+")
    if not any(".h" in p for p in parts):
        return None
    return "+".join(p[:-1] + str(1 - int(p[-1])) if ".h" in p else p for p in parts)


class TwinAblation(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        torch.set_num_threads(1)
        cls.tmp = tempfile.TemporaryDirectory()
        runs = build_fixture(Path(cls.tmp.name))
        cls.trained, cls.off = entries(runs)
        cls.patched = patched_entries(runs)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def model(self, seed: int) -> tuple[Transformer, Alphabet, dict]:
        result, folder = self.trained[seed]
        model = Transformer(result["config"]["model"])
        model.load_state_dict(load_safetensors(folder / "weights.safetensors"))
        model.eval()
        alphabet = Alphabet.of_model(result["config"]["data"]["task"], model.cfg.vocab)
        return model, alphabet, result

    def test_every_ablation_decodes_as_the_engine(self) -> None:
        self.assertEqual(sorted(self.trained), [0, 1])
        self.assertEqual(sorted(self.off), [0, 1])
        report, compared, moved = [], 0, 0
        for seed, off in sorted(self.off.items()):
            model, alphabet, trained = self.model(seed)
            targets = off["ablated"]["targets"]
            self.assertEqual(len(targets), 12)
            for target, engine in targets.items():
                for name in ("test", "long"):
                    inputs = trained["train"][name]["inputs"]
                    ours = decodes(model, alphabet, inputs, target)
                    theirs = engine[name]["outputs"]
                    with self.subTest(seed=seed, target=target, set=name):
                        self.assertEqual(len(ours), len(theirs))
                        wrong = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
                        self.assertEqual(wrong, [], f"first: {inputs[wrong[0]] if wrong else ''}")
                        answers = [alphabet.text(alphabet.answer(alphabet.encode(i))) for i in inputs]
                        correct = sum(o == a for o, a in zip(ours, answers))
                        self.assertEqual(correct, engine[name]["correct"])
                    compared += len(ours)
                    moved += ours != trained["train"][name]["outputs"]
                    report.append({"seed": seed, "target": target, "set": name,
                                   "strings": len(ours), "engine_correct": engine[name]["correct"]})
        # 2 seeds × 12 targets × (120 + 20) strings; and switching off must move decodes,
        # or the comparison could not tell one head from another.
        self.assertEqual(compared, 2 * 12 * 140)
        self.assertGreaterEqual(moved, 12, "few ablations changed any decode")
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        ARTIFACT.write_text(json.dumps({"compared": compared, "targets": report}, indent=1) + "\n")

    def test_patching_agrees_with_the_twin(self) -> None:
        """Every cell of the engine's patching map, at both seeds, against the twin's with
        the same outputs swapped by hooks: equal to 1e-6 of the margin (the twin's kernels
        are PyTorch's, so the last bits may differ); and the map is not trivial."""
        self.assertEqual(sorted(self.patched), [(c, s) for c in ("letter", "place") for s in (0, 1)])
        cells, moved = 0, 0
        for (_, seed), r in sorted(self.patched.items()):
            model, alphabet, _ = self.model(seed)
            engine = r["ablated"]["patched"]
            twin = patching_map(model, alphabet, r["config"]["intervene"]["patch"])
            self.assertEqual(engine["query"], twin["query"])
            self.assertEqual("".join(engine["tokens"]), twin["first"])
            self.assertAlmostEqual(engine["clean"], twin["clean"], delta=1e-3)
            self.assertAlmostEqual(engine["corrupt"], twin["corrupt"], delta=1e-3)
            self.assertEqual(sorted(engine["restored"]), sorted(twin["restored"]))
            for name, row in engine["restored"].items():
                self.assertEqual(len(row), len(twin["restored"][name]))
                for p, (a, b) in enumerate(zip(row, twin["restored"][name])):
                    with self.subTest(seed=seed, component=name, position=p):
                        self.assertAlmostEqual(a, b, delta=1e-6)
                    cells += 1
                    moved += abs(a) > 0.05 and not name == "resid.b0"
        self.assertEqual(cells, 2 * 2 * 8 * (6 + 4 + 1))  # reversal: letter 1 is answer letter 4
        self.assertGreaterEqual(moved, 4, "the map restores nothing beyond the embeddings")

    def test_patching_the_wrong_position_disagrees(self) -> None:
        """The comparison above can fail: a map whose positions are shifted by one differs."""
        (_, seed), r = min(self.patched.items())
        model, alphabet, _ = self.model(seed)
        twin = patching_map(model, alphabet, r["config"]["intervene"]["patch"])
        engine = r["ablated"]["patched"]["restored"]
        shifted = {k: v[1:] + v[:1] for k, v in twin["restored"].items()}
        worst = max(abs(a - b) for k in engine for a, b in zip(engine[k], shifted[k]))
        self.assertGreater(worst, 0.1)

    def test_the_other_head_disagrees(self) -> None:
        """The check above can fail: hooking the wrong head of the block disagrees with the
        engine on some string, for every target that names a head and moved a decode."""
        checked = 0
        for seed, off in sorted(self.off.items()):
            model, alphabet, trained = self.model(seed)
            inputs = trained["train"]["test"]["inputs"]
            for target, engine in off["ablated"]["targets"].items():
                if "@" in target:
                    continue
                swapped = other_head(target)
                if swapped is None or engine["test"]["outputs"] == trained["train"]["test"]["outputs"]:
                    continue
                with torch.no_grad(), switched_off(model, swapped):
                    ours = greedy(model, inputs, alphabet)
                with self.subTest(seed=seed, target=target, hooked=swapped):
                    self.assertNotEqual(ours, engine["test"]["outputs"])
                checked += 1
        self.assertGreaterEqual(checked, 6)


    def test_the_other_place_disagrees(self) -> None:
        """The check of restricted targets can fail: zeroing the part at the other place
        disagrees with the engine on some string, for every such target that moved one."""
        checked = 0
        for seed, off in sorted(self.off.items()):
            model, alphabet, trained = self.model(seed)
            inputs = trained["train"]["test"]["inputs"]
            for target, engine in off["ablated"]["targets"].items():
                if "@" not in target or engine["test"]["outputs"] == trained["train"]["test"]["outputs"]:
                    continue
                part, _, place = target.partition("@")
                other = part + "@" + ("answer" if place == "input" else "input")
                with self.subTest(seed=seed, target=target, hooked=other):
                    self.assertNotEqual(decodes(model, alphabet, inputs, other), engine["test"]["outputs"])
                checked += 1
        self.assertGreaterEqual(checked, 4)


if __name__ == "__main__":
    unittest.main()
