"use strict";
// Review: the prompt summed up with Send first (consent), then the validator's verdict, the claims,
// the plan and its diff, Apply. No dead end: a refused re-plan keeps the form and says why, and
// "Review again" starts over from the notes as they are now.
(() => {
  const { el, post, json, errorBox } = vl;
  const pair = document.getElementById("pair");
  const consent = document.getElementById("consent");
  const claims = document.getElementById("claims");
  const validation = document.getElementById("validation");
  const planSection = document.getElementById("plan-section");
  const form = document.getElementById("plan");
  const problem = document.getElementById("plan-problem");
  const diff = document.getElementById("diff");
  const status = document.getElementById("status");
  const again = document.getElementById("review-again");
  const PLANNED = ["add_link", "consider_merge"];
  let reviewId = null;
  let blocks = []; // the insert_after points of the last review
  let mergeInto = null; // consider_merge: the side the copied block goes into, as last planned

  function planFields() {
    return {
      direction: form.elements.direction.value,
      after: form.elements.after.value || null,
      link_text: form.elements.link_text.value || "See also",
    };
  }

  // "Insert after" lists the blocks of the note that receives the text, by heading and first words.
  function receiving() {
    return mergeInto || form.elements.direction.value;
  }
  function fillAfter() {
    const after = form.elements.after;
    const chosen = after.value;
    const side = receiving();
    const own = blocks.filter((b) => b.side === side);
    after.replaceChildren(el("option", { value: "" }, "(the planner's choice: its last block)"),
      ...own.map((b) => el("option", { value: b.id }, b.label)));
    after.value = own.some((b) => b.id === chosen) ? chosen : "";
    const path = side === "A" ? pair.dataset.a : pair.dataset.b;
    document.getElementById("after-note").textContent = `Blocks of ${path}`;
  }

  function quote(ev) {
    if (!ev) return null;
    return el("blockquote", { class: "quote", "data-path": ev.path, "data-lines": `${ev.start_line}-${ev.end_line}` },
      el("p", {}, ev.text),
      el("footer", {}, el("a", { href: vl.noteHref(ev.path, ev.start_line, ev.end_line) },
        `${ev.path}, lines ${ev.start_line}-${ev.end_line}`)));
  }

  // The validator's verdict first: an answer that failed it recommends nothing.
  function verdict(data) {
    const v = data.validation;
    const rec = data.recommendation;
    const head = v.ok
      ? (rec ? `Valid answer. Recommendation: ${rec.action}.` : "Valid answer, with no recommendation.")
      : "The answer did not pass validation: nothing is recommended or planned.";
    validation.replaceChildren(
      el("h2", {}, "Validation"),
      el("p", { class: v.ok ? "ok" : "error", "data-ok": String(v.ok), id: "verdict" }, head),
      v.ok ? el("p", {}, "Every claim quotes the notes as they are.") : null,
      el("ul", {}, v.diagnostics.map((d) => el("li", { "data-code": d.code }, `${d.code}: ${d.message}`))));
  }

  function render(data) {
    reviewId = data.review_id;
    consent.hidden = true;
    verdict(data);
    const rec = data.recommendation;
    claims.replaceChildren(
      el("h2", {}, "What the model found"),
      data.relation ? el("p", {}, `Relation: ${data.relation}.`) : null,
      el("ol", {}, data.claims.map((c) => el("li", { class: "claim", "data-kind": c.kind },
        el("p", {}, c.text), quote(c.evidenceA), quote(c.evidenceB)))));
    const plannable = data.validation.ok && rec && PLANNED.includes(rec.action);
    blocks = data.insert_after;
    mergeInto = null;
    if (plannable && rec.action === "consider_merge" && data.plan) mergeInto = data.plan.path === data.a ? "A" : "B";
    form.elements.direction.disabled = Boolean(mergeInto);
    fillAfter();
    planSection.hidden = !plannable;
    problem.replaceChildren();
    again.hidden = false;
    if (data.plan) vl.proposeWrite(diff, data.plan.op_id);
    else if (plannable && data.plan_refused) {
      problem.replaceChildren(errorBox({ code: "plan_refused", message: data.plan_refused,
        hint: "Nothing was written. Change the options and re-plan, or review again from the current text." }));
      diff.replaceChildren();
    } else diff.replaceChildren(el("p", { class: "empty" }, data.plan_refused || "Nothing to change for this pair."));
  }

  async function send(token) {
    status.textContent = token ? "Waiting for the model…" : "";
    let r;
    try {
      r = await post("/ui/api/review", { a: pair.dataset.a, b: pair.dataset.b, token, ...planFields(), after: null });
    } catch (_) {
      status.textContent = "";
      consent.hidden = false;
      consent.replaceChildren(errorBox({ code: "unreachable", message: "The server did not answer: nothing was sent." }));
      again.hidden = false;
      return;
    }
    const data = await json(r);
    status.textContent = "";
    if (r.ok) render(data);
    else if (r.status === 403 && data.error.code === "consent_required") {
      vl.showConsent(consent, data.error.proposal, "send", (p) => send(p.token));
    } else { consent.hidden = false; consent.replaceChildren(errorBox(data.error)); again.hidden = false; }
  }

  form.elements.direction.addEventListener("change", fillAfter);
  form.addEventListener("submit", async () => {
    status.textContent = "Planning again (nothing is sent)…";
    problem.replaceChildren();
    let r;
    try {
      r = await post("/ui/api/replan", { review_id: reviewId, ...planFields() });
    } catch (_) {
      status.textContent = "";
      problem.replaceChildren(errorBox({ code: "unreachable", message: "The server did not answer: nothing was planned." }));
      return;
    }
    const data = await json(r);
    status.textContent = "";
    if (r.ok) render(data);
    else problem.replaceChildren(errorBox(data.error)); // the form, the last diff and the review stay
  });
  again.addEventListener("click", () => {
    again.hidden = true;
    planSection.hidden = true;
    for (const box of [claims, validation, diff, problem]) box.replaceChildren();
    send(null);
  });
  send(null);
})();
