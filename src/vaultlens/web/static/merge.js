"use strict";
// Merge: POST /ui/api/merge plans OTHER into KEEP; the plan is shown for review (OTHER's sections
// to carry over as checkboxes, the notes whose links are repointed, where OTHER goes), then its one
// combined exact diff, Apply, and Undo (History's verbs).
(() => {
  const { el, post, json, errorBox } = vl;
  const pair = document.getElementById("merge-pair");
  const plan = document.getElementById("merge-plan");
  const diff = document.getElementById("diff");
  const status = document.getElementById("status");

  async function call(url, body, what) {
    try {
      const r = await post(url, body);
      return { r, data: await json(r) };
    } catch (_) {
      status.replaceChildren(errorBox({ code: "unreachable", message: `The server did not answer: ${what}.` }));
      return null;
    }
  }

  function sectionBox(heading, carried, i) {
    const id = `section-${i}`;
    const name = heading || "(the text before the first heading)";
    return el("li", {},
      el("input", { type: "checkbox", id, name: "section", value: heading, checked: carried,
        disabled: !heading, "aria-describedby": heading ? null : "no-heading-note" }),
      el("label", { for: id, class: "inline" }, name));
  }

  function render(data) {
    const sections = [...data.carried.map((s) => [s, true]), ...data.left_out.map((s) => [s, false])];
    const form = el("form", { id: "merge-form" },
      el("fieldset", {},
        el("legend", {}, `Sections of ${data.other} to carry over into ${data.keep}`),
        sections.length
          ? el("ul", { class: "checks" }, sections.map(([s, on], i) => sectionBox(s, on, i)))
          : el("p", { class: "empty" }, "It has no sections."),
        sections.some(([s]) => !s)
          ? el("p", { class: "hint", id: "no-heading-note" },
            "Text before the first heading goes over only when the planner finds it new; sections are picked by heading.")
          : null,
        el("p", { class: "hint" }, data.coverage === "sections" ? "Picked by you."
          : `Checked: what ${data.keep} does not cover yet (${data.coverage === "index" ? "the duplicate finder's coverage" : "lines not already in it"}).`)),
      el("button", { type: "submit", id: "replan-merge" }, "Plan again with these sections"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const picked = [...form.querySelectorAll("input[name=section]:checked:not([disabled])")].map((c) => c.value);
      plan_(picked);
    });
    plan.replaceChildren(
      el("h2", {}, "What the merge does"),
      form,
      el("h3", {}, `Notes whose links to ${data.other} are repointed (${data.relinked.length})`),
      data.relinked.length
        ? el("ul", { id: "relinked" }, data.relinked.map((p) => el("li", { "data-path": p }, el("a", { href: vl.noteHref(p) }, p))))
        : el("p", { class: "empty", id: "relinked" }, "No other note links to it."),
      el("h3", {}, "Where it goes"),
      el("p", { id: "trash", "data-path": data.trash }, `${data.other} is moved to `, el("code", {}, data.trash),
        data.trash_note ? ` (${data.trash_note})` : "", "; its front matter's tags and aliases are united with the kept note's."));
    vl.proposeWrite(diff, data.plan.op_id, (applied) => undoButton(applied.op_id));
  }

  function undoButton(opId) {
    const button = el("button", { type: "button", id: "undo" }, "Undo this merge");
    button.addEventListener("click", async () => {
      button.disabled = true;
      const got = await call("/ui/api/undo", { op_id: opId }, "nothing was undone");
      if (!got) { button.disabled = false; return; }
      if (!got.r.ok) { status.replaceChildren(errorBox(got.data.error)); button.disabled = false; return; }
      plan.replaceChildren(el("p", {}, "Undo: every note back as it was before the merge."));
      await vl.proposeWrite(diff, got.data.op_id, () => { status.textContent = "Undone: every note is as it was."; });
    });
    diff.append(button);
  }

  async function plan_(sections) {
    status.textContent = "Planning the merge (nothing is written)…";
    const got = await call("/ui/api/merge", { keep: pair.dataset.keep, other: pair.dataset.other, sections },
      "nothing was planned");
    if (!got) return;
    status.textContent = "";
    if (got.r.ok) render(got.data);
    else status.replaceChildren(errorBox(got.data.error)); // the last plan and its form stay
  }
  plan_(null);
})();
