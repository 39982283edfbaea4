"use strict";
// History: Undo plans the reverse change; its exact diff is shown and applied on confirmation.
(() => {
  const diff = document.getElementById("diff");
  const status = document.getElementById("status");
  for (const button of document.querySelectorAll("button.undo")) {
    button.addEventListener("click", async () => {
      const entry = button.closest(".entry");
      const r = await vl.post("/ui/api/undo", { op_id: entry.dataset.op });
      const data = await vl.json(r);
      if (!r.ok) { status.replaceChildren(vl.errorBox(data.error)); return; }
      await vl.proposeWrite(diff, data.op_id, () => {
        button.remove();
        status.textContent = "Undone. Reload the page to see the new entry.";
      });
      diff.scrollIntoView({ block: "start" });
    });
  }
})();
