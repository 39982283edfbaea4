"use strict";
// The section a search result or a related note pointed at: into view.
const target = document.querySelector("#note-body .target");
if (target) target.scrollIntoView({ block: "center" });

// Related notes and links arrive after the note (a huge note's text is not held up by them).
(async () => {
  const related = document.getElementById("related");
  if (!related || !related.dataset.src) return;
  try {
    const r = await fetch(related.dataset.src);
    related.innerHTML = await r.text(); // the server's escaped fragment
  } catch (_) {
    related.replaceChildren(vl.el("p", { class: "error", role: "alert" }, "The server did not answer: related notes are not shown."));
  }
  related.removeAttribute("aria-busy");
})();

// Transform lines: a selection in the note fills in its lines; Transform asks for consent when the
// model is remote, then shows the exact diff with Apply (History can undo it).
(() => {
  const form = document.getElementById("transform");
  if (!form) return;
  const { el, post, json, errorBox } = vl;
  const body = document.getElementById("note-body");
  const consent = document.getElementById("transform-consent");
  const diff = document.getElementById("transform-diff");
  const status = document.getElementById("transform-status");

  function linesOf(node) {
    const block = node && (node.nodeType === 1 ? node : node.parentElement);
    const lined = block && block.closest("#note-body [data-lines]");
    return lined ? lined.dataset.lines.split("-").map(Number) : null;
  }
  document.addEventListener("selectionchange", () => {
    const sel = document.getSelection();
    if (!sel || sel.isCollapsed || !body.contains(sel.anchorNode)) return;
    const a = linesOf(sel.anchorNode), b = linesOf(sel.focusNode);
    if (!a || !b) return;
    form.elements.first.value = Math.min(a[0], b[0]);
    form.elements.last.value = Math.max(a[1], b[1]);
  });

  // One note tool's request: consent first when the model is remote, then its exact diff and Apply.
  async function run(tool, request, consented) {
    status.textContent = consented ? "Waiting for the model…" : "";
    diff.replaceChildren();
    const r = await post(`/ui/api/write/${tool}`, { ...request, consent: consented });
    const data = await json(r);
    status.textContent = "";
    if (r.ok) {
      consent.hidden = true;
      if (!data.plan) { diff.replaceChildren(el("p", { class: "empty" }, "Nothing to change.")); return; }
      await vl.proposeWrite(diff, data.plan.op_id, () => { status.textContent = "Reload to see the note as written."; });
    } else if (r.status === 403 && data.error.code === "consent_required") {
      vl.showConsent(consent, data.error.proposal, "transform-consent-send", () => run(tool, request, true));
    } else {
      diff.replaceChildren(errorBox(data.error), el("p", {}, "Nothing was written."));
    }
  }

  form.addEventListener("submit", () => {
    const preset = form.elements.preset.value;
    const prompt = form.elements.instruction.value.trim();
    run("transform", {
      path: form.dataset.path,
      first: Number(form.elements.first.value),
      last: Number(form.elements.last.value),
      preset: preset || null,
      prompt: preset ? null : prompt || null,
    }, false);
  });
  for (const button of document.querySelectorAll("button.tool")) {
    button.addEventListener("click", () => run(button.dataset.tool, { path: form.dataset.path }, false));
  }
})();
