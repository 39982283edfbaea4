"""PDF text for the index: pypdfium2 (PDFium, the one vaultlens uses) against pypdf (pure Python), and what
PDFs add to an index run (issue 48).

(a) Extraction on real PDFs, in this process: pages/s and the text's quality by three proxies: the
    characters read, the share of glued "words" (30+ letters: spaces lost between words) and of
    characters outside printable text (broken glyph maps); plus the words both libraries agree on.
(b) vaultlens' own path: the same PDFs through the bounded child process (chunking/attachments.py).
(c) `vaultlens index` of the sample vault (examples/vault) alone, then with the PDFs copied in
    (index.attachments default), tier off: seconds and chunks.

Usage: .venv/bin/python bench/pdf_text.py [PDF ...]   (default: every PDF under /usr/share/doc)
pypdf is not a dependency: `pip install pypdf` for (a)'s comparison (it is skipped without it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, temp_home

GLUED = re.compile(r"[^\W\d_]{30,}")
WORD = re.compile(r"[^\W\d_]{3,}")


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(path.read_bytes())
    out = [pdf[i].get_textpage().get_text_bounded() for i in range(len(pdf))]
    pdf.close()
    return out


def pypdf_pages(path: Path) -> list[str]:
    import logging

    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its notes on fonts it cannot fully parse

    return [page.extract_text() or "" for page in pypdf.PdfReader(path).pages]


def quality(pages: list[str]) -> dict[str, float]:
    text = "\n".join(pages)
    words = text.split()
    odd = sum(1 for ch in text if not (ch.isprintable() or ch in "\n\r\t"))
    return {
        "chars": len(text),
        "glued": sum(1 for w in words if GLUED.search(w)) / max(1, len(words)),
        "odd": odd / max(1, len(text)),
    }


def timed(read: object, path: Path) -> tuple[float, list[str]]:
    start = time.perf_counter()
    pages = read(path)  # type: ignore[operator]
    return time.perf_counter() - start, pages


def main() -> None:
    pdfs = [Path(p) for p in sys.argv[1:]] or sorted(Path("/usr/share/doc").rglob("*.pdf"))
    print(f"{len(pdfs)} PDFs: " + ", ".join(f"{p.name} ({p.stat().st_size // 1024} KB)" for p in pdfs))
    readers = {"pypdfium2": pdfium_pages}
    try:
        import pypdf  # noqa: F401

        readers["pypdf"] = pypdf_pages
    except ImportError:
        print("pypdf not installed: (a) measures pypdfium2 alone")
    texts: dict[str, dict[str, list[str]]] = {}
    print("\n(a) library      PDF                               pages  pages/s   chars  glued   odd")
    for name, read in readers.items():
        texts[name] = {}
        for path in pdfs:
            read(path)  # warm: imports, file cache
            seconds, pages = min((timed(read, path) for _ in range(3)), key=lambda r: r[0])
            texts[name][path.name] = pages
            q = quality(pages)
            print(
                f"    {name:12} {path.name:34} {len(pages):5} {len(pages) / seconds:8.1f} "
                f"{q['chars']:7.0f} {q['glued']:6.2%} {q['odd']:6.2%}"
            )
    if "pypdf" in texts:
        for path in pdfs:
            a, b = (set(WORD.findall(" ".join(texts[n][path.name]).lower())) for n in ("pypdfium2", "pypdf"))
            print(f"    words in common ({path.name}): {len(a & b) / max(1, len(a | b)):.1%}")

    from vaultlens.chunking.attachments import pdf_pages

    print("\n(b) vaultlens' bounded child process (one per PDF)")
    for path in pdfs:
        data = path.read_bytes()
        start = time.perf_counter()
        pages = pdf_pages(data)
        seconds = time.perf_counter() - start
        print(
            f"    {path.name:34} {len(pages):5} pages {seconds:6.2f} s  {len(pages) / seconds:7.1f} pages/s"
        )

    print("\n(c) vaultlens index (examples/vault, tier off)")
    with temp_home("pdf-text") as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(REPO / "examples" / "vault", vault)
        for label, extra in (("Markdown only", []), ("+ PDFs", pdfs)):
            for path in extra:
                shutil.copy(path, vault / path.name)
            subprocess.run(
                [sys.executable, "-m", "vaultlens", "clear", "--vault", str(vault)], capture_output=True
            )
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "vaultlens", "index", "--vault", str(vault), "--json",
                 "--set", "embedding.tier=off"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            seconds = time.perf_counter() - start
            stats = json.loads(done.stdout)
            print(
                f"    {label:14} {seconds:6.1f} s  files {stats['files_scanned']}, "
                f"chunks embedded {stats['chunks_embedded']}"
            )
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "vaultlens", "index", "--vault", str(vault), "--json",
             "--set", "embedding.tier=off"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        stats = json.loads(done.stdout)
        print(
            f"    again, unchanged {time.perf_counter() - start:4.1f} s  files changed {stats['files_changed']}, "
            f"chunks embedded {stats['chunks_embedded']}"
        )
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
