"use strict";
// Ask as a conversation. The history lives in this script while the tab lives (sent with each
// question, kept nowhere else); a follow-up comes back with the question the vault was searched
// with; [S#] become links to their source lines, invalid ones are flagged. A remote model's consent
// step lists the passages to be sent; "allow for this tab" is a variable here, never stored. Stop
// aborts the request, and the server then cuts the model's.
(() => {
  const { el } = vl;
  const form = document.getElementById("ask-form");
  const question = document.getElementById("question");
  const extractive = document.getElementById("extractive");
  const button = document.getElementById("ask");
  const stop = document.getElementById("stop");
  const fresh = document.getElementById("new-conversation");
  const consent = document.getElementById("consent");
  const tabNote = document.getElementById("tab-consent");
  const past = document.getElementById("past");
  const asked = document.getElementById("asked");
  const rewritten = document.getElementById("rewritten");
  const answer = document.getElementById("answer");
  const sources = document.getElementById("sources");
  const NOT_IN_VAULT = "Not in your vault.";
  const TURNS = Number(form.dataset.historyTurns || 0); // llm.history_turns: what the server reads
  const ANSWER_SENT = 20000; // characters of an earlier answer a request may carry (the rewrite reads 1,500)

  const history = []; // {question: as the vault was searched with it, answer}, oldest first
  let allowForTab = false; // the user's opt-in, sent as each request's consent; gone on reload
  let running = null; // the AbortController of the request in flight

  function cited(text, byId, invalid) {
    const out = [];
    let last = 0;
    for (const m of text.matchAll(/\[(S\d+)\]/g)) {
      out.push(text.slice(last, m.index));
      const source = byId.get(m[1]);
      if (source && !invalid.has(m[1])) {
        out.push(el("a", { class: "citation", "data-source": m[1],
          href: vl.noteHref(source.path, source.start_line, source.end_line, source.page),
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
        el("a", { href: vl.noteHref(s.path, s.start_line, s.end_line, s.page) },
          `[${s.id}] ${s.path} › ${s.heading_path.join(" › ") || "(top)"}, ${s.page ? `page ${s.page}, ` : ""}lines ${s.start_line}-${s.end_line}`)))));
  }

  // The turn shown last moves up into the conversation, without the ids the current turn carries.
  function archive() {
    if (asked.hidden) return;
    const copy = (node, tag, cls) => {
      const out = el(tag, { class: cls }, Array.from(node.childNodes, (n) => n.cloneNode(true)));
      for (const inner of out.querySelectorAll("[id]")) inner.removeAttribute("id");
      return out;
    };
    past.append(el("article", { class: "turn" }, copy(asked, "p", "asked"),
      rewritten.hidden ? null : copy(rewritten, "p", "rewritten"),
      copy(answer, "div", "answer"), copy(sources, "div", "sources")));
    asked.hidden = rewritten.hidden = true;
    for (const node of [asked, rewritten, answer, sources]) node.replaceChildren();
  }

  function busy(on) {
    button.disabled = on;
    stop.disabled = !on;
    answer.setAttribute("aria-busy", on ? "true" : "false");
  }

  function showTabConsent() {
    const revoke = el("button", { id: "revoke-tab", type: "button" }, "Ask me each time");
    revoke.addEventListener("click", () => { allowForTab = false; tabNote.hidden = true; });
    tabNote.replaceChildren("Sending to the model is allowed for this tab; a reload asks again. ", revoke);
    tabNote.hidden = false;
  }

  // One request of the current turn; `extra` is {token, standalone} after the user said yes.
  async function send(text, extra) {
    running = new AbortController();
    busy(true);
    const live = el("p", { class: "streaming" });
    answer.replaceChildren(live);
    const body = { question: text, extractive: extractive.checked, consent: allowForTab,
      history: TURNS ? history.slice(-TURNS) : [], ...extra };
    try {
      const r = await fetch("/ui/api/ask", {
        method: "POST", signal: running.signal, body: JSON.stringify(body),
        headers: { "Content-Type": "application/json", "X-Vaultlens-CSRF": vl.csrf },
      });
      if (!r.ok) {
        const data = await vl.json(r);
        answer.replaceChildren();
        if (r.status === 403 && data.error.code === "consent_required" && data.error.proposal) {
          showConsent(text, data.error.proposal);
        } else answer.replaceChildren(vl.errorBox(data.error));
        return;
      }
      await vl.readEvents(r, (kind, data) => {
        if (kind === "question") {
          rewritten.replaceChildren("Searched as: ", el("q", {}, data.standalone_question));
          rewritten.hidden = false;
        } else if (kind === "token") live.textContent += data;
        else if (kind === "done") {
          done(data);
          history.push({ question: data.question, answer: data.answer.slice(0, ANSWER_SENT) });
        } else if (kind === "error") answer.replaceChildren(vl.errorBox(data));
      });
    } catch (error) {
      if (error.name === "AbortError") {
        answer.append(el("p", { class: "stopped", role: "status" },
          "Stopped: the model was told to stop. This answer is not part of the conversation."));
      } else answer.replaceChildren(vl.errorBox({ code: "unreachable", message: "The server did not answer.",
        hint: "Nothing was asked; ask again when the server is back." }));
    } finally {
      running = null;
      busy(false);
    }
  }

  // The server's proposal (403 consent_required): where, what, the question as it will be asked,
  // each passage (note, section, lines, characters) and the exact text; Send brings its token back.
  function showConsent(text, proposal) {
    const passages = proposal.passages || [];
    const total = passages.reduce((n, p) => n + p.chars, 0);
    const allow = el("input", { type: "checkbox", id: "allow-tab" });
    const yes = el("button", { id: "send", type: "button" }, "Send");
    const no = el("button", { id: "dont-send", type: "button" }, "Don't send");
    const rows = passages.map((p) => el("tr", { "data-source": p.id, "data-path": p.path },
      el("td", {}, p.id),
      el("td", {}, el("a", { href: vl.noteHref(p.path, p.start_line, p.end_line) }, p.path)),
      el("td", {}, p.heading_path.join(" › ") || "(top)"),
      el("td", {}, `${p.start_line}-${p.end_line}`),
      el("td", { class: "chars" }, p.chars.toLocaleString("en"))));
    const table = passages.length ? el("table", { id: "passages" },
      el("caption", {}, `${passages.length} passages, ${total.toLocaleString("en")} characters of note text`),
      el("thead", {}, el("tr", {}, ["Source", "Note", "Section", "Lines", "Characters"].map((t) =>
        el("th", { scope: "col" }, t)))),
      el("tbody", {}, rows)) : el("p", {}, "No note text: only what is listed above.");
    consent.replaceChildren(
      el("h2", {}, "What is sent, and where"),
      el("dl", {},
        el("dt", {}, "Provider and endpoint"), el("dd", { class: "destination" }, proposal.destination),
        el("dt", {}, "What"), el("dd", {}, proposal.what),
        proposal.question ? [el("dt", {}, "Your question, as it will be asked"),
          el("dd", { id: "consent-question" }, vl.visible(proposal.question))] : null),
      table,
      el("details", {}, el("summary", {}, `The exact text sent (${proposal.preview.length.toLocaleString("en")} characters)`),
        el("pre", { class: "preview", tabindex: "0" }, vl.visible(proposal.preview))),
      el("label", { for: "allow-tab" }, allow,
        " Allow sending to this model for this tab, without asking (until you reload or close it; nothing is stored)"),
      el("div", { class: "actions" }, yes, no));
    consent.hidden = false;
    yes.addEventListener("click", () => {
      if (allow.checked) { allowForTab = true; showTabConsent(); }
      consent.hidden = true;
      send(text, { token: proposal.token, standalone: proposal.question || undefined });
    });
    no.addEventListener("click", () => {
      consent.hidden = true;
      answer.replaceChildren(el("p", { class: "not-sent", role: "status" }, "Not sent: nothing left this machine."));
    });
    yes.focus();
  }

  function ask() {
    if (running) return; // Enter or a click while an answer streams: ignored
    const text = question.value.trim();
    if (!text) return;
    archive();
    consent.hidden = true;
    asked.textContent = text;
    asked.hidden = false;
    question.value = "";
    send(text, {});
  }

  button.addEventListener("click", ask);
  stop.addEventListener("click", () => { if (running) running.abort(); });
  fresh.addEventListener("click", () => {
    if (running) running.abort();
    history.length = 0;
    archive();
    past.replaceChildren();
    consent.hidden = true;
    question.focus();
  });
  question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); ask(); }
  });
  question.focus();
})();
