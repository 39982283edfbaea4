"use strict";
// Review: the exact prompt first (consent), then claims, validation, the plan and its diff, Apply.
(() => {
  const { el, post, json, errorBox } = vl;
  const pair = document.getElementById("pair");
  const consent = document.getElementById("consent");
  const claims = document.getElementById("claims");
  const validation = document.getElementById("validation");
  const planSection = document.getElementById("plan-section");
  const form = document.getElementById("plan");
  const diff = document.getElementById("diff");
  const status = document.getElementById("status");
  let reviewId = null;

  function planFields() {
    return {
      direction: form.elements.direction.value,
      after: form.elements.after.value || null,
      link_text: form.elements.link_text.value || "See also",
    };
  }

  function quote(ev) {
    if (!ev) return null;
    return el("blockquote", { class: "quote", "data-path": ev.path, "data-lines": `${ev.start_line}-${ev.end_line}` },
      el("p", {}, ev.text),
      el("footer", {}, el("a", { href: vl.noteHref(ev.path, ev.start_line, ev.end_line) },
        `${ev.path}, lines ${ev.start_line}-${ev.end_line}`)));
  }

  function render(data) {
    reviewId = data.review_id;
    consent.hidden = true;
    const rec = data.recommendation;
    claims.replaceChildren(
      el("h2", {}, "What the model found"),
      el("p", {}, data.relation ? `Relation: ${data.relation}. ` : "",
        rec ? `Recommendation: ${rec.action}.` : "No valid recommendation."),
      el("ol", {}, data.claims.map((c) => el("li", { class: "claim", "data-kind": c.kind },
        el("p", {}, c.text), quote(c.evidenceA), quote(c.evidenceB)))));
    const v = data.validation;
    validation.replaceChildren(
      el("h2", {}, "Validation"),
      el("p", { class: v.ok ? "ok" : "error", "data-ok": String(v.ok) },
        v.ok ? "Every claim quotes the notes as they are." : "The answer did not pass validation."),
      el("ul", {}, v.diagnostics.map((d) => el("li", { "data-code": d.code }, `${d.code}: ${d.message}`))));
    const after = form.elements.after;
    const chosen = after.value;
    after.replaceChildren(el("option", { value: "" }, "(the planner's choice)"),
      ...data.insert_after.map((b) => el("option", { value: b.id },
        `${b.id} ${b.kind}, lines ${b.start_line}-${b.end_line}: ${b.text}`)));
    after.value = chosen;
    planSection.hidden = !data.plan;
    if (data.plan) vl.proposeWrite(diff, data.plan.op_id);
    else diff.replaceChildren(el("p", { class: "empty" }, data.plan_refused || "Nothing to change for this pair."));
  }

  async function send(token) {
    status.textContent = token ? "Waiting for the model…" : "";
    const r = await post("/ui/api/review", { a: pair.dataset.a, b: pair.dataset.b, token, ...planFields() });
    const data = await json(r);
    status.textContent = "";
    if (r.ok) render(data);
    else if (r.status === 403 && data.error.code === "consent_required") {
      vl.showConsent(consent, data.error.proposal, "send", (p) => send(p.token));
    } else consent.replaceChildren(errorBox(data.error));
  }

  form.addEventListener("submit", async () => {
    status.textContent = "Planning again (nothing is sent)…";
    const r = await post("/ui/api/replan", { review_id: reviewId, ...planFields() });
    const data = await json(r);
    status.textContent = "";
    if (r.ok) render(data);
    else diff.replaceChildren(errorBox(data.error));
  });
  send(null);
})();
