"""Opening a 10 MB note in the page's Note view: the note read in 20,000-character slices (each slice
re-reading, re-checking and decoding the whole file, as the view did before) vs one whole-note read
(the ``note_text`` verb) (issue 45 item 5).

A vault of a few small notes and one note just under ``index.max_file_mb`` (headings, paragraphs,
wikilinks) is written; no index is needed to read a note. In this process, interleaved, for
``--rounds`` rounds:

* **read**: the note's text and hash, sliced (``finding.note`` at every ``next_offset``, joined as
  ``web.pages.read_note`` did) vs whole (``finding.note_text``);
* **view**: that read plus the view's HTML (``web.pages.rendered_note``: Markdown, links, line marks),
  what the server does for ``GET /note`` before it sends a byte.

Reported: median wall and CPU time of each, the ratio sliced / whole, and how many times each way
opened the note's file (counted through ``builtins.open``).

    .venv/bin/python bench/note_open.py [--mb 9.9] [--rounds 3]
"""

from __future__ import annotations

import argparse
import builtins
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import machine, median, save, table, temp_home

NOTE = "Big.md"


def big_note(mb: float) -> str:
    para = "Sourdough starters need flour and water every day; wild yeast makes the dough rise. " * 4
    parts = ["# Big\n\n"]
    size, i = 0, 0
    while True:
        block = f"## Section {i}\n\n{para}\n\nSee [[Small {i % 5}]] and #tag{i % 20}.\n\n"
        if size + len(block) > mb * 1_000_000:
            return "".join(parts)
        parts.append(block)
        size += len(block)
        i += 1


def huge_note_vault(root: Path, mb: float) -> tuple[Path, int]:
    """A vault of five small notes and NOTE of about ``mb`` MB linking them: its folder and NOTE's size."""
    vault = root / "vault"
    vault.mkdir()
    for i in range(5):
        (vault / f"Small {i}.md").write_text(f"# Small {i}\n\nA short note.\n", encoding="utf-8")
    (vault / NOTE).write_text(big_note(mb), encoding="utf-8")
    return vault, (vault / NOTE).stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=9.9)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from vaultlens.services.app import App
    from vaultlens.services.verbs import finding
    from vaultlens.web.pages import rendered_note
    from vaultlens.web.state import WebState

    def sliced(app: App, path: str) -> finding.NoteSlice:
        """The view's read before: the slice verb at every next_offset, joined under the first hash."""
        first = finding.note(app, path, 0, finding.MAX_SLICE)
        text, at = first.text, first.next_offset
        while at is not None:
            more = finding.note(app, path, at, finding.MAX_SLICE)
            text, at = text + more.text, more.next_offset
        return finding.NoteSlice(first.path, 0, len(text), first.total_length, first.content_hash, text, None)

    with temp_home("note-open") as tmp:
        vault, size = huge_note_vault(Path(tmp), args.mb)
        app = App.open(vault, {"embedding.provider": "fake", "embedding.tier": "off"})
        state = WebState(app)
        reads: dict[str, Callable[[], Any]] = {
            "sliced": lambda: sliced(app, NOTE),
            "whole": lambda: finding.note_text(app, NOTE),
        }

        opens: dict[str, int] = {}
        real_open = builtins.open
        for name, read in reads.items():
            count = [0]

            def counting(file: Any, *a: Any, _count: list[int] = count, **k: Any) -> Any:
                if str(file).endswith(NOTE):
                    _count[0] += 1
                return real_open(file, *a, **k)

            builtins.open = counting
            try:
                text = read().text
            finally:
                builtins.open = real_open
            opens[name] = count[0]
            assert text == (vault / NOTE).read_text(encoding="utf-8"), name

        timings: dict[str, tuple[list[float], list[float]]] = {}
        for _ in range(args.rounds):
            for name, read in reads.items():
                for what, run in (
                    ("read", read),
                    ("view", lambda read=read: rendered_note(state, read(), None)),
                ):
                    wall, cpu = timings.setdefault(f"{what} {name}", ([], []))
                    t, c = time.perf_counter(), time.process_time()
                    run()
                    wall.append(time.perf_counter() - t)
                    cpu.append(time.process_time() - c)
        app.close()

    ms = lambda v: f"{v * 1000:.0f}"  # noqa: E731
    rows = [("", "median ms", "median CPU ms", "opens of the note")]
    for key, (wall, cpu) in timings.items():
        rows.append((key, ms(median(wall)), ms(median(cpu)), str(opens[key.split()[1]])))
    print(f"note: {size / 1e6:.1f} MB, {args.rounds} rounds")
    print(table(rows))
    ratios = {
        what: median(timings[f"{what} sliced"][0]) / median(timings[f"{what} whole"][0])
        for what in ("read", "view")
    }
    for what, ratio in ratios.items():
        print(f"{what}: sliced / whole = {ratio:.1f}x")
    save(
        "note_open",
        {
            "machine": machine(),
            "note_bytes": size,
            "rounds": args.rounds,
            "opens": opens,
            "median_s": {k: median(w) for k, (w, _) in timings.items()},
            "median_cpu_s": {k: median(c) for k, (_, c) in timings.items()},
            "ratio_sliced_over_whole": ratios,
        },
    )


if __name__ == "__main__":
    main()
