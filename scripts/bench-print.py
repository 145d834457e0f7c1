#!/usr/bin/env python3
"""The print edition's cost, timed side by side: builds of the real book with a warm run
cache, in alternating rounds.

    scripts/bench-print.py [--bin target/release/revtx-book] [--root .] [--rounds 5]
                           [--json FILE]

  draft  `build --offline --no-pdf`: the site alone;
  warm   `build --offline` with the PDF in the cache (nothing changed since it was typeset);
  cold   `build --offline` after emptying the PDF cache (`<cache>/print/`), so the book is
         typeset again.
cold minus draft is the time typesetting adds; warm minus draft, what a build that changed
nothing in print pays. Prints medians and min–max with the PDF's pages and size, and with
--json (a file, or a directory such as bench/records/) writes them as a benchmark record
(scripts/bench_record.py) with the machine, the commit, the date and the command line.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_record  # noqa: E402


def timed(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/revtx-book")
    ap.add_argument("--root", default=".")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    out = os.path.join(a.root, "target/bench-print/site")
    cache = os.path.join(a.root, ".revtx-cache")
    base = [a.bin, "build", "--offline", "--quiet", "--root", a.root, "--out", out]
    # One build first: the runs must be cached, and the PDF typeset once.
    timed(base)
    times = {"draft": [], "warm": [], "cold": []}
    for _ in range(a.rounds):
        times["draft"].append(timed(base + ["--no-pdf"]))
        timed(base)
        times["warm"].append(timed(base))
        shutil.rmtree(os.path.join(cache, "print"), ignore_errors=True)
        times["cold"].append(timed(base))
    pdfs = [f for f in os.listdir(out) if f.endswith(".pdf")]
    pdf = os.path.join(out, pdfs[0])
    pages = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True).stdout
    pages = next((int(l.split()[1]) for l in pages.splitlines() if l.startswith("Pages:")), None)
    summary = {
        k: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v)}
        for k, v in times.items()
    }
    for k, s in summary.items():
        print(f"{k:6} median {s['median_s'] * 1000:7.1f} ms  (min {s['min_s'] * 1000:.1f}, max {s['max_s'] * 1000:.1f}; {a.rounds} rounds)")
    print(f"typesetting adds {(summary['cold']['median_s'] - summary['draft']['median_s']) * 1000:.0f} ms cold, "
          f"{(summary['warm']['median_s'] - summary['draft']['median_s']) * 1000:.0f} ms warm")
    print(f"pdf: {pdfs[0]}, {pages} pages, {os.path.getsize(pdf) // 1024} KiB")
    if a.json:
        path = bench_record.write(
            a.json,
            "print",
            [
                {"name": "draft build, --no-pdf", "value": summary["draft"]["median_s"] * 1000, "unit": "ms"},
                {"name": "build, PDF cached", "value": summary["warm"]["median_s"] * 1000, "unit": "ms"},
                {"name": "build, PDF typeset", "value": summary["cold"]["median_s"] * 1000, "unit": "ms"},
                {"name": "pages", "value": pages, "unit": "count"},
                {"name": "size", "value": os.path.getsize(pdf) / 1024, "unit": "KiB"},
            ],
            root=a.root,
            rounds=a.rounds,
            seconds=summary,
            pdf={"file": pdfs[0], "pages": pages, "bytes": os.path.getsize(pdf)},
        )
        print(f"record: {path}")


if __name__ == "__main__":
    main()
