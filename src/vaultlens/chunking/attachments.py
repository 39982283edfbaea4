"""Files besides Markdown notes that the index reads (``index.attachments``): PDFs and canvases.

A **PDF**'s text is read page by page by PDFium (pypdfium2: BSD-3/Apache-2.0 wheels, offline) in a
child process (``pdf_child.py``) with a memory bound (``RLIMIT_AS``) and a time bound, so a hostile
PDF (a decompression bomb, a parser crash or loop) ends that child, never the indexer or the server.
Each page's text is chunked along its paragraphs; every chunk keeps its page (1-based). A PDF with no
text layer, an encrypted or malformed one, or one that trips a bound is :class:`Unreadable`, with the
reason ``status`` lists.

A **canvas** (JSON Canvas 1.0) gives one or more chunks per text card, each with the card's id;
file, link and group nodes hold no text of their own. Malformed JSON is :class:`Unreadable`.

Offsets and lines of a chunk are within its page's (its card's) text, line breaks normalised to LF.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

from vaultlens.chunking.chunker import Chunk, MarkdownChunker
from vaultlens.fsutil import sha256_hex

__all__ = [
    "KINDS",
    "PDF_MEMORY_MB",
    "PDF_TIMEOUT_S",
    "Unreadable",
    "attachment_chunks",
    "kind_of",
    "pdf_pages",
]

#: the kind of an attachment by its suffix (the values of ``index.attachments``)
KINDS = {".pdf": "pdf", ".canvas": "canvas"}
#: the bounds of one PDF's extraction: its child's address space and its wall-clock time
PDF_MEMORY_MB = 1024
PDF_TIMEOUT_S = 60.0
_CHILD = Path(__file__).with_name("pdf_child.py")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffe\uffff]")


class Unreadable(ValueError):
    """A file whose text cannot be read (the reason is the message); the indexer records it as a skip."""


def kind_of(path: str) -> str | None:
    """``pdf`` / ``canvas`` for an attachment the index can read, else None."""
    return KINDS.get(os.path.splitext(path)[1].lower())


def pdf_pages(data: bytes, memory_mb: int | None = None, timeout_s: float | None = None) -> list[str]:
    """The text of each page of the PDF ``data``, read in a bounded child process (module docstring).

    Raises :class:`Unreadable` for a PDF without text, an encrypted or malformed one, and one whose
    extraction passed a bound.
    """
    memory = PDF_MEMORY_MB if memory_mb is None else memory_mb
    timeout = PDF_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(_CHILD), str(memory), str(math.ceil(timeout))],
            input=data,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:  # run() has killed the child
        raise Unreadable(f"PDF text extraction took longer than {timeout:g} s (stopped)") from None
    except OSError as exc:
        raise Unreadable(f"PDF text extraction could not start ({exc.strerror or exc})") from None
    try:
        out = json.loads(done.stdout)
    except ValueError:
        out = None
    if done.returncode != 0 or not isinstance(out, dict):
        if b"pypdfium2" in done.stderr and b"ModuleNotFoundError" in done.stderr:
            raise Unreadable("PDF text extraction needs pypdfium2 (pip install pypdfium2)")
        raise Unreadable(
            f"PDF text extraction failed within its bounds ({memory} MB, {timeout:g} s): "
            "the PDF is too large or damaged"
        )
    if "error" in out:
        raise Unreadable(str(out["error"]))
    pages = [_clean(str(p)) for p in out.get("pages", [])]
    if not any(p.strip() for p in pages):
        raise Unreadable("PDF has no text layer (scanned or image-only); nothing to index")
    return pages


def _clean(text: str) -> str:
    """Page text as the index keeps it: LF line ends, a word PDFium marks as hyphenated at a line end
    (U+0002) joined, any other control character a space."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "")
    return _CONTROLS.sub(" ", text)


def attachment_chunks(kind: str, path: str, data: bytes, chunker: MarkdownChunker) -> list[Chunk]:
    """The chunks of attachment ``path`` (``kind`` from :func:`kind_of`) from its bytes ``data``."""
    if kind == "pdf":
        chunks: list[Chunk] = []
        for n, text in enumerate(pdf_pages(data), 1):
            chunks += _paragraph_chunks(chunker, path, text, f"page {n}", len(chunks), page=n)
        return chunks
    return _canvas_chunks(path, data, chunker)


def _canvas_chunks(path: str, data: bytes, chunker: MarkdownChunker) -> list[Chunk]:
    try:
        canvas = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise Unreadable("canvas is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"canvas is not valid JSON ({exc})") from None
    nodes = canvas.get("nodes", []) if isinstance(canvas, dict) else None
    if not isinstance(nodes, list):
        raise Unreadable("canvas is not JSON Canvas (no list of nodes)")
    chunks: list[Chunk] = []
    for node in nodes:
        if not isinstance(node, dict) or node.get("type") != "text":
            continue
        card, text = node.get("id"), node.get("text")
        if isinstance(card, str) and isinstance(text, str) and text.strip():
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            chunks += _paragraph_chunks(chunker, path, text, f"card {card}", len(chunks), card=card)
    return chunks


def _paragraph_chunks(
    chunker: MarkdownChunker,
    path: str,
    text: str,
    place: str,
    ordinal: int,
    page: int | None = None,
    card: str | None = None,
) -> list[Chunk]:
    """``text`` cut at blank lines (a page without them: at line ends) into ~``chunker.target``
    pieces; a paragraph longer than ``chunker.max`` is cut like prose. Ids: path, place, rank."""
    spans: list[tuple[int, int]] = []
    for start, end in _paragraphs(text):
        if end - start > chunker.max:
            spans += chunker.prose_pieces(text, start, end)
        elif spans and end - spans[-1][0] <= chunker.target:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    out = []
    for rank, (start, end) in enumerate(spans):
        body = text[start:end]
        first = text.count("\n", 0, start)
        out.append(
            Chunk(
                id=sha256_hex("\x1f".join((path, place, str(rank))))[:20],
                path=path,
                ordinal=ordinal + rank,
                heading_path=(),
                text=body,
                content_hash=sha256_hex(body),
                start=start,
                end=end,
                start_line=first,
                end_line=first + body.count("\n") + 1,
                page=page,
                card=card,
            )
        )
    return out


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Spans of the non-blank paragraphs of ``text``; where it has no blank line, of its lines."""
    sep = "\n\n" if "\n\n" in text.strip() else "\n"
    spans = []
    pos = 0
    for part in text.split(sep):
        stripped = part.strip()
        if stripped:
            start = pos + part.index(stripped[0])
            spans.append((start, start + len(stripped)))
        pos += len(part) + len(sep)
    return spans
