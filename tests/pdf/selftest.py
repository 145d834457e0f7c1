#!/usr/bin/env python3
"""The PDF check against the fixture textbook's PDF with one claim taken out of it.

    tests/pdf/selftest.py target/textbook/site

Takes the text poppler extracts from the textbook's PDF, removes one printed claim at a
time (a table cell, a footnote's figure, an answer's, a caption's, one beside a formula,
one with a thousands separator, a percentage, a minus sign), found by the words the
fixture prints around it and not by the check's own keys, and asserts that the check of
tests/pdf/check.py then reports that claim missing (and no other, but a neighbour whose
surrounding words held it). The unedited text
must pass. A check that matched a claim's value anywhere in the document (as it once did)
fails here: every value below occurs elsewhere in the book.
"""
import importlib.util
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check", HERE / "check.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

# (what it is, the printed words around the claim with the claim in [brackets], the page
# and place of the claim as the check labels it)
CASES = [
    ("a table cell", "position table entries[1,600]", "appendix-a.html", "td"),
    ("a table cell with a percentage", "share of the steps[33.3%]", "appendix-a.html", "td"),
    ("a table cell with a minus sign", "steps, negated[−30]", "appendix-a.html", "td"),
    ("a footnote", "tested on [24] strings", "chapter-1.html", "note"),
    ("an answer", "More than [30]:", "chapter-1.html", "answer"),
    ("a caption", "loss over its [30] steps", "chapter-1.html", "figcaption"),
    ("a thousands separator, beside a formula", "the model has [103,244] parameters", "appendix-a.html", "prose"),
    ("beside a formula", "= [64], the model", "appendix-a.html", "prose"),
]


def drop(raw: str, phrase: str) -> str:
    """`raw` with the bracketed part of `phrase` removed where the phrase occurs, the
    phrase's words matched across any whitespace (the PDF breaks lines); unchanged when
    the phrase is not there."""
    import re

    before, rest = phrase.split("[", 1)
    value, after = rest.split("]", 1)
    ws = lambda s: r"\s*".join(re.escape(ch) for ch in s if not ch.isspace())
    m = re.search(f"({ws(before)}\\s*)({ws(value)})(\\s*{ws(after)})", raw)
    if not m:
        return raw
    return raw[: m.start(2)] + raw[m.end(2) :]


def page_cases() -> list[str]:
    """The page check of tests/pdf/check.py on drawn pages (A4 at its resolution): a page
    with its running head, its text and its page number passes; ink in a side margin, a
    figure's top in the top margin, or a caption beside the page number fails."""
    w, h = round(21.0 / 2.54 * check.RESOLUTION), round(29.7 / 2.54 * check.RESOLUTION)
    def page(*boxes: tuple[int, int, int, int]) -> bytes:
        pix = bytearray([255] * (w * h))
        for r0, r1, c0, c1 in boxes:
            for r in range(r0, r1):
                pix[r * w + c0 : r * w + c1] = bytes([0] * (c1 - c0))
        return bytes(pix)
    head = (20, 26, w - 120, w - 40)  # a line of running head, right-aligned
    text = (60, 300, 40, w - 40)  # the text area's ink
    number = (h - 20, h - 14, w // 2 - 3, w // 2 + 3)  # the page number
    failures = []
    if check.page_problems(w, h, page(head, text, number)):
        failures.append("a well-set page fails: " + "; ".join(check.page_problems(w, h, page(head, text, number))))
    for what, extra in [
        ("ink in the left margin", (100, 110, 5, 20)),
        ("a figure's top in the top margin", (5, 30, 60, 200)),
        ("a caption beside the page number", (h - 22, h - 15, 60, 240)),
    ]:
        if not check.page_problems(w, h, page(head, text, number, extra)):
            failures.append(f"{what}: the page check does not see it")
    return failures


def main() -> int:
    site = pathlib.Path(sys.argv[1])
    index = (site / "index.html").read_text(encoding="utf-8")
    pdf = site / check.re.search(r'href="([^"]+\.pdf)"', index).group(1)
    raws = [
        check.body_text(subprocess.run(["pdftotext", *mode, "-enc", "UTF-8", str(pdf), "-"], check=True,
                                       capture_output=True, text=True).stdout)
        for mode in ([], ["-layout"])
    ]
    for page in sorted(site.glob("*.html")):
        m = check.re.search(r"<h1[^>]*>(.*?)</h1>", page.read_text(encoding="utf-8"), check.re.S)
        if m:
            check.HEADS.add(check.re.sub(r"<[^>]+>", "", m.group(1)).strip())
    printed = check.page_claims(site)
    check.mark_whole(printed, [check.norm(r) for r in raws])
    failures = page_cases()
    lost = check.unfound(printed, [check.norm(r) for r in raws])
    if lost:
        failures.append("the unedited PDF fails: " + "; ".join(c.label() for c in lost))
    for what, phrase, page, place in CASES:
        edited = [drop(r, phrase) for r in raws]
        if all(e == r for e, r in zip(edited, raws)):
            failures.append(f"{what}: `{phrase}` is not in the PDF's text, so nothing was dropped")
            continue
        value = phrase.split("[", 1)[1].split("]", 1)[0]
        others = sum(check.norm(r).count(check.norm(value)) for r in edited)
        lost = check.unfound(printed, [check.norm(e) for e in edited])
        named = [c for c in lost if c.page == page and (c.where or ["prose"])[-1] == place and c.value == value]
        # A neighbour whose words around it held the dropped value is reported too.
        strays = [c for c in lost if c not in named and check.norm(value) not in check.norm(c.before + c.after)]
        if len(named) != 1 or strays:
            failures.append(f"{what}: with `{value}` dropped from `{phrase}` the check reports "
                            f"{[c.label() for c in lost]}, not that claim")
        else:
            print(f"ok: {what}: dropping `{value}` fails the check ({others} other occurrences of it remain)")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
