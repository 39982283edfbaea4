"use strict";
// Search as you type: debounced, results grouped per note; arrows move the active result, Enter
// opens it (the first one when none is active yet). Enter acts on the query in the field: typed
// faster than its results came, it waits for them, never opening a result of an earlier query.
(() => {
  const { el } = vl;
  const q = document.getElementById("q");
  const results = document.getElementById("results");
  const weak = document.getElementById("weak-notice");
  const notices = document.getElementById("search-notices"); // e.g. the quality tier was left out
  const tagged = document.getElementById("tagged"); // the notes carrying a #tag query, listed first
  let timer = null, seq = 0;
  let shown = null; // the query the listed results answer
  let asked = null; // the query of the request in flight
  let enterWaits = false; // Enter was pressed before the field's query had its results

  // Whole words only: a word is marked when it is a query term, or starts with one of 4+ letters
  // (the index stems, so "feeding" answers "feed"); a term is never marked inside another word.
  function marked(text, terms) {
    const wanted = terms.map((t) => t.toLowerCase()).filter((t) => t.length >= 3);
    if (!wanted.length) return [text];
    const hit = (word) => {
      const w = word.toLowerCase();
      return wanted.some((t) => w === t || (t.length >= 4 && w.startsWith(t)));
    };
    return text.split(/([\p{L}\p{N}]+)/u).map((part, i) => (i % 2 && hit(part) ? el("mark", {}, part) : part));
  }

  function render(hits, query) {
    const terms = (query.match(/[\p{L}\p{N}]{2,}/gu) || []);
    weak.hidden = !(hits.length && hits.every((h) => h.weak));
    if (!hits.length) { results.replaceChildren(el("p", { class: "empty" }, "No matching note.")); return; }
    results.replaceChildren(...hits.map((hit) => {
      const first = hit.sections[0];
      const href = vl.noteHref(hit.path, first && first.start_line, first && first.end_line, first && first.page);
      return el("article", { class: "result", "data-path": hit.path },
        el("h2", {}, el("a", { href }, hit.title || hit.path)),
        el("p", { class: "meta" }, el("code", {}, hit.path), " ",
          el("span", { class: "similarity", title: "cosine similarity of the best section" },
            `similarity ${hit.similarity.toFixed(2)}`),
          hit.weak ? el("span", { class: "weak" }, " weak match") : null),
        el("ul", { class: "sections" }, hit.sections.map((s) =>
          el("li", { class: "section", "data-lines": `${s.start_line}-${s.end_line}` },
            el("a", { href: vl.noteHref(hit.path, s.start_line, s.end_line, s.page), class: "heading-path" },
              s.heading_path.join(" › ") || "(top)"),
            el("span", { class: "lines" },
              (s.page ? ` page ${s.page},` : s.card ? ` card ${s.card},` : "") + ` lines ${s.start_line}-${s.end_line}`),
            el("p", { class: "text" }, marked(s.snippet, terms))))));
    }));
  }

  // A query that is exactly one #tag lists the notes carrying it (the tag view's list) above the meaning
  // search, which still runs: a tag link must list exactly its notes, never only meaning neighbours.
  async function showTagged(query, mine) {
    const m = /^#([^\s#]+)$/u.exec(query);
    if (!m) { tagged.hidden = true; tagged.replaceChildren(); return; }
    let r;
    try { r = await fetch(`/tag/notes?name=${encodeURIComponent(m[1])}`); } catch (_) { return; }
    const html = await r.text();
    if (mine !== seq) return;
    tagged.innerHTML = r.ok ? html : ""; // the server's own escaped fragment (tag_page.py)
    tagged.hidden = !r.ok;
  }

  async function run() {
    timer = null;
    const query = q.value.trim();
    const mine = ++seq;
    history.replaceState(null, "", query ? `/?q=${encodeURIComponent(query)}` : "/");
    if (!query) { results.replaceChildren(); weak.hidden = true; shown = ""; enterWaits = false; tagged.hidden = true; return; }
    showTagged(query, mine);
    asked = query;
    let r;
    try {
      r = await fetch(`/ui/api/search?q=${encodeURIComponent(query)}`);
    } catch (_) {
      if (mine === seq) { asked = null; enterWaits = false; } // the banner says the server is away
      return;
    }
    const data = await vl.json(r);
    if (mine !== seq) return; // a newer keystroke's answer wins
    asked = null;
    const said = r.ok ? JSON.parse(r.headers.get("Vaultlens-Notices") || "[]") : [];
    notices.textContent = said.join(" ");
    notices.hidden = !said.length;
    shown = query;
    if (!r.ok) { enterWaits = false; weak.hidden = true; results.replaceChildren(vl.errorBox(data.error)); return; }
    render(data, query);
    if (enterWaits && query === q.value.trim()) { enterWaits = false; open(); }
  }

  function open() {
    const active = results.querySelector(".result.active a") || results.querySelector(".result a");
    if (active) location.href = active.href;
  }

  function enter() {
    const query = q.value.trim();
    if (!query) return;
    if (shown === query && timer === null) { open(); return; }
    enterWaits = true; // the field's query has no results listed yet: open its first when they come
    if (asked !== query) { clearTimeout(timer); run(); }
  }

  function move(step) {
    const all = [...results.querySelectorAll(".result")];
    if (!all.length) return;
    const at = all.findIndex((r) => r.classList.contains("active")); // -1: none yet, ArrowDown takes the first
    const next = all[Math.min(all.length - 1, Math.max(0, at < 0 && step < 0 ? 0 : at + step))];
    all.forEach((r) => r.classList.remove("active"));
    next.classList.add("active");
    next.scrollIntoView({ block: "nearest" });
  }

  q.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, 150);
    enterWaits = false;
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") { e.preventDefault(); move(1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); move(-1); }
    else if (e.key === "Enter" && (e.target === q || e.target === document.body)) { e.preventDefault(); enter(); }
  });
  const initial = new URLSearchParams(location.search).get("q");
  if (initial) { q.value = initial; run(); }
  q.focus();
})();
