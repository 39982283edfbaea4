"use strict";
// Duplicates: Dismiss hides a pair until either note changes.
(() => {
  const status = document.getElementById("status");
  for (const button of document.querySelectorAll(".pair button.dismiss:not([disabled])")) {
    button.addEventListener("click", async () => {
      const pair = button.closest(".pair");
      const r = await vl.post("/ui/api/dismiss", { a: pair.dataset.a, b: pair.dataset.b });
      const data = await vl.json(r);
      if (!r.ok) { status.replaceChildren(vl.errorBox(data.error)); return; }
      pair.remove();
      status.textContent = `Dismissed ${data.dismissed.join(" and ")} until either changes.`;
    });
  }
})();
