"""Opening a 10 MB note in the page's Note view: the whole note rendered (before) vs the view in
parts (issue 46 item 7): the first part and the part holding the asked-for lines rendered, the
others placeholders that load as the user scrolls.

The vault of ``bench/note_open.py`` (five small notes and one note just under ``index.max_file_mb``);
no index. In this process, interleaved, for ``--rounds`` rounds, each after one ``note_text`` read:

* **whole**: ``web.pages.rendered_note`` over the whole note (what ``GET /note`` rendered before);
* **first response**: cutting the note into parts (the cache of parts emptied first, so the cut is
  paid) and ``web.pages.parted_note_html`` with lines in the middle of the note asked for;
* **one more part**: ``web.pages.note_part_html`` of a part (what ``/ui/api/note/part`` renders);
* **anchor**: finding the part that holds a heading near the end (a wikilink's ``#heading``).

Reported: median wall and CPU time of each, the HTML's size, and the ratio whole / first response.

    .venv/bin/python bench/note_parts.py [--mb 9.9] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import machine, median, save, table, temp_home
from note_open import NOTE, huge_note_vault


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=9.9)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from vaultlens.services.app import App
    from vaultlens.services.verbs import finding
    from vaultlens.web import note_parts
    from vaultlens.web.pages import note_part_html, parted_note_html, rendered_note
    from vaultlens.web.state import WebState

    with temp_home("note-parts") as tmp:
        vault, size = huge_note_vault(Path(tmp), args.mb)
        app = App.open(vault, {"embedding.provider": "fake", "embedding.tier": "off"})
        state = WebState(app)
        note = finding.note_text(app, NOTE)
        middle = note.text.count("\n") // 2
        target = (middle, middle + 2)
        sections = note.text.count("## Section ")

        def first_response() -> str:
            note_parts._CACHE.clear()  # the cut is paid, as by the first view of a note
            parts = note_parts.parted(note.text, note.content_hash)
            assert parts is not None
            return parted_note_html(state, note, parts, parts.shown_first(target), target)

        def parted() -> note_parts.PartedNote:
            parts = note_parts.parted(note.text, note.content_hash)
            assert parts is not None
            return parts

        runs: dict[str, Callable[[], Any]] = {
            "whole (before)": lambda: rendered_note(state, note, target),
            "first response": first_response,
            "one more part": lambda: note_part_html(state, parted(), NOTE, len(parted().parts) // 3),
            "anchor": lambda: parted().holding(f"h-Section-{sections - 2}"),
        }
        timings: dict[str, tuple[list[float], list[float]]] = {}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for name, run in runs.items():
                wall, cpu = timings.setdefault(name, ([], []))
                t, c = time.perf_counter(), time.process_time()
                out = run()
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                sizes[name] = len(out.encode()) if isinstance(out, str) else 0
        parts_count = len(parted().parts)
        app.close()

    ms = lambda v: f"{v * 1000:.0f}"  # noqa: E731
    rows = [("", "median ms", "median CPU ms", "HTML bytes")]
    for key, (wall, cpu) in timings.items():
        rows.append((key, ms(median(wall)), ms(median(cpu)), f"{sizes[key]:,}" if sizes[key] else "-"))
    print(f"note: {size / 1e6:.1f} MB in {parts_count} parts, {args.rounds} rounds")
    print(table(rows))
    whole, first = timings["whole (before)"], timings["first response"]
    ratio = median(whole[0]) / median(first[0])
    ratio_cpu = median(whole[1]) / median(first[1])
    print(f"whole / first response: {ratio:.1f}x wall, {ratio_cpu:.1f}x CPU")
    save(
        "note_parts",
        {
            "machine": machine(),
            "note_bytes": size,
            "parts": parts_count,
            "rounds": args.rounds,
            "median_s": {k: median(w) for k, (w, _) in timings.items()},
            "median_cpu_s": {k: median(c) for k, (_, c) in timings.items()},
            "html_bytes": sizes,
            "ratio_whole_over_first": {"wall": ratio, "cpu": ratio_cpu},
        },
    )


if __name__ == "__main__":
    main()
