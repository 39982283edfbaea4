"""Rows both store backends read and write: column lists and row <-> record mappings.

Each backend keeps its own SQL (placeholders, key column, set functions); what a row of
``chunks``, ``files``, ``links`` or ``runs`` means is said once, here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from vaultlens.chunking.chunker import Chunk
from vaultlens.index.runs import RunRecord, RunStats
from vaultlens.index.store import FileRecord, IndexedChunk, NoteText, StoreCounts
from vaultlens.vault.model import Link

# after the key column: the fields :func:`chunk` reads, in its order
_CHUNK_FIELDS = (
    "id", "path", "ordinal", "heading_path", "text", "content_hash", "start", '"end"',
    "start_line", "end_line", "frontmatter", "context", "page", "card",
)  # fmt: skip

FILE_COLUMNS = "path, kind, size, mtime_ns, file_hash, status, reason, title, aliases, tags, n_chunks"
RECORD_COLUMNS = FILE_COLUMNS + ", updated_at"  # what :func:`record_params` fills
CHUNK_INSERT_COLUMNS = (
    'id, path, ordinal, heading_path, text, content_hash, embed_hash, start, "end", start_line, end_line,'
    " frontmatter, context, page, card"
)  # what :func:`chunk_params` fills
LINK_COLUMNS = "src, kind, target, heading, block, display, line"
RECORD_UPSERT = (  # after ``ON CONFLICT (path)``: replace every column but the key
    " DO UPDATE SET kind = excluded.kind, size = excluded.size,"
    " mtime_ns = excluded.mtime_ns, file_hash = excluded.file_hash, status = excluded.status,"
    " reason = excluded.reason, title = excluded.title, aliases = excluded.aliases, tags = excluded.tags,"
    " n_chunks = excluded.n_chunks, updated_at = excluded.updated_at"
)
TIER_COVERAGE = (  # (distinct chunk texts, those with a tier vector)
    "SELECT COUNT(DISTINCT c.embed_hash), COUNT(DISTINCT t.embed_hash) FROM chunks c"
    " LEFT JOIN tier_vectors t ON t.embed_hash = c.embed_hash"
)
DROP_TIER = ("DELETE FROM tier_vectors", "DELETE FROM meta WHERE key = 'tier_space'")
SHARED_CHECKS = {  # consistency checks both backends run (each adds its own)
    "chunks of notes not marked indexed": "SELECT COUNT(*) FROM chunks WHERE path NOT IN"
    " (SELECT path FROM files WHERE status = 'indexed')",
    "notes whose chunk count disagrees": "SELECT COUNT(*) FROM files f WHERE status = 'indexed' AND"
    " n_chunks != (SELECT COUNT(*) FROM chunks c WHERE c.path = f.path)",
}


def store_counts(counters: Iterable[Sequence[Any]]) -> StoreCounts:
    """StoreCounts from the (name, n) counters both backends keep: 'chunks', 'vectors' and
    'files:<status>:<kind>' (other names are the backend's own)."""
    found = {str(name): int(n) for name, n in counters}
    files: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for key, n in found.items():
        if key.startswith("files:") and n:
            _, status, kind = key.split(":", 2)
            files[status] = files.get(status, 0) + n
            if status == "indexed":
                kinds[kind] = kinds.get(kind, 0) + n
    return StoreCounts(
        found.get("files:indexed:note", 0), found.get("chunks", 0), found.get("vectors", 0), files, kinds
    )


def counted(query: Callable[[str], Sequence[Sequence[Any]]]) -> StoreCounts:
    """The same numbers as :func:`store_counts`, counted row by row (what doctor compares them with)."""
    files = {str(s): int(n) for s, n in query("SELECT status, COUNT(*) FROM files GROUP BY status")}
    notes, chunks, vectors = query(
        "SELECT (SELECT COUNT(*) FROM files WHERE status = 'indexed' AND kind = 'note'),"
        " (SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM vectors)"
    )[0]
    kinds = {
        str(k): int(n)
        for k, n in query("SELECT kind, COUNT(*) FROM files WHERE status = 'indexed' GROUP BY kind")
    }
    return StoreCounts(int(notes), int(chunks), int(vectors), files, kinds)


def chunk_columns(key: str, alias: str = "") -> str:
    """The key column then the columns :func:`chunk` reads, optionally qualified by a table alias."""
    return ", ".join(f"{alias}.{c}" if alias else c for c in (key, *_CHUNK_FIELDS))


def chunk(r: Sequence[Any]) -> Chunk:
    """A chunk from a row of :func:`chunk_columns` (the key first)."""
    return Chunk(
        id=r[1],
        path=r[2],
        ordinal=r[3],
        heading_path=tuple(json.loads(r[4])),
        text=r[5],
        content_hash=r[6],
        start=r[7],
        end=r[8],
        start_line=r[9],
        end_line=r[10],
        frontmatter=bool(r[11]),
        context=r[12],
        page=r[13],
        card=r[14],
    )


def chunk_params(item: IndexedChunk) -> tuple[Any, ...]:
    """The values of :data:`CHUNK_INSERT_COLUMNS` for one chunk (``frontmatter`` a bool: SQLite stores 0/1)."""
    c = item.chunk
    heads = json.dumps(c.heading_path, ensure_ascii=False)
    return (c.id, c.path, c.ordinal, heads, c.text, c.content_hash, item.embed_hash,
            c.start, c.end, c.start_line, c.end_line, c.frontmatter, c.context, c.page, c.card)  # fmt: skip


def record(r: Sequence[Any]) -> FileRecord:
    """A file record from a row of :data:`FILE_COLUMNS`."""
    return FileRecord(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
        tuple(json.loads(r[8] or "[]")), tuple(json.loads(r[9] or "[]")), r[10],
    )  # fmt: skip


def record_params(r: FileRecord) -> tuple[Any, ...]:
    """The values of :data:`RECORD_COLUMNS` for one record, stamped now."""
    return (r.path, r.kind, r.size, r.mtime_ns, r.file_hash, r.status, r.reason, r.title,
            json.dumps(r.aliases, ensure_ascii=False), json.dumps(r.tags, ensure_ascii=False),
            r.n_chunks, time.time())  # fmt: skip


def link_params(src: str, links: Iterable[Link]) -> list[tuple[Any, ...]]:
    """The values of :data:`LINK_COLUMNS` for a note's links."""
    return [(src, ln.kind, ln.target, ln.heading, ln.block, ln.display, ln.line) for ln in links]


def links_by_src(rows: Iterable[Sequence[Any]]) -> dict[str, list[Link]]:
    """Links per note from rows of :data:`LINK_COLUMNS`, in row order."""
    out: dict[str, list[Link]] = {}
    for src, kind, target, heading, block, display, line in rows:
        out.setdefault(src, []).append(Link(kind, target, line, display, heading, block))
    return out


def note_texts(rows: Iterable[Sequence[Any]]) -> Iterator[NoteText]:
    """Each note's texts joined, from (path, text, frontmatter) rows ordered by path and ordinal."""
    current: str | None = None
    parts: list[tuple[str, bool]] = []

    def joined(path: str) -> NoteText:
        return NoteText(path, "\n".join(t for t, _ in parts), "\n".join(t for t, fm in parts if not fm))

    for path, text, frontmatter in rows:
        if path != current:
            if current is not None:
                yield joined(current)
            current, parts = path, []
        parts.append((text, bool(frontmatter)))
    if current is not None:
        yield joined(current)


def run_record(row: Sequence[Any] | None) -> RunRecord | None:
    """A run from a (started, finished, status, stats JSON) row."""
    if row is None:
        return None
    raw = json.loads(row[3] or "{}")
    error = raw.pop("error", None)
    return RunRecord(row[0], row[1], row[2], RunStats.from_dict(raw), None if error is None else str(error))


def embed_rate(stats: Iterable[str | None]) -> float | None:
    """Chunks embedded per second (the tier's time left out) over runs' stats JSON."""
    chunks = seconds = 0.0
    for raw in stats:
        s = json.loads(raw or "{}")
        own = float(s.get("seconds") or 0) - float(s.get("tier_seconds") or 0)
        if s.get("chunks_embedded") and own > 0:
            chunks += float(s["chunks_embedded"])
            seconds += own
    return chunks / seconds if seconds > 0 else None
