/* revtx-book live reload (serve mode only; the template includes this script
 * only when live_reload is on).
 *
 * Polls <root>__revtx/version every 400 ms. The first answer is the version of
 * the build this page shows; when a later answer differs, a rebuild has finished
 * and the page reloads. Network errors (server restarting, stopped) are ignored
 * and polling simply continues. Polling pauses while the tab is hidden.
 */
(function () {
  "use strict";

  var INTERVAL_MS = 400;
  var html = document.documentElement;
  var root = html.getAttribute("data-root");
  if (root === null) {
    /* Fallback: this script lives at <root>static/livereload.js. */
    var me = document.currentScript && document.currentScript.src;
    root = me ? new URL("../", me).href : "";
  }
  var url = root + "__revtx/version";
  var first = null;
  var timer = 0;
  var inFlight = false;

  function schedule() {
    window.clearTimeout(timer);
    if (!document.hidden) timer = window.setTimeout(poll, INTERVAL_MS);
  }

  function poll() {
    if (inFlight || !window.fetch) return;
    inFlight = true;
    fetch(url, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        return r.ok ? r.text() : null;
      })
      .then(function (text) {
        if (text === null) return;
        text = text.trim();
        if (first === null) first = text;
        else if (text !== first) {
          window.location.reload();
          return "reloading";
        }
      })
      .catch(function () {
        /* server busy or restarting: try again next tick */
      })
      .then(function (state) {
        inFlight = false;
        if (state !== "reloading") schedule();
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) window.clearTimeout(timer);
    else poll();
  });

  poll();
})();
