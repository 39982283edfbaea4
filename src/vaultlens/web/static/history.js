"use strict";
// History: Undo plans the reverse change, shows its exact diff and applies it on confirmation;
// Discard drops a planned change (only the journal changes). The list reloads itself after either.
(() => {
  const diff = document.getElementById("diff");
  const status = document.getElementById("status");

  async function undo(entry) {
    const r = await vl.post("/ui/api/undo", { op_id: entry.dataset.op });
    const data = await vl.json(r);
    if (!r.ok) { status.replaceChildren(vl.errorBox(data.error)); return; }
    await vl.proposeWrite(diff, data.op_id, async () => {
      await vl.refreshPart("history-list");
      status.textContent = "Undone: the note holds its text from before that change again.";
    });
    diff.scrollIntoView({ block: "start" });
  }

  async function discard(entry) {
    const r = await vl.post("/ui/api/discard", { op_id: entry.dataset.op });
    const data = await vl.json(r);
    if (!r.ok) { status.replaceChildren(vl.errorBox(data.error)); return; }
    await vl.refreshPart("history-list");
    status.textContent = `Discarded the planned change of ${data.path || data.paths.join(", ")}; no note was touched.`;
  }

  document.getElementById("main").addEventListener("click", (event) => {
    const button = event.target.closest("button.undo, button.discard");
    if (!button) return;
    button.disabled = true;
    const entry = button.closest(".entry");
    (button.classList.contains("undo") ? undo(entry) : discard(entry)).finally(() => { button.disabled = false; });
  });
})();
