"""The PyTorch twin against the engine, for every model a built site exports.

For each model of SITE/models/manifest.json (SITE defaults to ``site``), the twin
(python/revtx_twin) loads the exported weights and must

* decode every test and long string of models/decodes.json exactly as the engine did,
* and give the engine's attention weights for the manifest's input within 1e-5, every
  layer and head.

A self-test then breaks the twin on purpose, one way at a time (a wrong attention scale,
a transposed head split), and requires the same comparison to fail, so that a pass above
means something. The figures go to tests/artifacts/twin-exported.json.

    PYTHONPATH=<torch's site>:python python3 -m unittest tests/python/test_exported.py -v
"""

from __future__ import annotations

import __future__
import inspect
import json
import os
import textwrap
import time
import unittest
from pathlib import Path
from unittest import mock

import torch

from revtx_twin import model as twin
from revtx_twin.model import Alphabet, Transformer, attention_of, greedy
from revtx_twin.weights import load_export

TOLERANCE = 1e-5
REPO = Path(__file__).resolve().parents[2]
ARTIFACT = REPO / "tests" / "artifacts" / "twin-exported.json"

# Each test's figures, written out once every test has run.
RESULTS: dict = {"tolerance": TOLERANCE, "models": [], "broken": []}


def setUpModule() -> None:
    torch.set_num_threads(1)


def tearDownModule() -> None:
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    # An infinite difference (shapes that differ) is written as null: JSON has no inf.
    finite = json.loads(json.dumps(RESULTS), parse_constant=lambda _: None)
    ARTIFACT.write_text(json.dumps(finite, indent=2) + "\n")


def site_models() -> tuple[Path, dict, dict]:
    """The exported models' folder, its manifest and the engine's decodes."""
    models = Path(os.environ.get("SITE", "site")) / "models"
    manifest = json.loads((models / "manifest.json").read_text())
    decodes = json.loads((models / "decodes.json").read_text())
    return models, manifest, decodes


def compare(models: Path, entry: dict, engine: dict) -> dict:
    """The twin against the engine for one model: decodes compared and matched, and the
    largest difference between the two attentions (infinite if their shapes differ)."""
    config, task, state = load_export(models, entry["id"])
    model = Transformer(config)
    model.load_state_dict(state)  # strict: every name and shape must be the engine's
    model.eval()
    alphabet = Alphabet.of_model(task, model.cfg.vocab)
    compared, matched, wrong = 0, 0, []
    with torch.no_grad():
        for name in ("test", "long"):
            inputs, outputs = engine[name]["inputs"], engine[name]["outputs"]
            if not inputs or len(inputs) != len(outputs):
                raise ValueError(f"{entry['id']}: {len(inputs)} {name} inputs, "
                                 f"{len(outputs)} outputs")
            for text, want, got in zip(inputs, outputs, greedy(model, inputs, alphabet)):
                compared += 1
                matched += got == want
                if got != want and len(wrong) < 3:
                    wrong.append(f"{text}: engine {want}, twin {got}")
        attn = engine.get("attention") or entry["attention"]
        ours = torch.stack(attention_of(model, alphabet.encode("".join(attn["tokens"]))))
    theirs = torch.tensor(attn["weights"])  # (layers, heads, queries, keys)
    if ours.shape == theirs.shape and theirs.numel() > 0:
        worst = (ours - theirs).abs().max().item()
    else:
        worst = float("inf")
    return {
        "id": entry["id"],
        "decodes": compared,
        "matched": matched,
        "max_attention_diff": worst,
        "attention_shape": list(theirs.shape),
        "differing": wrong,
    }


def agrees(r: dict) -> bool:
    return r["decodes"] > 0 and r["matched"] == r["decodes"] and \
        r["max_attention_diff"] <= TOLERANCE


def line(r: dict) -> str:
    return (f"{r['id']:<18} decodes equal {r['matched']}/{r['decodes']}, "
            f"max attention diff {r['max_attention_diff']:.2e}")


class EngineParity(unittest.TestCase):
    def test_every_model_agrees_with_the_engine(self) -> None:
        models, manifest, decodes = site_models()
        entries = manifest["models"]
        results = []
        for entry in entries:
            with self.subTest(model=entry["id"]):
                self.assertIn(entry["id"], decodes, "decodes.json lacks this model")
                start = time.perf_counter()
                r = compare(models, entry, decodes[entry["id"]])
                r["seconds"] = round(time.perf_counter() - start, 3)
                print(line(r))
                results.append(r)
                RESULTS["models"].append(r)
                self.assertEqual(r["matched"], r["decodes"], r["differing"])
                self.assertLessEqual(r["max_attention_diff"], TOLERANCE)
        # A site with no models, or a comparison that skipped one, proves nothing.
        self.assertGreater(len(results), 0, "no model compared")
        self.assertEqual(len(results), len(entries))


def rewritten(func, old: str, new: str):
    """``func`` recompiled from its own source with ``old`` (once) replaced by ``new``,
    in the twin module's namespace: the real code with exactly one change."""
    lines, first = inspect.getsourcelines(func)
    source = textwrap.dedent("".join(lines))
    assert source.count(old) == 1, f"{func.__qualname__} no longer contains {old!r}"
    source = "\n" * (first - 1) + source.replace(old, new)  # tracebacks keep the file's lines
    code = compile(source, inspect.getsourcefile(func), "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    namespace: dict = {}
    exec(code, vars(twin), namespace)
    return namespace[func.__name__]


class SelfTestBrokenTwinFails(unittest.TestCase):
    """The comparison above can fail: each deliberately broken twin must disagree."""

    BREAKAGES = {
        # Scores divided by d_k instead of √d_k.
        "scale_by_d_k": lambda: mock.patch.object(twin, "attention", rewritten(
            twin.attention, "scores / math.sqrt(d_k)", "scores / d_k")),
        # Heads and positions swapped: (batch, tokens, d_model) read as (b, h, t, d_k).
        "transposed_head_split": lambda: mock.patch.object(
            twin.MultiHeadAttention, "reference", rewritten(
                twin.MultiHeadAttention.reference,
                "z.view(b, t, h, d_k).transpose(1, 2)", "z.reshape(b, h, t, d_k)")),
    }

    def test_each_breakage_is_caught(self) -> None:
        models, manifest, decodes = site_models()
        entry = next(m for m in manifest["models"] if m["id"] == "reference")
        for name, breakage in self.BREAKAGES.items():
            with self.subTest(breakage=name), breakage():
                r = compare(models, entry, decodes[entry["id"]])
                r["breakage"] = name
                print(f"broken ({name}): {line(r)}")
                RESULTS["broken"].append(r)
                self.assertFalse(agrees(r), f"the twin broken by {name} still agrees")
        # Unpatched again, the same model agrees.
        self.assertTrue(agrees(compare(models, entry, decodes[entry["id"]])))


if __name__ == "__main__":
    unittest.main()
