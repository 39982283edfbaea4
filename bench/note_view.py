"""The note view's cost on a large vault: the link resolver built per view (a whole-vault scan) vs
once per index generation (issue 46 item 1).

A generated vault (``audit_structure.generate``: folders, front matter, wikilinks in every form,
embeds, code and comments) is indexed with the deterministic hashing provider (the embeddings do not
matter here); then, in this process, the note view's HTML (``web.pages.rendered_note``: Obsidian's
links resolved, embeds read) is rendered for a sample of notes:

* **per view** (what every view paid before): the resolver cache emptied before each view;
* **cached**: the resolver of the index's generation kept (the first view of the sample builds it).

Reported: the median and p95 per view, the ratio per view / cached, and the resolver's own build
time (the scan it saves). CPU time alongside wall time (a shared machine's wall time is mostly the
queue).

    .venv/bin/python bench/note_view.py [--notes 20000] [--views 200]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from _common import machine, median, pct, save, table, temp_home
from audit_structure import generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=20_000)
    ap.add_argument("--views", type=int, default=200)
    args = ap.parse_args()

    import vaultlens as services
    import vaultlens.testing  # registers the "fake" provider
    from vaultlens.services.app import App
    from vaultlens.services.verbs import finding
    from vaultlens.web.pages import read_note, rendered_note
    from vaultlens.web.state import WebState

    with temp_home("note-view") as tmp:
        vault = Path(tmp) / "vault"
        generate(vault, args.notes)
        app = App.open(vault, {"embedding.provider": "fake", "embedding.tier": "off"})
        started = time.perf_counter()
        services.index(app)
        print(f"{args.notes:,} notes indexed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        state = WebState(app)
        paths = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
        sample = random.Random(46).sample(paths, min(args.views, len(paths)))

        def views(fresh: bool) -> tuple[list[float], list[float]]:
            wall, cpu = [], []
            for path in sample:
                if fresh:
                    finding._RESOLVERS.clear()  # what every view paid before: a resolver of its own
                t, c = time.perf_counter(), time.process_time()
                rendered_note(state, read_note(state, path), None)
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            return wall, cpu

        finding._RESOLVERS.clear()
        t = time.perf_counter()
        finding.link_resolver(app)
        build = time.perf_counter() - t
        per_view, per_view_cpu = views(fresh=True)
        finding._RESOLVERS.clear()
        cached, cached_cpu = views(fresh=False)
        app.close()

    ms = lambda v: f"{v * 1000:.1f}"  # noqa: E731
    rows = [("", "median ms", "p95 ms", "median CPU ms")]
    rows.append(
        ("resolver per view", ms(median(per_view)), ms(pct(per_view, 0.95)), ms(median(per_view_cpu)))
    )
    rows.append(
        ("resolver per generation", ms(median(cached)), ms(pct(cached, 0.95)), ms(median(cached_cpu)))
    )
    ratio = median(per_view) / median(cached)
    print(table(rows))
    print(f"resolver build (one vault scan): {build * 1000:.0f} ms; per view / cached, median: {ratio:.1f}x")
    save(
        "note_view",
        {
            "machine": machine(),
            "notes": args.notes,
            "views": len(sample),
            "resolver_build_ms": build * 1000,
            "per_view_median_ms": median(per_view) * 1000,
            "per_view_p95_ms": pct(per_view, 0.95) * 1000,
            "cached_median_ms": median(cached) * 1000,
            "cached_p95_ms": pct(cached, 0.95) * 1000,
            "ratio_median": ratio,
        },
    )


if __name__ == "__main__":
    main()
