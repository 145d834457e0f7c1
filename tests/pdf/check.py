#!/usr/bin/env python3
"""Checks a built book's print edition against its site and its claims.

    tests/pdf/check.py SITE CLAIMS [--pages N] [--name NAME] [--places td,note,answer,figcaption]

SITE is the built site (its index links the PDF), CLAIMS the book's claims.json. With
poppler's tools it checks that:
  - the PDF is the one the index links, and its pages number at least --pages;
  - every font is embedded (pdffonts), the PDF is tagged and has a title (pdfinfo);
  - every checked figure, inserted value and literal appears in the PDF's text (pdftotext,
    in reading order or, for tables, with -layout) in its place: with the words the site's
    page prints just before or just after it (up to CONTEXT characters, within its
    paragraph, table row, caption or footnote), as often as claims have those words, and
    the page prints as many of each kind as claims.json lists;
  - dropping any one of them would be caught: with its value taken out of the text where
    it is printed, the check no longer finds it (tests/pdf/selftest.py drops claims from
    the fixture textbook's PDF by its own means); --places td,note,answer,… requires such
    claims in table cells, footnotes, answers, captions;
  - every asserted statement's words appear, as often as statements say them;
  - every "Figure N.M", "Table N.M" and equation "(N.M)" the site's pages number appears
    in it, and it declares PDF/UA-1;
and renders its first pages to tests/artifacts/pdf-NAME-page-K.png for a person to see.
Text is compared with whitespace, hyphens and quote styles ignored, since typesetting
breaks lines, hyphenates words and curls quotes.
"""
import html
import json
import pathlib
import re
import subprocess
import tempfile
import sys
import unicodedata
from html.parser import HTMLParser

ARTIFACTS = pathlib.Path(__file__).resolve().parents[1] / "artifacts"


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def norm(s: str) -> str:
    s = unicodedata.normalize("NFKC", s)
    s = s.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    s = s.replace("\u2212", "-")
    return re.sub(r"[\s\-\u00ad\u2010\u2011]+", "", s)


# How much of a claim's surroundings, normalised, identifies it in the PDF's text: up to
# CONTEXT characters on each side, and a side shorter than SIDE_MIN is not used alone.
CONTEXT = 16
SIDE_MIN = 6

# Elements that run on inside a block; every other element starts and ends one.
INLINE = {"span", "a", "em", "strong", "b", "i", "code", "sub", "small", "mark", "abbr", "cite", "q", "s", "u",
          "var", "kbd", "samp", "time", "bdi", "dfn", "td", "th"}
# Elements whose text the PDF does not print as the page does: left out, and a boundary.
SKIP_TAGS = {"script", "style", "svg", "button", "template", "nav", "header", "footer", "noscript", "select",
             "textarea", "title", "head", "sup"}
SKIP_CLASSES = {"katex", "katex-display", "fn-num", "fn-again", "fn-ref"}
# Elements the page does not show (tooltips, text for screen readers): left out, and no
# boundary, since the text on either side runs on.
HIDDEN_CLASSES = {"claim-tip", "sr-only", "visually-hidden"}
VOID = {"br", "hr", "img", "input", "meta", "link", "wbr", "col", "source", "area", "base", "embed", "param",
        "track"}


class Claim:
    """A claim as the site's page prints it: its value, its kind (from its class), the text
    of its block before and after it, and where it sits (a table cell, a footnote, an
    answer, a caption)."""

    def __init__(self, page: str, kind: str, where: list[str]):
        self.page, self.kind, self.where = page, kind, where
        self.value = ""
        self.before = ""
        self.after = ""
        # Which block of its page it is in, and whether the PDF prints that whole block
        # as the page does (see `mark_whole`): then the block is its key.
        self.block = 0
        self.whole = False
        self.whole_key = 0
        # In a table row: the row's text from its first claim on, before this one.
        self.from_first = None

    def block_keys(self) -> list[tuple[str, int]]:
        """Its whole block, normalised, with where its value starts in it; in a table row
        also the row from its first claim on (its label cells may wrap in the PDF)."""
        out = []
        for before in [self.before] + ([self.from_first] if self.from_first is not None else []):
            b = norm(before)
            out.append((b + norm(self.value) + norm(self.after), len(b)))
        return out

    def block_key(self) -> tuple[str, int]:
        """The block key the PDF prints whole (see `mark_whole`), else the whole block's."""
        keys = self.block_keys()
        return keys[min(self.whole_key, len(keys) - 1)]

    def keyed(self) -> list[tuple[str, int]]:
        """The strings that find it in the PDF's normalised text, each with where its value
        starts in it: its value with the text just before it, and with the text just after
        it; both sides together when neither is long enough alone (the bare value when its
        block holds nothing else)."""
        b, a, v = norm(self.before)[-CONTEXT:], norm(self.after)[:CONTEXT], norm(self.value)
        keys = []
        if len(b) >= SIDE_MIN:
            keys.append((b + v, len(b)))
        if len(a) >= SIDE_MIN:
            keys.append((v + a, 0))
        if not keys:
            keys.append((b + v + a, len(b)))
        return keys

    def keys(self) -> list[str]:
        if self.whole:
            return [BLOCK + self.block_key()[0]]
        return [k for k, _ in self.keyed()]

    def label(self) -> str:
        place = "/".join(self.where) or "prose"
        return f"{self.page} ({place}) {self.kind} `{self.value}` after “{self.before[-30:].strip()}”"


class PageClaims(HTMLParser):
    """Every claim of a page with the text of its block around it. A block is a paragraph,
    a list item, a table row, a caption, a heading or a footnote's note; math, footnote
    markers, tooltips and buttons end the text on either side, since the PDF prints them
    otherwise or not at all."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.page = page
        self.stack: list[tuple[str, str]] = []  # (tag, role): role in "", skip, claim, value, note, …
        self.block: list = []  # text pieces (str) and Claim objects
        self.claims: list[Claim] = []
        self.current: Claim | None = None
        self.blocks = 0

    def _skipping(self) -> bool:
        return any(role in ("skip", "hide") for _, role in self.stack)

    def _where(self) -> list[str]:
        out = []
        for tag, role in self.stack:
            if role in ("note", "answer") or tag in ("td", "th", "figcaption", "caption") or tag[:1] == "h" and tag[1:].isdigit():
                w = role or tag
                if w not in out:
                    out.append(w)
        return out

    def _boundary(self):
        """Ends the block: each claim in it gets the text on either side."""
        self.blocks += 1
        first = next((k for k, x in enumerate(self.block) if isinstance(x, Claim)), 0)
        for k, item in enumerate(self.block):
            if isinstance(item, Claim):
                item.block = self.blocks
                if "td" in item.where:
                    item.from_first = "".join(x if isinstance(x, str) else x.value for x in self.block[first:k])
                item.before = "".join(x if isinstance(x, str) else x.value for x in self.block[:k])
                item.after = "".join(x if isinstance(x, str) else x.value for x in self.block[k + 1 :])
        self.block = []

    def handle_starttag(self, tag, attrs):
        classes = set((dict(attrs).get("class") or "").split())
        if tag in VOID:
            if not self._skipping() and tag not in ("wbr",):
                self._boundary()
            return
        role = ""
        if classes & HIDDEN_CLASSES:
            role = "hide"
        elif tag in SKIP_TAGS or classes & SKIP_CLASSES:
            role = "skip"
        elif "claim" in classes and "claim-assert" not in classes:
            role = "claim"
        elif "claim-value" in classes and self.stack and self.stack[-1][1] == "claim":
            role = "value"
        elif "fn-note" in classes or "footnote-block" in classes:
            role = "note"
        elif tag == "details" and "answer" in classes:
            role = "answer"
        if not self._skipping() and (tag not in INLINE or role in ("skip", "note")):
            self._boundary()
        if role == "claim" and not self._skipping():
            kind = "checked" if classes & {"claim-ok", "claim-fail"} else "inserted" if "claim-insert" in classes else "literal"
            self.current = Claim(self.page, kind, self._where())
            self.claims.append(self.current)
            self.block.append(self.current)
        self.stack.append((tag, role))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        # Pop to the matching tag (HTML that omits an end tag closes what it holds).
        while self.stack:
            t, role = self.stack.pop()
            if role == "claim":
                self.current = None
            if not self._skipping() and (t not in INLINE or role in ("skip", "note")):
                self._boundary()
            if t == tag:
                break

    def handle_data(self, data):
        if self._skipping():
            return
        if self.stack and self.stack[-1][1] == "value" and self.current is not None:
            self.current.value += data
        elif self.current is not None and any(role == "claim" for _, role in self.stack):
            pass  # a claim's other parts (none printed but its value)
        else:
            self.block.append(data)

    def close(self):
        super().close()
        self._boundary()


def page_claims(site: pathlib.Path) -> list[Claim]:
    out = []
    for page in sorted(site.glob("*.html")):
        html = page.read_text(encoding="utf-8")
        if 'class="claim' not in html:
            continue
        p = PageClaims(page.name)
        p.feed(html)
        p.close()
        out += p.claims
    return out


def occurrences(text: str, key: str) -> list[int]:
    """Where `key` starts in `text`, overlapping occurrences included."""
    out, k = [], text.find(key)
    while k >= 0:
        out.append(k)
        k = text.find(key, k + 1)
    return out


# Marks a key that is a whole block, counted by blocks rather than by claims.
BLOCK = "\x00"


def wanted(claims: list[Claim]) -> dict[str, int]:
    """How many claims have each key (a whole block's key: how many blocks)."""
    want: dict[str, int] = {}
    # A block's key is wanted as often as blocks have it, whichever key their claims use.
    blocks: dict[str, set] = {}
    for c in claims:
        for k, _ in c.block_keys():
            blocks.setdefault(BLOCK + k, set()).add((c.page, c.block))
        # A shorter key as often as claims have it, whichever key they are found by.
        for k, _ in c.keyed():
            want[k] = want.get(k, 0) + 1
    for k, b in blocks.items():
        want[k] = len(b)
    return want


def found(c: Claim, texts: list[str], want: dict[str, int]) -> bool:
    """Whether one of the texts has one of the claim's keys at least as often as claims have
    that key: one occurrence never satisfies two claims."""
    return any(len(occurrences(t, k.removeprefix(BLOCK))) >= want[k] for t in texts for k in c.keys())


def mark_whole(claims: list[Claim], texts: list[str]) -> None:
    """Marks the claims whose whole block (paragraph, table row, caption, note) the PDF's
    text holds as the page prints it, as often as the pages print it: each of those is then
    looked for with its block, so that dropping any value of the block is caught, even one
    of several equal values side by side (a row of `1.11 1.11 1.11`). A block the PDF
    breaks (a wrapped table cell, a page break) keeps its claims' shorter keys."""
    for c in claims:
        c.whole = False
    counts: dict[str, set] = {}
    for c in claims:
        for key, _ in c.block_keys():
            counts.setdefault(key, set()).add((c.page, c.block))
    for c in claims:
        for n, (key, _) in enumerate(c.block_keys()):
            if any(len(occurrences(t, key)) >= len(counts[key]) for t in texts):
                c.whole, c.whole_key = True, n
                break


def unfound(claims: list[Claim], texts: list[str]) -> list[Claim]:
    """The claims the PDF's texts lack (see `found`)."""
    want = wanted(claims)
    return [c for c in claims if not found(c, texts, want)]


def dropped(claim: Claim, text: str) -> str:
    """The text with this claim's printed value taken out where the PDF prints it (the
    first place its fullest key occurs); the text as it is when it is not there."""
    b, a, v = norm(claim.before)[-CONTEXT:], norm(claim.after)[:CONTEXT], norm(claim.value)
    first = [claim.block_key()] if claim.whole else []
    for key, at in [*first, (b + v + a, len(b)), *claim.keyed()]:
        k = text.find(key)
        if k >= 0:
            return text[: k + at] + text[k + at + len(v) :]
    return text


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
    return without_changes("\n".join(pages))


# The appendix that compares this edition with the last quotes sentences of both, this
# edition's figures among them: a figure dropped from its chapter would still be found
# there. Its text runs from its heading (a line of its own, unlike the contents' entry) to
# the print colophon's heading, or to the end.
CHANGES_HEAD = "Changes in this edition"
AFTER_CHANGES = "Colophon of the print edition"


def without_changes(text: str) -> str:
    lines = text.split("\n")
    try:
        start = next(k for k, l in enumerate(lines) if l.strip() == CHANGES_HEAD)
    except StopIteration:
        return text
    end = next((k for k in range(start, len(lines)) if lines[k].strip() == AFTER_CHANGES), len(lines))
    return "\n".join(lines[:start] + lines[end:])


HEADS: set[str] = set()


# The page of book.typ at RESOLUTION dots per inch: A4, margins left and right 2.4 cm, top
# 2.6 cm, bottom 2.4 cm. The running head sits in the top margin, the page number in the
# bottom one; nothing else may.
RESOLUTION = 36
MARGIN_CM = {"x": 2.4, "top": 2.6, "bottom": 2.4}
INK = 200  # a grey level darker than this is ink


def pgm(path: pathlib.Path) -> tuple[int, int, bytes]:
    """Width, height and pixels of a binary PGM (what `pdftoppm -gray` writes)."""
    data = path.read_bytes()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos : pos + 1].isspace():
            pos += 1
        if data[pos : pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end : end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos + 1 : pos + 1 + w * h]


def ink_outside_text_area(pdf: pathlib.Path, pages: int) -> list[str]:
    """Pages after the title page whose ink leaves the text area (`page_problems`)."""
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        prefix = pathlib.Path(tmp) / "p"
        run("pdftoppm", "-gray", "-r", str(RESOLUTION), "-f", "2", "-l", str(pages), str(pdf), str(prefix))
        for f in sorted(pathlib.Path(tmp).glob("p-*.pgm")):
            page = int(f.stem.split("-")[-1])
            out += [f"page {page}: {p}" for p in page_problems(*pgm(f))]
    return out


def page_problems(w: int, h: int, pix: bytes) -> list[str]:
    """What of a page's ink lies outside its text area: anything in the side margins, more
    than one line of running head in the top margin, or anything in the bottom margin
    beyond the page number's short centred box. A figure too tall for its page is clipped
    at the top or prints its caption over the page number: both show."""
    px = lambda cm: round(cm / 2.54 * RESOLUTION)
    x, top, bottom = px(MARGIN_CM["x"]), px(MARGIN_CM["top"]), px(MARGIN_CM["bottom"])
    dark = lambda r, c: pix[r * w + c] < INK
    # 1 px of slack at each edge of the text area, for antialiasing.
    side = [(r, c) for r in range(h) for c in list(range(0, x - 1)) + list(range(w - x + 1, w)) if dark(r, c)]
    head_rows = sorted({r for r in range(0, top - 1) for c in range(w) if dark(r, c)})
    foot_cols = sorted({c for r in range(h - bottom + 1, h) for c in range(w) if dark(r, c)})
    out = []
    if side:
        out.append(f"ink in the side margins ({len(side)} px, first at row {side[0][0]})")
    if head_rows and head_rows[-1] - head_rows[0] > 10:
        out.append(f"the top margin holds more than the running head (rows {head_rows[0]}-{head_rows[-1]})")
    if foot_cols and (foot_cols[-1] - foot_cols[0] > w // 10 or abs((foot_cols[0] + foot_cols[-1]) / 2 - w / 2) > w // 20):
        out.append(f"the bottom margin holds more than the page number (columns {foot_cols[0]}-{foot_cols[-1]})")
    return out


def twins_in_appendix(site: pathlib.Path, text: str, wanted: int | None) -> list[str]:
    """The print edition's appendix of listings in other languages: its heading for each
    language, and the longest lines of every twin the site shows in a tab (a twin prints
    only there). `wanted`: how many twins the site must have."""
    failures = []
    twins = []
    for page in sorted(site.glob("*.html")):
        page_html = page.read_text(encoding="utf-8")
        panels = re.finditer(r'role="tabpanel" id="[^"]*-panel-(\d+)"[^>]*data-label="([^"]*)">(.*?)</div>', page_html, re.S)
        for m in panels:
            if m.group(1) == "1":
                continue
            pre = re.search(r"<pre[^>]*>(.*?)</pre>", m.group(3), re.S)
            code = html.unescape(re.sub(r"<[^>]+>", "", pre.group(1) if pre else ""))
            lines = sorted((ln.strip() for ln in code.splitlines() if len(norm(ln)) >= 12), key=len, reverse=True)[:3]
            if not lines:
                failures.append(f"{page.name}: a {m.group(2)} tab without code")
            twins.append((page.name, m.group(2), lines))
    for label in sorted({label for _, label, _ in twins}):
        if norm(f"The listings in {label}") not in text and norm("The listings in other languages") not in text:
            failures.append(f"the PDF has no appendix of the listings in {label}")
    lost = [(p, label, ln) for p, label, lines in twins for ln in lines if norm(ln) not in text]
    lines = sum(len(ls) for _, _, ls in twins)
    print(f"listings' twins in the appendix: {len(twins)}, their longest lines {lines - len(lost)} of {lines} found")
    failures += [f"{p}: the {label} line `{ln}` is not in the PDF" for p, label, ln in lost]
    if wanted is not None and len(twins) != wanted:
        failures.append(f"the site shows {len(twins)} listings' twins; --twins asks for {wanted}")
    return failures


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
    required_places: list[str] = []
    if "--places" in args:
        k = args.index("--places")
        required_places = args[k + 1].split(",")
        del args[k : k + 2]
    twins_wanted: int | None = None
    if "--twins" in args:
        k = args.index("--twins")
        twins_wanted = int(args[k + 1])
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
    # In reading order pdftotext gives a table column by column; with -layout, row by row.
    texts = [text, norm(body_text(run("pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-")))]
    claims = json.loads(claims_path.read_text(encoding="utf-8"))

    # Figures, inserts and literals: each where the site's page prints it, with its words
    # around it (see `Claim.keyed`), so that dropping any one of them fails.
    printed = page_claims(site)
    mark_whole(printed, texts)
    for kind in ("checked", "inserted", "literal"):
        listed = sum(1 for c in claims if c["kind"] == kind and (c.get("formatted") if kind != "literal" else c.get("quoted")))
        on_pages = sum(1 for c in printed if c.kind == kind)
        lost = unfound([c for c in printed if c.kind == kind], texts)
        print(f"{kind}: {on_pages - len(lost)} of {on_pages} found in the PDF's text in their place ({listed} in claims.json)")
        if on_pages != listed:
            failures.append(f"claims.json lists {listed} {kind} claims, the site's pages print {on_pages}")
        failures += [f"{c.label()} is not in the PDF in its place" for c in lost]
    weak = [c for c in printed if min(len(k) for k in c.keys()) < SIDE_MIN + len(norm(c.value))]
    print(f"claims with fewer than {SIDE_MIN} characters of text around them: {len(weak)}")
    # The check itself: take each claim's value out of the text where the PDF prints it; the
    # check must then miss it. A claim whose words around it occur elsewhere too would pass.
    want = wanted(printed)
    lost = set(map(id, unfound(printed, texts)))
    places: dict[str, list[int]] = {}
    for c in printed:
        if id(c) in lost:
            continue
        still = found(c, [dropped(c, t) for t in texts], want)
        for w in c.where or ["prose"]:
            places.setdefault(w, [0, 0])
            places[w][1] += 1
            places[w][0] += 0 if still else 1
        if still:
            failures.append(f"{c.label()}: with it dropped from the PDF's text the check still finds it")
    print("dropping one claim is caught: " + ", ".join(f"{w} {n} of {t}" for w, (n, t) in sorted(places.items())))
    for w in required_places:
        if w not in places:
            failures.append(f"no claim in a {w} to drop (--places {','.join(required_places)})")

    # Asserted statements: their words, as often as statements say them.
    stated = []
    skipped = 0
    for c in claims:
        if c["kind"] != "asserted":
            continue
        words = statement_text(c.get("quoted") or "")
        if words is None:
            skipped += 1
        elif norm(words):
            stated.append((c, norm(words)))
    times: dict[str, int] = {}
    for _, w in stated:
        times[w] = times.get(w, 0) + 1
    missing = [(c, w) for c, w in stated if len(occurrences(text, w)) < times[w]]
    print(f"asserted: {len(stated) - len(missing)} of {len(stated)} found in the PDF's text")
    failures += [f"{c['file']}:{c['line']}:{c['col']}: asserted `{c.get('quoted')}` is not in the PDF" for c, _ in missing]
    print(f"asserted statements left out (their text holds inserts, math or citations): {skipped}")
    if not any(c.kind == "checked" for c in printed):
        failures.append("the site's pages print no checked figure to look for")

    numbers: set[str] = set()
    exercises: set[str] = set()
    for page in sorted(site.glob("*.html")):
        html = page.read_text(encoding="utf-8")
        numbers |= set(re.findall(r'class="(?:fig|tab)-num">((?:Figure|Table) [A-Z0-9]+\.\d+)', html))
        numbers |= set(re.findall(r'class="eq-num">(\([A-Z0-9]+\.\d+\))<', html))
        exercises |= set(re.findall(r'class="sec-num">(Exercise [A-Z0-9]+\.\d+)<', html))
    numbers |= exercises
    missing = sorted(n for n in numbers if norm(n) not in text)
    print(f"figure, table, equation and exercise numbers: {len(numbers) - len(missing)} of {len(numbers)} found ({len(exercises)} exercises)")
    failures += [f"{n} is not in the PDF" for n in missing]
    if not numbers:
        failures.append("the site numbers no figure or table")

    failures += twins_in_appendix(site, text, twins_wanted)

    outside = ink_outside_text_area(pdf, pages)
    print(f"pages whose ink leaves the text area (a figure or table too big for its page): {len(outside)}")
    failures += outside

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
