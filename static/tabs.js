/* revtx-book: listing tabs. A listing with twins in other languages (```include with
 * `twins`) is a tab list, one tab per language, following the WAI-ARIA tabs pattern:
 *
 *   - a click, Enter or Space on a tab shows its panel;
 *   - Left and Right move between tabs (and wrap), Home and End go to the first and last,
 *     selecting as they go; only the selected tab is in the Tab order;
 *   - the reader's choice (the tab's label, e.g. "PyTorch") is stored in localStorage and
 *     applied to every listing of every page that has a tab of that label.
 *
 * Without this script every panel shows, each under its label (the tab list stays hidden).
 * Nothing here throws when storage is unavailable. */
(function () {
  "use strict";

  var KEY = "revtx-listing-language";

  function stored() {
    try {
      return window.localStorage.getItem(KEY);
    } catch (e) {
      return null;
    }
  }

  function store(label) {
    try {
      window.localStorage.setItem(KEY, label);
    } catch (e) {
      /* private mode: the choice lasts for this page only */
    }
  }

  function tabsOf(listing) {
    return Array.prototype.slice.call(listing.querySelectorAll('[role="tab"]'));
  }

  /* Shows the tab with `label` in `listing`; false when it has none. */
  function select(listing, label, focus) {
    var tabs = tabsOf(listing);
    var chosen = null;
    tabs.forEach(function (t) {
      if (t.getAttribute("data-label") === label) chosen = t;
    });
    if (!chosen) return false;
    tabs.forEach(function (t) {
      var on = t === chosen;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      var panel = document.getElementById(t.getAttribute("aria-controls"));
      if (panel) panel.hidden = !on;
    });
    if (focus) chosen.focus();
    return true;
  }

  /* The reader chose `label` in one listing: every listing that has it follows, and the
   * page does not jump (the chosen listing stays where it was on screen). */
  function choose(listing, label, focus) {
    var before = listing.getBoundingClientRect().top;
    listings.forEach(function (l) {
      select(l, label, focus && l === listing);
    });
    store(label);
    var shift = listing.getBoundingClientRect().top - before;
    if (shift) window.scrollBy(0, shift);
  }

  var listings = Array.prototype.slice.call(document.querySelectorAll(".listing-tabs"));
  listings.forEach(function (listing) {
    var list = listing.querySelector('[role="tablist"]');
    if (!list) return;
    list.hidden = false;
    listing.classList.add("is-tabbed");
    var tabs = tabsOf(listing);
    var saved = stored();
    if (!(saved && select(listing, saved, false))) {
      select(listing, tabs[0].getAttribute("data-label"), false);
    }
    tabs.forEach(function (tab, k) {
      tab.addEventListener("click", function () {
        choose(listing, tab.getAttribute("data-label"), false);
      });
      tab.addEventListener("keydown", function (e) {
        var to = null;
        if (e.key === "ArrowRight") to = (k + 1) % tabs.length;
        else if (e.key === "ArrowLeft") to = (k - 1 + tabs.length) % tabs.length;
        else if (e.key === "Home") to = 0;
        else if (e.key === "End") to = tabs.length - 1;
        if (to === null) return;
        e.preventDefault();
        choose(listing, tabs[to].getAttribute("data-label"), true);
      });
    });
  });
})();
