#!/usr/bin/env python3
"""Words of prose in a chapter: what a reader reads as text.

    scripts/prose-words.py book/chapter-1.md [more.md ...]

Removed before counting: fenced blocks (directives, code), display math, table rows and
`Table:` captions, and the inline constructs themselves (`{=…}`, `{?…}`, `{!…}`, `{#…}`,
`{@…}`); a quoted figure `[94.6%]` counts as one word, inline math `$…$` as one word.
Headings, list items and exercise prompts count. Issue 33's targets were counted this way.
"""
import re
import sys


def prose(text: str) -> str:
    """The chapter without fences, display math, table rows, captions and constructs."""
    s = re.sub(r"```.*?```", "", text, flags=re.S)
    s = re.sub(r"\$\$.*?\$\$", "", s, flags=re.S)
    s = re.sub(r"\{[=?!#@][^{}]*(\{[^{}]*\}[^{}]*)*\}", "", s)
    return "\n".join(l for l in s.split("\n") if not l.startswith("|") and not l.startswith("Table:"))


def words(text: str) -> int:
    s = re.sub(r"\$[^$]*\$", "X", prose(text))
    s = re.sub(r"[\[\]*`#]", " ", s)
    return len(s.split())


if __name__ == "__main__":
    total = 0
    for path in sys.argv[1:]:
        n = words(open(path, encoding="utf-8").read())
        total += n
        print(f"{n:6d}  {path}")
    if len(sys.argv) > 2:
        print(f"{total:6d}  total")
