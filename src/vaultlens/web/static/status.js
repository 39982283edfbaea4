"use strict";
// Status: live progress of an index run or tier fill, the watcher and each flush (server-sent events).
(() => {
  const progress = document.getElementById("progress");
  const phase = progress.querySelector(".phase");
  const bar = progress.querySelector("progress");
  const watcher = document.getElementById("watcher");
  const flushes = document.getElementById("flushes");
  const words = {
    watching: "Watching the vault: the index follows every change.",
    elsewhere: "Another process writes the index; this server waits for the writer lock.",
    off: "Not watching: the index changes only when you run vaultlens index.",
    stopped: "The watcher stopped: the index no longer follows the vault.",
    closing: "The server is shutting down: the index no longer follows the vault until it is back.",
    unknown: "The server is not answering: whether the vault is watched is unknown until it is back.",
  };
  function show(state, reason) {
    watcher.dataset.state = state;
    watcher.textContent = (words[state] || state) + (reason ? ` ${reason}` : "");
  }

  async function counts() {
    let r;
    try { r = await fetch("/ui/api/status"); } catch (_) { return; } // the banner says it
    if (!r.ok) return;
    const data = await r.json();
    if (!data.indexed) return;
    if (document.getElementById("no-index")) { location.reload(); return; }  // the first index is built
    for (const key of ["indexed", "skipped", "failed"]) {
      const cell = document.querySelector(`[data-count=${key}]`);
      if (cell) cell.textContent = data.files[key];
    }
  }

  const events = new EventSource("/ui/events");
  events.addEventListener("progress", (e) => {
    const p = JSON.parse(e.data);
    if (!p) return;
    phase.textContent = `${p.phase}: ${p.done.toLocaleString()} of ${p.total.toLocaleString()}`;
    bar.max = Math.max(1, p.total);
    bar.value = p.done;
  });
  events.addEventListener("watcher", (e) => {
    const w = JSON.parse(e.data);
    if (w) show(w.state, w.reason);
    else show("off", "This server runs no watcher.");
  });
  // The stream broke (server stopped or restarting): the last state shown is no longer known to be
  // true. The browser reconnects by itself; the new server's first event says the state again.
  events.addEventListener("error", () => {
    if (watcher.dataset.state !== "closing") show("unknown");
    counts(); // raises the page's banner while the server does not answer
  });
  events.addEventListener("open", counts);
  events.addEventListener("flush", (e) => {
    const f = JSON.parse(e.data);
    const s = f.stats;
    const when = new Date(f.time * 1000).toLocaleTimeString();
    const what = s ? `${s.files_changed} changed, ${s.files_deleted} deleted` : `error: ${f.reason}`;
    flushes.prepend(vl.el("li", { "data-kind": f.kind }, `${when} ${f.kind}: ${what}`));
    while (flushes.children.length > 20) flushes.lastChild.remove();
    counts();
  });
})();
