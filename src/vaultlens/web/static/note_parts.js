// A huge note's view in parts: the parts not rendered yet load as they come near the viewport, a
// link to a heading or block in one of them loads it and scrolls there, and "Load the rest" loads
// every part. Each part is asked for at the content hash of the page's read: once the note changed,
// the server refuses and the page says to reload (parts of two versions are never joined).
"use strict";
(() => {
  const body = document.getElementById("note-body");
  if (!body || !body.dataset.hash) return;
  const base = { path: body.dataset.path, hash: body.dataset.hash };
  const loading = new Map(); // part number -> its request
  let refused = false;

  function placeholder(n) {
    return body.querySelector(`.note-part.pending[data-part="${n}"]`);
  }

  async function fetchPart(params) {
    const r = await fetch("/ui/api/note/part?" + new URLSearchParams({ ...base, ...params }));
    if (r.status === 204) return null;
    if (!r.ok) {
      let message = "This part could not be loaded.";
      try { const e = (await r.json()).error; message = e.message + (e.hint ? " " + e.hint : ""); } catch (_) { /* not JSON */ }
      throw new Error(message);
    }
    const box = document.createElement("div");
    box.innerHTML = await r.text(); // the server's rendered, escaped part
    return box.firstElementChild;
  }

  function place(section) {
    const old = placeholder(section.dataset.part);
    if (old) old.replaceWith(section);
    return section;
  }

  function fail(n, error) {
    refused = true;
    const old = placeholder(n);
    const note = vl.el("p", { class: "error", role: "alert" }, error.message);
    if (old) old.replaceChildren(note);
    else body.prepend(note); // a link's heading was asked for: said above the note
  }

  function load(n) {
    if (refused || !placeholder(n)) return Promise.resolve();
    if (!loading.has(n)) {
      const old = placeholder(n);
      old.setAttribute("aria-busy", "true");
      loading.set(n, fetchPart({ n }).then(place, (e) => fail(n, e)));
    }
    return loading.get(n);
  }

  // Near the viewport (scrolled or jumped to): load. A part waits about as tall as it will be, so
  // the scroll bar is the note's and only the parts around where the user is are asked for.
  const watcher = new IntersectionObserver((seen) => {
    for (const e of seen) if (e.isIntersecting) load(Number(e.target.dataset.part));
  }, { rootMargin: "800px 0px" });
  const lineEm = 1.6, charsPerLine = Math.max(40, body.clientWidth / 8);
  for (const p of body.querySelectorAll(".note-part.pending")) {
    p.style.minHeight = `${Math.round((Number(p.dataset.chars) / charsPerLine) * lineEm)}em`;
    watcher.observe(p);
  }

  // #h-heading or #b-block not on the page yet: the part holding it, then there.
  async function toHash() {
    const id = decodeURIComponent(location.hash.slice(1));
    if (!id || refused) return;
    let found = document.getElementById(id);
    if (!found) {
      try {
        const section = await fetchPart({ anchor: id });
        if (section && placeholder(section.dataset.part)) place(section);
      } catch (e) { fail(-1, e); return; }
      found = document.getElementById(id);
    }
    if (found) found.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", toHash);
  toHash();

  const rest = document.getElementById("load-rest");
  if (rest) {
    rest.addEventListener("submit", async (e) => {
      e.preventDefault();
      const button = rest.querySelector("button");
      button.disabled = true;
      for (const p of body.querySelectorAll(".note-part.pending")) await load(Number(p.dataset.part));
      rest.hidden = true;
    });
  }
})();
