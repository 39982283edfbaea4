"use strict";
// Audit: run the structure audit (no model), then show its dashboard.
(() => {
  const button = document.getElementById("run-audit");
  const progress = document.getElementById("audit-progress");
  button.addEventListener("click", async () => {
    button.disabled = true;
    progress.replaceChildren("Reading every note's links and tags… ",
      vl.el("progress", { "aria-label": "Audit running" }));
    const r = await vl.post("/ui/api/audit", {});
    const data = await vl.json(r);
    if (!r.ok) { progress.replaceChildren(vl.errorBox(data.error)); button.disabled = false; return; }
    progress.textContent = `Done: ${data.summary.notes} notes, ${data.summary.broken_links} broken links.`;
    location.reload();
  });
  const clusters = document.getElementById("run-clusters");
  clusters.addEventListener("click", async () => {
    clusters.disabled = true;
    progress.textContent = "Grouping notes by topic from the stored vectors…";
    const r = await vl.post("/ui/api/audit/clusters", {});
    const data = await vl.json(r);
    if (!r.ok) { progress.replaceChildren(vl.errorBox(data.error)); clusters.disabled = false; return; }
    location.reload();
  });
})();
// A count's link opens the list of notes behind it (a <details> folded by default).
(() => {
  const open = () => {
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target && target.tagName === "DETAILS") target.open = true;
  };
  window.addEventListener("hashchange", open);
  open();
})();
