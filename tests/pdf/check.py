#!/usr/bin/env python3
"""Checks a built book's print edition against its site and its claims.

    tests/pdf/check.py SITE CLAIMS [--pages N] [--name NAME]

SITE is the built site (its index links the PDF), CLAIMS the book's claims.json. With
poppler's tools it checks that:
  - the PDF is the one the index links, and its pages number at least --pages;
  - every font is embedded (pdffonts), the PDF is tagged and has a title (pdfinfo);
  - every checked figure's and inserted value's formatted text, and every asserted
    statement's words, appear in the PDF's text (pdftotext), with the counts;
  - every "Figure N.M", "Table N.M" and equation "(N.M)" the site's pages number appears
    in it, and it declares PDF/UA-1;
and renders its first pages to tests/artifacts/pdf-NAME-page-K.png for a person to see.
Text is compared with whitespace, hyphens and quote styles ignored, since typesetting
breaks lines, hyphenates words and curls quotes.
"""
import json
import pathlib
import re
import subprocess
import sys

ARTIFACTS = pathlib.Path(__file__).resolve().parents[1] / "artifacts"


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def norm(s: str) -> str:
    s = s.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    s = s.replace("\u2212", "-")
    return re.sub(r"[\s\-\u00ad\u2010\u2011]+", "", s)


CONSTRUCT = re.compile(r"\[([^\[\]]*)\]\{[=!][^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


def statement_text(quoted: str) -> str | None:
    """An asserted statement's words as a reader sees them, or None when its source holds
    constructs whose printed form this cannot know (inserts, math, references)."""
    s = quoted
    while True:
        t = CONSTRUCT.sub(r"\1", s)
        if t == s:
            break
        s = t
    if "{" in s or "$" in s or "[@" in s:
        return None
    return re.sub(r"[*`_]", "", s)


def body_text(raw: str) -> str:
    """The PDF's text without its running heads and page numbers, which would otherwise
    fall into a sentence that runs over a page break."""
    pages = []
    for page in raw.split("\f"):
        lines = [l for l in page.splitlines()]
        nonblank = [k for k, l in enumerate(lines) if l.strip()]
        if nonblank and lines[nonblank[-1]].strip().isdigit():
            del lines[nonblank[-1]]
        nonblank = [k for k, l in enumerate(lines) if l.strip()]
        # A running head is the page's first line when a later line starts the body.
        if len(nonblank) > 1 and lines[nonblank[0]].strip() in HEADS:
            del lines[nonblank[0]]
        pages.append("\n".join(lines))
    return "\n".join(pages)


HEADS: set[str] = set()


def main() -> int:
    args = sys.argv[1:]
    pages_min = 1
    name = "book"
    if "--pages" in args:
        k = args.index("--pages")
        pages_min = int(args[k + 1])
        del args[k : k + 2]
    if "--name" in args:
        k = args.index("--name")
        name = args[k + 1]
        del args[k : k + 2]
    site, claims_path = pathlib.Path(args[0]), pathlib.Path(args[1])
    failures: list[str] = []

    index = (site / "index.html").read_text(encoding="utf-8")
    linked = sorted(set(re.findall(r'href="([^"]+\.pdf)"', index)))
    if len(linked) != 1:
        print(f"FAIL: the index links {len(linked)} PDFs, not 1: {linked}")
        return 1
    pdf = site / linked[0]
    print(f"pdf: {pdf} ({pdf.stat().st_size // 1024} KiB)")

    info = run("pdfinfo", str(pdf))
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    print(f"pages: {pages}")
    if pages < pages_min:
        failures.append(f"{pages} pages, fewer than {pages_min}")
    if not re.search(r"^Tagged:\s+yes", info, re.M):
        failures.append("the PDF is not tagged")
    title = re.search(r"^Title:\s+(.+)$", info, re.M)
    if not title:
        failures.append("the PDF has no title")
    if b"pdfuaid:part" not in pdf.read_bytes():
        failures.append("the PDF does not declare PDF/UA-1 in its metadata")

    fonts = run("pdffonts", str(pdf)).splitlines()[2:]
    if not fonts:
        failures.append("pdffonts lists no fonts")
    not_embedded = [f for f in fonts if len(f.split()) >= 5 and f.split()[-5] != "yes"]
    print(f"fonts: {len(fonts)}, not embedded: {len(not_embedded)}")
    failures += [f"font not embedded: {f}" for f in not_embedded]

    for page in sorted(site.glob("*.html")):
        m = re.search(r"<h1[^>]*>(.*?)</h1>", page.read_text(encoding="utf-8"), re.S)
        if m:
            HEADS.add(re.sub(r"<[^>]+>", "", m.group(1)).strip())
    text = norm(body_text(run("pdftotext", "-enc", "UTF-8", str(pdf), "-")))
    claims = json.loads(claims_path.read_text(encoding="utf-8"))
    counts = {"checked": [0, 0], "inserted": [0, 0], "literal": [0, 0], "asserted": [0, 0]}
    skipped = 0
    for c in claims:
        kind = c["kind"]
        if kind in ("checked", "inserted"):
            want = c.get("formatted")
        elif kind == "literal":
            want = c.get("quoted")
        else:
            want = statement_text(c.get("quoted") or "")
            if want is None:
                skipped += 1
                continue
        if not want or not norm(want):
            continue
        counts[kind][1] += 1
        if norm(want) in text:
            counts[kind][0] += 1
        else:
            failures.append(f"{c['file']}:{c['line']}:{c['col']}: {kind} `{want}` is not in the PDF")
    for kind, (found, total) in counts.items():
        print(f"{kind}: {found} of {total} found in the PDF's text")
    print(f"asserted statements left out (their text holds inserts, math or citations): {skipped}")
    if counts["checked"][1] == 0:
        failures.append("claims.json holds no checked figure to look for")

    numbers = set()
    for page in sorted(site.glob("*.html")):
        html = page.read_text(encoding="utf-8")
        numbers |= set(re.findall(r'class="(?:fig|tab)-num">((?:Figure|Table) [A-Z0-9]+\.\d+)', html))
        numbers |= set(re.findall(r'class="eq-num">(\([A-Z0-9]+\.\d+\))<', html))
    missing = sorted(n for n in numbers if norm(n) not in text)
    print(f"figure, table and equation numbers: {len(numbers) - len(missing)} of {len(numbers)} found")
    failures += [f"{n} is not in the PDF" for n in missing]
    if not numbers:
        failures.append("the site numbers no figure or table")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    prefix = ARTIFACTS / f"pdf-{name}-page"
    run("pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "4", str(pdf), str(prefix))
    print(f"rendered pages 1-4 to {prefix}-*.png")

    for f in failures[:40]:
        print(f"FAIL: {f}")
    if len(failures) > 40:
        print(f"FAIL: … and {len(failures) - 40} more")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
