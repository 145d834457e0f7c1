/* revtx-book: page behaviour. Vanilla JS, no dependencies, loaded with `defer`.
 *
 *   1. Theme toggle      light/dark, stored in localStorage; default follows the system
 *   2. Table of contents toggle on narrow screens, and scroll spy (IntersectionObserver)
 *   3. Search            lazy-loads <root>search-index.json; combobox with keyboard support
 *   4. Quoted figures    tooltip placement (never clipped), Escape to dismiss
 *   5. Content helpers   scrollable tables, copy buttons, open run cards on #target, print
 *   6. Build-error overlay (serve mode): close button and Escape
 *
 * The page root (relative prefix, e.g. "" or "../") comes from <html data-root>.
 * Every feature checks that its elements exist, so a page without them is fine,
 * and nothing here throws if storage, the clipboard or the search index is missing.
 */
(function () {
  "use strict";

  var doc = document;
  var html = doc.documentElement;
  var ROOT = html.getAttribute("data-root") || "";

  function $(sel, ctx) {
    return (ctx || doc).querySelector(sel);
  }

  function $$(sel, ctx) {
    return Array.prototype.slice.call((ctx || doc).querySelectorAll(sel));
  }

  function mq(query) {
    return window.matchMedia ? window.matchMedia(query) : { matches: false };
  }

  function onChange(mql, fn) {
    if (mql.addEventListener) mql.addEventListener("change", fn);
    else if (mql.addListener) mql.addListener(fn);
  }

  /* Bottom edge of the sticky header, for placing things below it. */
  function headerBottom() {
    var h = $(".site-header");
    return h ? Math.max(0, h.getBoundingClientRect().bottom) : 0;
  }

  /* Is the keyboard focus in something the user types into? */
  function isTyping(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  /* ------------------------------------------------------------------ */
  /* 1. Theme                                                            */
  /* ------------------------------------------------------------------ */

  var THEME_KEY = "revtx-theme";
  var systemDark = mq("(prefers-color-scheme: dark)");
  var themeButton = $("#theme-toggle");

  function storageGet(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (e) {
      return null;
    }
  }

  function storageSet(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch (e) {
      /* private mode, quota, disabled storage: the choice lasts for this page only */
    }
  }

  function effectiveTheme() {
    var t = html.getAttribute("data-theme");
    if (t === "light" || t === "dark") return t;
    return systemDark.matches ? "dark" : "light";
  }

  function syncThemeButton() {
    if (!themeButton) return;
    var dark = effectiveTheme() === "dark";
    themeButton.setAttribute("aria-pressed", dark ? "true" : "false");
    themeButton.title = dark ? "Switch to light theme" : "Switch to dark theme";
  }

  function applyTheme(t) {
    if (t === "light" || t === "dark") html.setAttribute("data-theme", t);
    else html.removeAttribute("data-theme");
    syncThemeButton();
  }

  if (themeButton) {
    themeButton.addEventListener("click", function () {
      var next = effectiveTheme() === "dark" ? "light" : "dark";
      applyTheme(next);
      storageSet(THEME_KEY, next);
    });
  }
  onChange(systemDark, syncThemeButton);
  /* Another tab changed the theme. */
  window.addEventListener("storage", function (e) {
    if (e.key === THEME_KEY) applyTheme(e.newValue);
  });
  syncThemeButton();

  /* ------------------------------------------------------------------ */
  /* 2. Table of contents                                                */
  /* ------------------------------------------------------------------ */

  var toc = $("#toc");
  var tocButton = $("#toc-toggle");
  var narrow = mq("(max-width: 1099.98px)");

  function tocIsOpen() {
    return !!toc && toc.classList.contains("is-open");
  }

  function setToc(open, returnFocus) {
    if (!toc || !tocButton) return;
    toc.classList.toggle("is-open", open);
    tocButton.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) revealActiveLink();
    else if (returnFocus) tocButton.focus();
  }

  if (toc && tocButton) {
    tocButton.addEventListener("click", function () {
      setToc(!tocIsOpen(), false);
    });
    /* Following a link in the panel closes it. */
    toc.addEventListener("click", function (e) {
      if (narrow.matches && e.target.closest && e.target.closest("a")) setToc(false, false);
    });
    /* A click outside the panel closes it. */
    doc.addEventListener("click", function (e) {
      if (!tocIsOpen()) return;
      if (toc.contains(e.target) || tocButton.contains(e.target)) return;
      setToc(false, false);
    });
    /* Widening the window turns the panel back into the sidebar. */
    onChange(narrow, function () {
      if (!narrow.matches) setToc(false, false);
    });
  }

  /* Scroll spy: mark the TOC entry of the section being read. A heading counts as
   * "being read" once its top passes a line a quarter of the way down the
   * viewport (below the sticky header). Observers only fire when headings cross
   * that band, so the page does no work while scrolling inside one section. */
  var tocLinks = toc ? $$("a[data-toc-id]", toc) : [];
  var spy = [];
  tocLinks.forEach(function (a) {
    var h = doc.getElementById(a.getAttribute("data-toc-id"));
    if (h) spy.push({ heading: h, link: a });
  });
  var activeLink = null;
  var atEnd = false;

  function setActive(link) {
    if (link === activeLink) return;
    if (activeLink) {
      activeLink.classList.remove("is-active");
      activeLink.removeAttribute("aria-current");
    }
    activeLink = link;
    if (link) {
      link.classList.add("is-active");
      link.setAttribute("aria-current", "location");
      revealActiveLink();
    }
  }

  /* Keep the active entry visible inside a scrolling sidebar, without moving the page. */
  function revealActiveLink() {
    if (!toc || !activeLink || toc.scrollHeight <= toc.clientHeight) return;
    var t = toc.getBoundingClientRect();
    var l = activeLink.getBoundingClientRect();
    if (l.top < t.top + 16) toc.scrollTop -= t.top + 16 - l.top;
    else if (l.bottom > t.bottom - 16) toc.scrollTop += l.bottom - (t.bottom - 16);
  }

  function spyLine() {
    return headerBottom() + window.innerHeight * 0.25;
  }

  function updateSpy() {
    if (!spy.length) return;
    var line = spyLine();
    var current = null;
    for (var i = 0; i < spy.length; i++) {
      var top = spy[i].heading.getBoundingClientRect().top;
      if (top <= line) current = spy[i];
      /* At the end of the page the last sections may never reach the line:
       * then the last heading on screen wins. */
      else if (atEnd && top < window.innerHeight) current = spy[i];
      else break;
    }
    /* A heading just jumped to stays marked while it sits at the top, even when the short
     * sections under it (exercises with their answers shut) pass the line too. */
    var jumped = decodeURIComponent(location.hash.slice(1));
    for (var j = 0; jumped && j < spy.length; j++) {
      if (spy[j].heading.id !== jumped) continue;
      var at = spy[j].heading.getBoundingClientRect().top;
      if (at >= headerBottom() - 8 && at <= line) current = spy[j];
    }
    setActive(current ? current.link : null);
  }

  var spyQueued = false;
  function queueSpy() {
    if (spyQueued) return;
    spyQueued = true;
    window.requestAnimationFrame(function () {
      spyQueued = false;
      updateSpy();
    });
  }

  if (spy.length && "IntersectionObserver" in window) {
    var band = new IntersectionObserver(queueSpy, {
      /* the band between the header and the spy line */
      rootMargin: "-" + Math.round(headerBottom()) + "px 0px -75% 0px",
      threshold: [0, 1],
    });
    spy.forEach(function (s) {
      band.observe(s.heading);
    });
    var end = $(".site-footer") || $(".page-nav");
    if (end) {
      new IntersectionObserver(function (entries) {
        atEnd = entries[entries.length - 1].isIntersecting;
        queueSpy();
      }).observe(end);
    }
    window.addEventListener("resize", queueSpy, { passive: true });
    window.addEventListener("hashchange", queueSpy);
    updateSpy();
  }

  /* ------------------------------------------------------------------ */
  /* 3. Search                                                           */
  /* ------------------------------------------------------------------ */

  var MAX_RESULTS = 10;
  var searchInput = $("#search-input");
  var resultList = $("#search-results");
  var searchStatus = $("#search-status");
  var searchBox = $("#search");

  var index = null; /* [{title, url, text, ft, fx}] once loaded */
  var indexPromise = null;
  var indexError = "";
  var results = [];
  var selected = -1;
  var searchTimer = 0;

  /* Lower-case without changing the string's length, so that positions found in
   * the folded text are valid in the original (a few characters, like "İ", grow
   * when lower-cased; those are left as they are). */
  function fold(s) {
    var lower = s.toLowerCase();
    if (lower.length === s.length) return lower;
    var out = "";
    for (var i = 0; i < s.length; i++) {
      var c = s.charAt(i);
      var l = c.toLowerCase();
      out += l.length === 1 ? l : c;
    }
    return out;
  }

  function loadIndex() {
    if (indexPromise) return indexPromise;
    if (!window.fetch || location.protocol === "file:") {
      /* fetch() of a file: URL fails (with console noise), so do not try */
      indexError = "Search needs the book to be served over HTTP.";
      indexPromise = Promise.resolve(null);
      return indexPromise;
    }
    indexPromise = fetch(ROOT + "search-index.json", { credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (data) {
        if (!Array.isArray(data)) throw new Error("bad index");
        index = [];
        data.forEach(function (e) {
          if (!e || typeof e.url !== "string") return;
          var title = String(e.title || "");
          var text = String(e.text || "");
          index.push({ title: title, url: e.url, text: text, ft: fold(title), fx: fold(text) });
        });
        return index;
      })
      .catch(function () {
        index = null;
        indexError = "Search is unavailable: the index could not be loaded.";
        return null;
      });
    return indexPromise;
  }

  function countOf(hay, needle, cap) {
    var n = 0;
    var i = hay.indexOf(needle);
    while (i !== -1 && n < cap) {
      n++;
      i = hay.indexOf(needle, i + needle.length);
    }
    return n;
  }

  function isWordStart(s, i) {
    return i === 0 || /[^0-9a-z\u00c0-\uffff]/.test(s.charAt(i - 1));
  }

  /* Every term must occur in the title or the text. Title hits, whole-phrase hits
   * and hits at the start of a word rank higher. Ties keep index (reading) order. */
  function runSearch(query) {
    var q = fold(query).trim().replace(/\s+/g, " ");
    if (!q || !index) return [];
    var terms = q.split(" ").filter(function (t, i, all) {
      return all.indexOf(t) === i;
    }).slice(0, 8);
    var found = [];
    index.forEach(function (e, order) {
      var score = 0;
      for (var k = 0; k < terms.length; k++) {
        var t = terms[k];
        var ti = e.ft.indexOf(t);
        var xi = e.fx.indexOf(t);
        if (ti === -1 && xi === -1) return;
        if (ti !== -1) score += isWordStart(e.ft, ti) ? 12 : 6;
        if (xi !== -1) score += Math.min(countOf(e.fx, t, 8), 8) + (isWordStart(e.fx, xi) ? 2 : 0);
      }
      if (terms.length > 1) {
        if (e.ft.indexOf(q) !== -1) score += 20;
        if (e.fx.indexOf(q) !== -1) score += 8;
      }
      found.push({ entry: e, score: score, order: order });
    });
    found.sort(function (a, b) {
      return b.score - a.score || a.order - b.order;
    });
    return found.slice(0, MAX_RESULTS).map(function (f) {
      return { entry: f.entry, terms: terms, phrase: q };
    });
  }

  /* Append `text` to `parent`, wrapping every occurrence of a term in <mark>. */
  function appendMarked(parent, text, terms) {
    var f = fold(text);
    var spans = [];
    terms.forEach(function (t) {
      var i = f.indexOf(t);
      while (i !== -1) {
        spans.push([i, i + t.length]);
        i = f.indexOf(t, i + t.length);
      }
    });
    spans.sort(function (a, b) {
      return a[0] - b[0];
    });
    var pos = 0;
    spans.forEach(function (s) {
      if (s[1] <= pos) return;
      var from = Math.max(s[0], pos);
      if (from > pos) parent.appendChild(doc.createTextNode(text.slice(pos, from)));
      var m = doc.createElement("mark");
      m.textContent = text.slice(from, s[1]);
      parent.appendChild(m);
      pos = s[1];
    });
    if (pos < text.length) parent.appendChild(doc.createTextNode(text.slice(pos)));
  }

  /* About 200 characters of the section text around the first match. */
  function snippetOf(r) {
    var e = r.entry;
    var text = e.text.replace(/\s+/g, " ");
    var f = fold(text);
    var at = f.indexOf(r.phrase);
    if (at === -1) {
      at = Infinity;
      r.terms.forEach(function (t) {
        var i = f.indexOf(t);
        if (i !== -1 && i < at) at = i;
      });
    }
    if (at === Infinity) at = 0;
    var start = Math.max(0, at - 70);
    var end = Math.min(text.length, at + 130);
    if (start > 0) {
      var sp = text.indexOf(" ", start);
      if (sp !== -1 && sp < at) start = sp + 1;
    }
    if (end < text.length) {
      var ep = text.lastIndexOf(" ", end);
      if (ep > at) end = ep;
    }
    return (start > 0 ? "… " : "") + text.slice(start, end) + (end < text.length ? " …" : "");
  }

  function openList(open) {
    if (!resultList || !searchInput) return;
    resultList.hidden = !open;
    searchInput.setAttribute("aria-expanded", open ? "true" : "false");
    if (!open) select(-1);
  }

  function select(i) {
    var items = $$('[role="option"]:not([aria-disabled])', resultList);
    selected = items.length ? i : -1;
    items.forEach(function (li, k) {
      li.setAttribute("aria-selected", k === selected ? "true" : "false");
    });
    if (selected >= 0) {
      searchInput.setAttribute("aria-activedescendant", items[selected].id);
      var box = resultList.getBoundingClientRect();
      var r = items[selected].getBoundingClientRect();
      if (r.top < box.top) resultList.scrollTop -= box.top - r.top;
      else if (r.bottom > box.bottom) resultList.scrollTop += r.bottom - box.bottom;
    } else {
      searchInput.removeAttribute("aria-activedescendant");
    }
  }

  function message(text) {
    var li = doc.createElement("li");
    li.className = "search-message";
    li.setAttribute("role", "option");
    li.setAttribute("aria-disabled", "true");
    li.textContent = text;
    resultList.appendChild(li);
  }

  function render(query) {
    resultList.textContent = "";
    selected = -1;
    searchInput.removeAttribute("aria-activedescendant");
    if (!query.trim()) {
      results = [];
      openList(false);
      searchStatus.textContent = "";
      return;
    }
    if (!index) {
      results = [];
      message(indexError || "Loading the search index…");
      searchStatus.textContent = indexError;
      openList(true);
      return;
    }
    results = runSearch(query);
    if (!results.length) {
      message("No sections match “" + query.trim() + "”.");
      searchStatus.textContent = "No results.";
      openList(true);
      return;
    }
    /* <li role="none"><a role="option" href=…>: the link itself is the option
     * (a link inside an option would nest interactive elements). */
    results.forEach(function (r, i) {
      var li = doc.createElement("li");
      li.setAttribute("role", "none");
      var a = doc.createElement("a");
      a.id = "search-result-" + i;
      a.setAttribute("role", "option");
      a.setAttribute("aria-selected", "false");
      a.href = ROOT + r.entry.url;
      a.tabIndex = -1;
      var title = doc.createElement("span");
      title.className = "search-result-title";
      appendMarked(title, r.entry.title || r.entry.url, r.terms);
      var snip = doc.createElement("span");
      snip.className = "search-result-snippet";
      appendMarked(snip, snippetOf(r), r.terms);
      a.appendChild(title);
      a.appendChild(snip);
      li.appendChild(a);
      resultList.appendChild(li);
    });
    searchStatus.textContent =
      results.length + (results.length === 1 ? " result" : " results") + ". Use the arrow keys to choose.";
    openList(true);
  }

  function update() {
    var q = searchInput.value;
    if (!q.trim()) {
      render("");
      return;
    }
    if (!index && !indexError) render(q); /* shows "Loading…" */
    loadIndex().then(function () {
      /* ignore answers for a query that is no longer in the box */
      if (searchInput.value === q) render(q);
    });
  }

  function go(i) {
    var r = results[i];
    if (!r) return;
    openList(false);
    searchInput.blur();
    window.location.href = ROOT + r.entry.url;
  }

  if (searchInput && resultList && searchStatus) {
    searchInput.addEventListener("focus", function () {
      loadIndex();
      if (searchInput.value.trim() && resultList.childNodes.length) openList(true);
    });
    searchInput.addEventListener("input", function () {
      window.clearTimeout(searchTimer);
      searchTimer = window.setTimeout(update, 60);
    });
    searchInput.addEventListener("keydown", function (e) {
      var n = results.length;
      if (e.key === "ArrowDown" || e.key === "Down") {
        e.preventDefault();
        if (resultList.hidden) {
          if (searchInput.value.trim()) update();
          return;
        }
        if (n) select(selected < n - 1 ? selected + 1 : 0);
      } else if (e.key === "ArrowUp" || e.key === "Up") {
        e.preventDefault();
        if (n && !resultList.hidden) select(selected > 0 ? selected - 1 : n - 1);
      } else if (e.key === "Enter") {
        if (n && !resultList.hidden) {
          e.preventDefault();
          go(selected >= 0 ? selected : 0);
        }
      } else if (e.key === "Escape" || e.key === "Esc") {
        e.preventDefault();
        e.stopPropagation();
        if (!resultList.hidden) openList(false);
        else if (searchInput.value) {
          searchInput.value = "";
          render("");
        } else searchInput.blur();
      }
    });
    /* Keep focus in the input while clicking a result, so the list stays open
     * long enough for the click to land. */
    resultList.addEventListener("mousedown", function (e) {
      e.preventDefault();
    });
    resultList.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest("a");
      if (a) openList(false);
    });
    if (searchBox) {
      searchBox.addEventListener("focusout", function (e) {
        if (!e.relatedTarget || !searchBox.contains(e.relatedTarget)) openList(false);
      });
    }
    doc.addEventListener("click", function (e) {
      if (searchBox && !searchBox.contains(e.target)) openList(false);
    });
    /* "/" or "s" focuses the search box (as in mdBook), unless the reader is typing. */
    doc.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
      if ((e.key === "/" || e.key === "s") && !isTyping(doc.activeElement)) {
        e.preventDefault();
        searchInput.focus();
        searchInput.select();
      }
    });
  }

  /* ------------------------------------------------------------------ */
  /* 4. Quoted figures (.claim)                                          */
  /* ------------------------------------------------------------------ */

  /* The CSS shows the tip on :hover / :focus-within. Here it is pinned with
   * position:fixed next to the value (fixed boxes escape overflow clipping in
   * scrolling tables), clamped into the viewport, and flipped below the value
   * when there is no room above. */
  function placeTip(claim) {
    var tip = $(".claim-tip", claim);
    if (!tip) return;
    var s = tip.style;
    s.position = "fixed";
    s.left = "0px";
    s.top = "0px";
    s.bottom = "auto";
    s.transform = "none";
    var v = ($(".claim-value, .xref", claim) || claim).getBoundingClientRect();
    var w = tip.offsetWidth;
    var h = tip.offsetHeight;
    var margin = 8;
    var gap = 8;
    var vw = html.clientWidth;
    var vh = window.innerHeight;
    var cx = v.left + v.width / 2;
    var x = Math.max(margin, Math.min(cx - w / 2, vw - w - margin));
    var y = v.top - gap - h;
    var below = false;
    if (y < headerBottom() + margin && v.bottom + gap + h <= vh - margin) {
      y = v.bottom + gap;
      below = true;
    }
    claim.classList.toggle("tip-below", below);
    s.left = Math.round(x) + "px";
    s.top = Math.round(y) + "px";
    s.setProperty("--arrow-x", Math.round(Math.max(10, Math.min(cx - x, w - 10))) + "px");
  }

  /* A claim, or a reference with its preview (.xref-box): both tips work alike. */
  function openClaims() {
    return $$(".claim:hover, .claim:focus-within, .xref-box:hover, .xref-box:focus-within");
  }

  function claimOf(node) {
    return node && node.closest ? node.closest(".claim, .xref-box") : null;
  }

  if (doc.querySelector(".claim, .xref-box")) {
    var hovered = null;
    doc.addEventListener("mouseover", function (e) {
      var c = claimOf(e.target);
      if (c && c !== hovered) placeTip(c);
      hovered = c;
    });
    doc.addEventListener("mouseout", function (e) {
      var c = claimOf(e.target);
      if (c && !c.contains(e.relatedTarget) && !c.matches(":focus-within")) {
        c.classList.remove("is-dismissed");
      }
    });
    doc.addEventListener("focusin", function (e) {
      var c = claimOf(e.target);
      if (c) placeTip(c);
    });
    doc.addEventListener("focusout", function (e) {
      var c = claimOf(e.target);
      if (c && !c.contains(e.relatedTarget) && !c.matches(":hover")) {
        c.classList.remove("is-dismissed");
      }
    });
    var tipQueued = false;
    var replace = function () {
      if (tipQueued) return;
      tipQueued = true;
      window.requestAnimationFrame(function () {
        tipQueued = false;
        openClaims().forEach(placeTip);
      });
    };
    /* capture: also scrolling inside tables and code blocks */
    window.addEventListener("scroll", replace, { passive: true, capture: true });
    window.addEventListener("resize", replace, { passive: true });
  }

  /* ------------------------------------------------------------------ */
  /* 5. Content helpers                                                  */
  /* ------------------------------------------------------------------ */

  /* Wide tables scroll sideways inside a wrapper instead of widening the page. */
  $$(".content table").forEach(function (t) {
    var p = t.parentElement;
    if (p && p.classList.contains("table-wrap")) return;
    var wrap = doc.createElement("div");
    wrap.className = "table-wrap";
    t.parentNode.insertBefore(wrap, t);
    wrap.appendChild(t);
  });

  /* Scrolling regions must be reachable from the keyboard (WCAG 2.1.1). */
  function markScrollable() {
    $$(".table-wrap, pre.code, .plot-svg, .math-display > .katex-display").forEach(function (el) {
      var scrolls = el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-scroll-focus", "");
      } else if (!scrolls && el.hasAttribute("data-scroll-focus")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-scroll-focus");
      }
    });
  }
  var scrollableTimer = 0;
  window.addEventListener("resize", function () {
    window.clearTimeout(scrollableTimer);
    scrollableTimer = window.setTimeout(markScrollable, 150);
  });
  markScrollable();

  /* Copy buttons on code blocks (only where the clipboard API exists). */
  if (navigator.clipboard && window.isSecureContext) {
    $$("pre.code").forEach(function (pre) {
      var wrap = doc.createElement("div");
      wrap.className = "code-wrap";
      pre.parentNode.insertBefore(wrap, pre);
      wrap.appendChild(pre);
      var b = doc.createElement("button");
      b.type = "button";
      b.className = "copy-button";
      b.textContent = "Copy";
      b.setAttribute("aria-label", "Copy code to clipboard");
      var reset = 0;
      var flash = function (text) {
        b.textContent = text;
        b.classList.add("is-done");
        window.clearTimeout(reset);
        reset = window.setTimeout(function () {
          b.textContent = "Copy";
          b.classList.remove("is-done");
        }, 1500);
      };
      b.addEventListener("click", function () {
        var code = pre.querySelector("code") || pre;
        navigator.clipboard.writeText(code.textContent.replace(/\n$/, "")).then(
          function () {
            flash("Copied");
          },
          function () {
            flash("Copy failed");
          }
        );
      });
      wrap.appendChild(b);
    });
  }

  /* Footnotes (partials/footnote.html): in the margin on wide screens, where they are
   * always shown; on narrow ones a note opens and shuts in place under its button. A link
   * to a later reference of the note (.fn-again) opens it too. */
  var wideNotes = mq("(min-width: 1240px)");
  function syncNotes() {
    $$(".footnote").forEach(function (f) {
      var open = wideNotes.matches || f.classList.contains("is-open");
      $(".fn-ref", f).setAttribute("aria-expanded", open ? "true" : "false");
    });
  }
  /* A note that holds blocks (.fn-block) follows its paragraph, outside its .footnote:
   * it opens and shuts with it. */
  function setNote(f, open) {
    f.classList.toggle("is-open", open);
    var b = $(".fn-ref", f);
    var note = b && doc.getElementById(b.getAttribute("aria-controls"));
    if (note && !f.contains(note)) note.classList.toggle("is-open", open);
  }
  if (doc.querySelector(".footnote")) {
    doc.addEventListener("click", function (e) {
      var t = e.target.closest ? e.target : null;
      var b = t && t.closest(".fn-ref");
      var again = t && t.closest(".fn-again");
      if (again) {
        var f = doc.getElementById(again.getAttribute("href").slice(1));
        if (f) setNote(f, true);
      } else if (b && !wideNotes.matches) {
        setNote(b.parentElement, !b.parentElement.classList.contains("is-open"));
      }
      syncNotes();
    });
    onChange(wideNotes, syncNotes);
    syncNotes();
  }

  /* A link to a run card (runs.html#run-noscale), or into one, opens it. */
  function openTarget() {
    var id = location.hash.slice(1);
    if (!id) return;
    try {
      id = decodeURIComponent(id);
    } catch (e) {
      /* keep it raw */
    }
    var el = doc.getElementById(id);
    var d = el && el.closest ? el.closest("details") : null;
    if (d && !d.open) {
      d.open = true;
      el.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  /* Build time: the template writes Unix seconds; show them as a UTC date. */
  $$("time[data-unix]").forEach(function (t) {
    var n = Number(t.getAttribute("data-unix"));
    if (!isFinite(n) || n <= 0) return;
    var iso = new Date(n * 1000).toISOString();
    t.setAttribute("datetime", iso);
    t.textContent = iso.slice(0, 10) + " " + iso.slice(11, 16) + " UTC";
  });

  /* Print with every run card and every answer open; restore afterwards. */
  var openedForPrint = [];
  window.addEventListener("beforeprint", function () {
    openedForPrint = $$("details:not([open])");
    openedForPrint.forEach(function (d) {
      d.open = true;
    });
  });
  window.addEventListener("afterprint", function () {
    openedForPrint.forEach(function (d) {
      d.open = false;
    });
    openedForPrint = [];
  });

  /* ------------------------------------------------------------------ */
  /* 6. Build-error overlay                                              */
  /* ------------------------------------------------------------------ */

  var overlay = $("#revtx-overlay");

  function closeOverlay() {
    if (!overlay || overlay.hidden) return false;
    var hadFocus = overlay.contains(doc.activeElement);
    overlay.hidden = true;
    if (hadFocus) {
      var main = $("#content");
      if (main) main.focus();
    }
    return true;
  }

  if (overlay) {
    var closeButton = $("#revtx-overlay-close");
    if (closeButton) closeButton.addEventListener("click", closeOverlay);
  }

  /* ------------------------------------------------------------------ */
  /* Escape: closes the most prominent thing that is open.               */
  /* (The search box handles its own Escape first.)                      */
  /* ------------------------------------------------------------------ */

  doc.addEventListener("keydown", function (e) {
    if ((e.key !== "Escape" && e.key !== "Esc") || e.defaultPrevented) return;
    if (closeOverlay()) return;
    var tips = openClaims().filter(function (c) {
      return !c.classList.contains("is-dismissed");
    });
    if (tips.length) {
      tips.forEach(function (c) {
        c.classList.add("is-dismissed");
      });
      return;
    }
    if (tocIsOpen()) setToc(false, true);
  });
})();
