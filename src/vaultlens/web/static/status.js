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
  };

  async function counts() {
    const r = await fetch("/ui/api/status");
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
    if (!w) return;
    watcher.dataset.state = w.state;
    watcher.textContent = (words[w.state] || w.state) + (w.reason ? ` ${w.reason}` : "");
  });
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
