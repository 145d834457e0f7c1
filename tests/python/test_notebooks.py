"""Every chapter's notebook, executed headless as a reader would run it, for a few steps.

`revtx-book build` writes `chapter-N.ipynb` beside each chapter page with a ```notebook
directive, and links it under the chapter's title (`a.notebook-link`). For every page of
SITE (default `site`) that links one, the notebook must be valid nbformat 4, and must run
top to bottom in a fresh Python kernel (nbclient) with REVTX_NOTEBOOK_STEPS steps (default
20) without an error, in an empty folder: its `%%writefile` cells write the twin there, so
it needs nothing from this repository. It must then have printed its decodes and drawn
its loss (an image), and decoded with each head of the model switched off in turn. A site whose pages link no notebook fails: a check that finds
nothing has checked nothing. The figures go to tests/artifacts/twin-notebooks.json.

    PYTHONPATH=.twin/site:python python3 -m unittest tests/python/test_notebooks.py -v
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
import unittest
from pathlib import Path

import nbformat
from nbclient import NotebookClient

SITE = Path(os.environ.get("SITE", "site"))
STEPS = os.environ.get("REVTX_NOTEBOOK_STEPS", "20")
ARTIFACTS = Path(os.environ.get("ARTIFACTS", "tests/artifacts"))


def linked_notebooks(site: Path) -> list[tuple[str, str]]:
    """(page, notebook) for every page of the site that links its notebook."""
    out = []
    for page in sorted(site.glob("*.html")):
        m = re.search(r'<a class="notebook-link" href="([^"]+)"', page.read_text())
        if m:
            out.append((page.name, m.group(1)))
    return out


class Notebooks(unittest.TestCase):
    def test_every_linked_notebook_runs(self):
        linked = linked_notebooks(SITE)
        self.assertTrue(linked, f"no page of {SITE} links a notebook")
        on_disk = sorted(p.name for p in SITE.glob("*.ipynb"))
        self.assertEqual(sorted(nb for _, nb in linked), on_disk,
                         "the notebooks in the site are not the ones its pages link")
        figures = {}
        for page, name in linked:
            with self.subTest(notebook=name):
                nb = nbformat.read(SITE / name, as_version=4)
                nbformat.validate(nb)
                start = time.time()
                with tempfile.TemporaryDirectory() as work:
                    os.environ["REVTX_NOTEBOOK_STEPS"] = STEPS
                    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                            resources={"metadata": {"path": work}})
                    client.execute()  # raises CellExecutionError on the first failing cell
                outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
                errors = [o for o in outputs if o.get("output_type") == "error"]
                self.assertFalse(errors, f"{name}: {errors[:1]}")
                text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
                self.assertRegex(text, r"->", f"{name} printed no decode")
                self.assertIn(f"step {STEPS}/{STEPS}", text, f"{name} did not train {STEPS} steps")
                config = json.loads(re.search(r'config = json.loads\("""(.*?)"""\)',
                                              "".join(c.source for c in nb.cells), re.S).group(1))
                heads = config["model"]["n_layers"] * config["model"]["n_heads"]
                switched = re.findall(r"^block \d+ head \d+ off: ", text, re.M)
                self.assertEqual(len(switched), heads,
                                 f"{name}: {len(switched)} heads decoded switched off, want {heads}")
                images = [o for o in outputs if "image/png" in o.get("data", {})]
                self.assertEqual(len(images), 1, f"{name}: {len(images)} images, want the loss plot")
                figures[name] = {"page": page, "cells": len(nb.cells), "steps": int(STEPS),
                                 "seconds": round(time.time() - start, 1)}
                print(f"{name} ({page}): {len(nb.cells)} cells, {STEPS} steps, "
                      f"ran in {figures[name]['seconds']} s")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "twin-notebooks.json").write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    unittest.main()
