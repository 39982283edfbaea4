// vaultlens page helpers: the CSRF token, JSON and SSE requests, a diff table, a consent box.
// Hand-written, no dependencies: nothing is fetched from the internet.
"use strict";

const vl = (() => {
  const csrf = document.querySelector('meta[name="vaultlens-csrf"]').content;

  // Forms the page's scripts handle never navigate (no inline onsubmit: the CSP allows no inline code).
  for (const form of document.querySelectorAll("form[data-scripted]")) {
    form.addEventListener("submit", (e) => e.preventDefault());
  }

  // A banner when the server does not answer (stopped, restarted, network gone): every request of
  // every page goes through fetch, so a failed one raises it and the next answer takes it down.
  const realFetch = window.fetch.bind(window);
  function banner(shown) {
    let box = document.getElementById("offline");
    if (!shown) { if (box) box.hidden = true; return; }
    if (!box) {
      box = document.createElement("div");
      box.id = "offline";
      box.setAttribute("role", "alert");
      box.append("The server is not answering (stopped or restarted?): what you just did was not done. ",
        Object.assign(document.createElement("a"), { href: location.href, textContent: "Reload" }),
        " when it is back; History lists every note that was written.");
      document.body.prepend(box);
    }
    box.hidden = false;
  }
  window.fetch = async (...args) => {
    try {
      const response = await realFetch(...args);
      banner(false);
      return response;
    } catch (error) {
      if (error.name !== "AbortError") banner(true); // a Stop the page asked for is no outage
      throw error;
    }
  };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Vaultlens-CSRF": csrf },
      body: JSON.stringify(body || {}),
    });
  }

  async function json(response) {
    try {
      return await response.json();
    } catch (_) {
      return { error: { code: "http", message: `The server answered ${response.status}.` } };
    }
  }

  // A message written for the terminal: its `command` spans as <code> (layout.prose on the server).
  function prose(text) {
    const parts = String(text ?? "").split("`");
    if (parts.length % 2 === 0) return [String(text ?? "")];
    return parts.map((part, i) => (i % 2 ? el("code", null, part) : part));
  }

  function errorBox(error) {
    // page_expired: the server restarted since this page was loaded; a reload shows it as it is now
    // (read-only until the address with the new start's key is opened: the hint says so)
    const reload = error.code === "page_expired"
      ? [" ", el("a", { id: "reload", href: location.href }, "Reload the page")] : [];
    return el("p", { class: "error", role: "alert", "data-code": error.code },
      prose(error.message), error.hint ? el("span", { class: "hint" }, " ", prose(error.hint)) : null, ...reload);
  }

  // A note's view; a PDF or canvas (the view redirects to Obsidian, a PDF at its section's page).
  function noteHref(path, start, end, page) {
    const q = new URLSearchParams({ path });
    if (start) q.set("lines", `${start}-${end}`);
    if (page) q.set("page", page);
    return `/note?${q}`;
  }

  // Read a text/event-stream response, calling onEvent(kind, data) per event.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let kind = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) kind = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (data.length) onEvent(kind, JSON.parse(data.join("\n")));
      }
    }
  }

  // Part `id` of this page fetched again and swapped in (after an action changed what it lists).
  async function refreshPart(id) {
    const r = await fetch(location.href, { headers: { Accept: "text/html" } });
    if (!r.ok) return false;
    const fresh = new DOMParser().parseFromString(await r.text(), "text/html").getElementById(id);
    if (fresh) document.getElementById(id).replaceWith(fresh);
    return Boolean(fresh);
  }

  // Control, bidi and zero-width characters by name, as the server's diffs and the terminal show
  // them (vault/hidden.py): a U+202E would reorder a line here, so no diff or preview shows one raw.
  const C0 = "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US".split(" ");
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060-\u2064\u2066-\u2069\ufeff]/g;
  function visible(text) {
    return String(text).replace(HIDDEN, (ch) => {
      const code = ch.charCodeAt(0);
      if (code < 32) return `<${C0[code]}>`;
      if (code === 0x7f) return "<DEL>";
      if (code === 0xfeff) return "<BOM>";
      return `<U+${code.toString(16).toUpperCase().padStart(4, "0")}>`;
    });
  }

  // A unified diff as a side-by-side table (before | after), line numbers from the hunk headers.
  function diffTable(raw, caption) {
    const text = visible(raw);
    const rows = [];
    let left = 0, right = 0, dels = [], adds = [];
    const flush = () => {
      for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
        const d = dels[i], a = adds[i];
        rows.push(el("tr", {},
          el("td", { class: "ln" }, d ? d[0] : ""), el("td", { class: d ? "del" : "none" }, d ? d[1] : ""),
          el("td", { class: "ln" }, a ? a[0] : ""), el("td", { class: a ? "add" : "none" }, a ? a[1] : "")));
      }
      dels = []; adds = [];
    };
    let last = null; // the line before: [number, text] of dels or adds, or a context row's two cells
    for (const line of text.split("\n")) {
      if (line.startsWith("--- ") || line.startsWith("+++ ") || line === "") continue;
      const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      if (hunk) {
        flush();
        left = +hunk[1]; right = +hunk[2];
        rows.push(el("tr", { class: "hunk" }, el("td", { colspan: "4" }, line)));
      } else if (line[0] === "-") dels.push(last = [left++, line.slice(1)]);
      else if (line[0] === "+") adds.push(last = [right++, line.slice(1)]);
      else if (line[0] === "\\") { // the line before ends the file with no newline: said, or -x / +x look alike
        if (last && typeof last[1] === "string") last[1] += " " + line;
        else if (last) for (const cell of last) cell.append(" " + line);
      } else {
        flush();
        last = [el("td", {}, line.slice(1)), el("td", {}, line.slice(1))];
        rows.push(el("tr", {}, el("td", { class: "ln" }, left++), last[0], el("td", { class: "ln" }, right++), last[1]));
      }
    }
    flush();
    const head = el("tr", {}, ...["Line", "Before", "Line", "After"].map((t) => el("th", { scope: "col" }, t)));
    return el("table", { class: "diff" }, el("caption", {}, caption), el("thead", {}, head), el("tbody", {}, rows));
  }

  // Show a write proposal (409 write_unconfirmed): its exact diff and an Apply button that sends
  // back the proposal's token. onDone(applied) gets the verb's result.
  function showWrite(target, proposal, onDone) {
    const status = el("p", { role: "status" });
    const button = el("button", { id: "apply", type: "button" }, "Apply this change");
    button.addEventListener("click", async () => {
      button.disabled = true;
      let r;
      try {
        r = await post("/ui/api/apply", { op_id: proposal.op_id, token: proposal.token });
      } catch (_) {
        status.replaceChildren(errorBox({ code: "unreachable",
          message: "The server did not answer: nothing was written by this click.",
          hint: "Reload when the server is back and apply again; History lists every note written." }));
        button.disabled = false;
        return;
      }
      const data = await json(r);
      if (!r.ok) { status.replaceChildren(errorBox(data.error)); button.disabled = false; return; }
      button.remove();
      target.append(el("p", { id: "applied", "data-op": data.op_id, role: "status" },
        `Written: ${data.path || (data.paths || []).join(", ")}. `,  // a group (merge, split): its notes
        el("a", { href: "/history" }, "History"), " can undo it."));
      if (onDone) onDone(data);
    });
    target.replaceChildren(
      el("h2", {}, "The exact change"),
      el("p", {}, `${proposal.what} — ${proposal.destination}`),
      diffTable(proposal.preview, `Diff of ${proposal.destination}`),
      button, status);
  }

  // Ask the server for a planned operation's proposal, then show it (see showWrite).
  async function proposeWrite(target, opId, onDone) {
    const r = await post("/ui/api/apply", { op_id: opId });
    const data = await json(r);
    if (r.status === 409 && data.error.proposal) showWrite(target, data.error.proposal, onDone);
    else target.replaceChildren(errorBox(data.error || { code: "http", message: "Unexpected answer." }));
  }

  // A send proposal (403 consent_required): where the text goes and, when known, the exact text.
  // With ``proposal.sources`` (how much of which note a review prompt carries) the exact text is
  // summed up and folded, and Send comes first instead of thousands of pixels below.
  function showConsent(target, proposal, buttonId, onSend) {
    const button = el("button", { id: buttonId, type: "button" }, "Send");
    button.addEventListener("click", () => { button.disabled = true; onSend(proposal); });
    target.hidden = false;
    if (proposal.sources) return showFolded(target, proposal, button);
    target.replaceChildren(
      el("h2", {}, "What is sent, and where"),
      el("dl", {},
        el("dt", {}, "Provider and endpoint"), el("dd", { class: "destination" }, proposal.destination),
        el("dt", {}, "What"), el("dd", {}, proposal.what)),
      ...(proposal.remarks || []).map((r) => el("p", { class: "remark" }, r)),
      proposal.preview ? el("details", { open: true }, el("summary", {}, "The exact text sent"),
        el("pre", { class: "preview", tabindex: "0" }, visible(proposal.preview))) : null,
      el("p", {}, "Sent for this request only; nothing is remembered."),
      button);
  }

  function showFolded(target, proposal, button) {
    const n = (x) => x.toLocaleString();
    const notes = proposal.sources.map((s) => el("li", { "data-path": s.path },
      el("code", {}, s.path), `: ${n(s.chars)} characters` + (s.chars < s.of ? ` of ${n(s.of)} (the start only)` : "")));
    const size = proposal.preview ? proposal.preview.length : 0;
    target.replaceChildren(
      el("h2", {}, "What is sent, and where"),
      el("dl", {},
        el("dt", {}, "Provider and endpoint"), el("dd", { class: "destination" }, proposal.destination),
        el("dt", {}, "What"), el("dd", {}, `A prompt of ${n(size)} characters, with the text of:`)),
      el("ul", { id: "consent-summary" }, notes),
      ...(proposal.remarks || []).map((r) => el("p", { class: "remark" }, r)),
      el("p", {}, "Sent for this request only; nothing is remembered."),
      button,
      proposal.preview ? el("details", {}, el("summary", {}, "The exact text sent (expand to read it)"),
        el("pre", { class: "preview", tabindex: "0" }, visible(proposal.preview))) : null);
  }

  return { csrf, el, post, json, errorBox, noteHref, readEvents, refreshPart, visible, diffTable, showWrite,
    proposeWrite, showConsent };
})();
