"""Copies of ../shared/vaults/fastapi-docs for the translation checks, built under /tmp.

fastapi-docs keeps the English file name for both languages (`en/tutorial/cors.md`, `ru/tutorial/cors.md`),
so a translation could be found by its name alone. With `--russian-names` each `ru/` page is named after
its own first heading (`ru/учебник/CORS (Cross-Origin Resource Sharing).md`) and its folders get Russian
names, so only the content can pair it with its English page. `--strip-anchors` also drops the English
`{ #anchor }` ids every heading ends with. `--half` keeps only every other Russian page, so half of the
English pages have no translation: whatever is paired with them is a false translation.
Nothing is written into the shared data or the repository.

Usage: .venv/bin/python bench/fastapi_copies.py --out DIR [--russian-names] [--strip-anchors] [--half]
Prints the pairs file (`en path <TAB> ru path`, one translation pair a line) it writes next to DIR.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

from _common import need_shared

FOLDERS = {
    "about": "о проекте",
    "advanced": "продвинутое",
    "security": "безопасность",
    "deployment": "развёртывание",
    "how-to": "рецепты",
    "learn": "обучение",
    "resources": "ресурсы",
    "tutorial": "учебник",
    "dependencies": "зависимости",
}
ANCHOR = re.compile(r"\s*\{\s*#[^}]*\}\s*$")
NOT_IN_NAME = re.compile(r'[\\/:*?"<>|#^\[\]`*]')


def _title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            title = " ".join(NOT_IN_NAME.sub(" ", ANCHOR.sub("", line[2:])).split())
            return title[:80].rstrip(" .") or fallback
    return fallback


def build(
    dst: Path, russian_names: bool = True, strip_anchors: bool = False, half: bool = False
) -> list[tuple[str, str]]:
    """Write the copy to ``dst`` (replacing it) and return its translation pairs (en path, ru path)."""
    src = need_shared("vaults", "fastapi-docs")
    if dst.exists():
        shutil.rmtree(dst)
    russian = sorted(f.relative_to(src) for f in src.glob("ru/**/*.md"))
    kept = set(russian[::2] if half else russian)
    taken: set[Path] = set()
    pairs: list[tuple[str, str]] = []
    for f in sorted(src.rglob("*.md")):
        rel = f.relative_to(src)
        if rel.parts[0] == "ru" and rel not in kept:
            continue
        text = f.read_text(encoding="utf-8")
        if strip_anchors:
            text = "\n".join(
                ANCHOR.sub("", line) if line.startswith("#") else line for line in text.split("\n")
            )
        new = rel
        if rel.parts[0] == "ru" and russian_names:
            folders = [FOLDERS.get(p, p) for p in rel.parts[1:-1]]
            name = _title(text, rel.stem)
            new = Path("ru", *folders, name + ".md")
            n = 2
            while new in taken:
                new, n = Path("ru", *folders, f"{name} {n}.md"), n + 1
        if rel.parts[0] == "ru":
            pairs.append((Path("en", *rel.parts[1:]).as_posix(), new.as_posix()))
        taken.add(new)
        (dst / new).parent.mkdir(parents=True, exist_ok=True)
        (dst / new).write_text(text, encoding="utf-8")
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--russian-names", action="store_true")
    ap.add_argument("--strip-anchors", action="store_true")
    ap.add_argument("--half", action="store_true")
    args = ap.parse_args()
    pairs = build(args.out, args.russian_names, args.strip_anchors, args.half)
    listing = args.out.with_name(args.out.name + ".pairs.tsv")
    listing.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    print(listing)


if __name__ == "__main__":
    main()
