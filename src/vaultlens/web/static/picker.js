"use strict";
// The note picker: every input marked data-picker offers the notes whose title, alias or path
// match what is typed (GET /ui/api/notes?match=), as an ARIA combobox; picking one puts its path in.
(() => {
  const { el } = vl;
  for (const input of document.querySelectorAll("input[data-picker]")) {
    const list = el("ul", { id: `${input.id}-options`, role: "listbox", class: "picker", hidden: true });
    input.after(list);
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", list.id);
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("autocomplete", "off");
    let timer = null, seq = 0, active = -1;

    const options = () => [...list.querySelectorAll("[role=option]")];
    function close() {
      list.hidden = true; active = -1;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
    }
    function choose(path) { input.value = path; close(); }
    function mark(i) {
      const all = options();
      if (!all.length) return;
      active = (i + all.length) % all.length;
      all.forEach((o, k) => o.setAttribute("aria-selected", String(k === active)));
      input.setAttribute("aria-activedescendant", all[active].id);
    }
    async function fill() {
      const text = input.value.trim();
      const mine = ++seq;
      if (!text) { close(); return; }
      const r = await fetch(`/ui/api/notes?match=${encodeURIComponent(text)}`);
      const data = await vl.json(r);
      if (mine !== seq) return;
      if (!r.ok) { list.replaceChildren(el("li", { class: "error" }, data.error.message)); list.hidden = false; return; }
      list.replaceChildren(...data.notes.map((n, i) =>
        el("li", { id: `${list.id}-${i}`, role: "option", "aria-selected": "false", "data-path": n.path,
                   onmousedown: (e) => { e.preventDefault(); choose(n.path); } },
          el("span", { class: "title" }, n.title), " ", el("code", {}, n.path))));
      if (!data.notes.length) list.replaceChildren(el("li", { class: "empty" }, "No note matches."));
      list.hidden = false; active = -1;
      input.setAttribute("aria-expanded", "true");
    }
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(fill, 120); });
    input.addEventListener("blur", () => setTimeout(close, 150));
    input.addEventListener("keydown", (e) => {
      if (list.hidden) return;
      if (e.key === "ArrowDown") { e.preventDefault(); mark(active + 1); }
      else if (e.key === "ArrowUp") { e.preventDefault(); mark(active - 1); }
      else if (e.key === "Escape") close();
      else if (e.key === "Enter" && active >= 0) { e.preventDefault(); choose(options()[active].dataset.path); }
    });
  }
})();
