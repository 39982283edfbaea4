"""What each chunk contributes to the two indexes: the text the model embeds and the
stemmed terms full-text search sees. Changing either changes the embed hash of every chunk,
so the next run re-embeds them (no stale vectors survive a change here).

A part of a split table, code block or front matter carries a ``context`` (the table's header
rows, the code's opening fence line, the front matter key it continues): both texts put it
before the chunk's own text, so every part reads as what it is. A chunk without a context gets
exactly the texts it got before contexts existed, so its vector is reused.
"""

from __future__ import annotations

from typing import Protocol

from vaultlens.chunking.chunker import Chunk
from vaultlens.index.lexical import terms


def embed_text(title: str, chunk: Chunk) -> str:
    """What the model sees: the note title and section give a short chunk its context."""
    heads = [] if chunk.frontmatter else list(chunk.heading_path)
    prefix = " / ".join([title, *heads[-2:]])
    if chunk.context:
        return f"{prefix}\n{chunk.context}\n{chunk.text}"
    return f"{prefix}\n{chunk.text}"


class Named(Protocol):
    """A note's names (a parsed note, or the record the index keeps of it)."""

    @property
    def title(self) -> str | None: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


def lexical_text(path: str, note: Named, chunk: Chunk) -> str:
    """Stemmed terms for full text: path words, title and aliases count for every chunk."""
    head = " ".join(
        [path.rsplit(".", 1)[0].replace("/", " "), note.title or "", *note.aliases, *chunk.heading_path]
    )
    if chunk.context:
        head = f"{head}\n{chunk.context}"
    return " ".join(terms(f"{head}\n{chunk.text}"))
