"use strict";
// Ask: the answer streams in; [S#] become links to their source lines; invalid ones are flagged.
(() => {
  const { el } = vl;
  const question = document.getElementById("question");
  const extractive = document.getElementById("extractive");
  const button = document.getElementById("ask");
  const consent = document.getElementById("consent");
  const answer = document.getElementById("answer");
  const sources = document.getElementById("sources");
  const NOT_IN_VAULT = "Not in your vault.";

  function cited(text, byId, invalid) {
    const out = [];
    let last = 0;
    for (const m of text.matchAll(/\[(S\d+)\]/g)) {
      out.push(text.slice(last, m.index));
      const source = byId.get(m[1]);
      if (source && !invalid.has(m[1])) {
        out.push(el("a", { class: "citation", "data-source": m[1],
          href: vl.noteHref(source.path, source.start_line, source.end_line),
          title: `${source.path}, lines ${source.start_line}-${source.end_line}` }, m[0]));
      } else {
        out.push(el("span", { class: "citation invalid", "data-source": m[1],
          title: "This source id is not one of the sources given to the model." }, m[0]));
      }
      last = m.index + m[0].length;
    }
    out.push(text.slice(last));
    return out;
  }

  function done(data) {
    const byId = new Map(data.sources.map((s) => [s.id, s]));
    const invalid = new Set(data.invalid_citations);
    if (!data.sources.length || data.answer.trim() === NOT_IN_VAULT) {
      answer.replaceChildren(el("p", { id: "not-in-vault", role: "status" }, NOT_IN_VAULT));
    } else {
      // the server's rendering (escaped, no raw HTML); then [S#] in its text become citations
      answer.innerHTML = data.answer_html;
      const walker = document.createTreeWalker(answer, NodeFilter.SHOW_TEXT);
      const texts = [];
      while (walker.nextNode()) if (/\[S\d+\]/.test(walker.currentNode.data)) texts.push(walker.currentNode);
      for (const node of texts) node.replaceWith(...cited(node.data, byId, invalid));
    }
    sources.replaceChildren(
      data.sources.length ? el("h2", {}, "Sources") : "",
      el("ol", {}, data.sources.map((s) => el("li", { "data-source": s.id },
        el("a", { href: vl.noteHref(s.path, s.start_line, s.end_line) },
          `[${s.id}] ${s.path} › ${s.heading_path.join(" › ") || "(top)"}, lines ${s.start_line}-${s.end_line}`)))));
  }

  async function ask(withConsent) {
    const text = question.value.trim();
    if (!text) return;
    button.disabled = true;
    answer.replaceChildren(el("p", { class: "streaming", "aria-busy": "true" }));
    sources.replaceChildren();
    try {
      const r = await vl.post("/ui/api/ask", { question: text, extractive: extractive.checked, consent: withConsent });
      if (!r.ok) {
        const data = await vl.json(r);
        if (r.status === 403 && data.error.code === "consent_required") {
          answer.replaceChildren();
          vl.showConsent(consent, data.error.proposal, "send", () => { consent.hidden = true; ask(true); });
        } else answer.replaceChildren(vl.errorBox(data.error));
        return;
      }
      consent.hidden = true;
      const live = answer.firstChild;
      await vl.readEvents(r, (kind, data) => {
        if (kind === "token") live.textContent += data;
        else if (kind === "done") done(data);
        else if (kind === "error") answer.replaceChildren(vl.errorBox(data));
      });
    } finally {
      button.disabled = false;
    }
  }

  button.addEventListener("click", () => ask(false));
  question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); ask(false); }
  });
  question.focus();
})();
