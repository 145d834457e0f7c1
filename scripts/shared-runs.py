#!/usr/bin/env python3
"""Runs of words a chapter shares with another text: how close its sentences sit to a source.

    scripts/shared-runs.py book/chapter-1.md ../shared/seed/000_901a2d74470b48bb.txt [--min 8]

Both texts are reduced to lower-case words (letters, digits and apostrophes); the chapter is
first stripped as scripts/prose-words.py strips it (fences, display math, tables and the
inline constructs), so code and computed text do not count. A run is a longest stretch of
consecutive words that occurs, in the same order, in both; every run of at least --min
words (8 by default) is printed with its length, and the last line gives their count.
"""
import argparse
import importlib.util
import pathlib
import re

_spec = importlib.util.spec_from_file_location(
    "prose_words", pathlib.Path(__file__).resolve().parent / "prose-words.py"
)
_prose_words = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_prose_words)
prose = _prose_words.prose  # the same stripping the word count uses



def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("’", "'"))


def runs(a: list[str], b: list[str], least: int) -> list[tuple[int, int]]:
    """Maximal common runs (start in a, length) of at least `least` words."""
    grams: dict[tuple[str, ...], list[int]] = {}
    for j in range(len(b) - least + 1):
        grams.setdefault(tuple(b[j : j + least]), []).append(j)
    found = []
    i = 0
    while i <= len(a) - least:
        starts = grams.get(tuple(a[i : i + least]))
        if not starts:
            i += 1
            continue
        best = 0
        for j in starts:
            n = least
            while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
                n += 1
            best = max(best, n)
        found.append((i, best))
        i += best
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("chapter")
    ap.add_argument("source")
    ap.add_argument("--min", type=int, default=8)
    args = ap.parse_args()
    a = tokens(prose(open(args.chapter, encoding="utf-8").read()))
    b = tokens(open(args.source, encoding="utf-8").read())
    found = runs(a, b, args.min)
    for i, n in found:
        print(f"{n:3d}  {' '.join(a[i : i + n])}")
    print(f"{len(found)} runs of {args.min} or more words shared")


if __name__ == "__main__":
    main()
