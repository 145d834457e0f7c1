#!/usr/bin/env python3
"""The longest sentences of a built page, as a reader reads them (computed text included).

    scripts/sentences.py site/chapter-1.html [--over 45] [--top 5] [--text]

Reads the page's paragraphs and list items (answers included; captions, tables, code and
navigation left out), counts each piece of math as one word, splits at the end of each
sentence (. ? ! followed by a space and a capital, a quote or a bracket), and prints the
sentences longer than --over words, longest first, then the longest length.
"""
import argparse
import re
from html.parser import HTMLParser


class Prose(HTMLParser):
    """Text of each outermost <p> or <li>, without what a reader does not read as prose."""

    KEEP = {"p", "li"}
    SKIP_TAGS = {"figure", "figcaption", "table", "pre", "nav", "script", "style", "button"}
    SKIP_CLASS = re.compile(r"\b(claim-tip|xref-tip|sr-only|anchor)\b")
    VOID = {"br", "img", "input", "hr", "wbr", "meta", "link", "source"}

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self.stack: list[tuple[str, str]] = []  # per open element: its tag and "keep", "skip", "math" or ""
        self.buf: list[str] = []

    def _in(self, kind: str) -> bool:
        return any(k == kind for _, k in self.stack)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        cls = dict(attrs).get("class") or ""
        if self._in("skip") or self._in("math"):
            kind = ""
        elif tag == "span" and re.search(r"(^| )katex( |$)", cls):
            kind = "math"
            self.buf.append(" X ")
        elif tag in self.SKIP_TAGS or self.SKIP_CLASS.search(cls):
            kind = "skip"
        elif tag in self.KEEP and not self._in("keep"):
            kind = "keep"
        else:
            kind = ""
        self.stack.append((tag, kind))

    def handle_endtag(self, tag):
        if tag in self.VOID or all(t != tag for t, _ in self.stack):
            return
        # Close up to the matching tag: HTML lets some end tags be left out (</td>, </li>).
        while self.stack:
            t, kind = self.stack.pop()
            if kind == "keep":
                self.blocks.append("".join(self.buf))
                self.buf = []
            if t == tag:
                break
        if tag in self.KEEP and self._in("keep"):
            self.buf.append(" ")

    def handle_data(self, data):
        if self._in("keep") and not self._in("skip") and not self._in("math"):
            self.buf.append(data)


def sentences(block: str) -> list[str]:
    text = " ".join(block.split())
    return [s for s in re.split(r"(?<=[.?!])\s+(?=[A-Z“\"(\[{])", text) if s]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--over", type=int, default=45)
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--text", action="store_true", help="print the prose, a paragraph a line, and stop")
    args = ap.parse_args()
    p = Prose()
    p.feed(open(args.page, encoding="utf-8").read())
    if args.text:
        print("\n\n".join(" ".join(b.split()) for b in p.blocks))
        return
    all_s = [s for b in p.blocks for s in sentences(b)]
    counted = sorted(((len(s.split()), s) for s in all_s), reverse=True)
    if not counted:
        raise SystemExit(f"{args.page}: no sentences found")
    for n, s in counted:
        if n > args.over or counted.index((n, s)) < args.top:
            print(f"{n:3d}  {s}")
    print(f"{len(all_s)} sentences; the longest has {counted[0][0]} words; {sum(1 for n, _ in counted if n > args.over)} over {args.over}")


if __name__ == "__main__":
    main()
