"use strict";
// Duplicates: Dismiss hides a pair until either note changes; Restore lists a dismissed pair again.
// The list reloads itself after either (counts, sets and the dismissed pairs stay true).
(() => {
  const status = document.getElementById("status");

  async function act(button) {
    const restore = button.classList.contains("restore");
    const item = button.closest(restore ? ".dismissed-pair" : ".pair");
    const r = await vl.post(restore ? "/ui/api/restore" : "/ui/api/dismiss", { a: item.dataset.a, b: item.dataset.b });
    const data = await vl.json(r);
    if (!r.ok) { status.replaceChildren(vl.errorBox(data.error)); return; }
    item.remove();
    await vl.refreshPart("duplicates-list");
    status.textContent = restore
      ? `Restored: ${data.restored.join(" and ")} are listed again.`
      : `Dismissed ${data.dismissed.join(" and ")} until either changes.`;
  }

  document.getElementById("main").addEventListener("click", (event) => {
    const button = event.target.closest("button.dismiss:not([disabled]), button.restore");
    if (!button) return;
    button.disabled = true;
    act(button).finally(() => { button.disabled = false; });
  });
})();
