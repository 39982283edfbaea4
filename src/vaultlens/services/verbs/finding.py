"""Finding notes: search by meaning and words, related notes, duplicates, and reading notes.

Each verb reads one snapshot of the index (:meth:`App.reading`); ``similar`` and ``duplicates``
use stored vectors only, so they call no model. ``note`` and ``list_notes`` give programs and
agents (HTTP API, MCP) bounded slices and pages of the vault; ``note_text`` gives the page a note
whole, from one read (see :mod:`vaultlens.services.finding.notes`).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING

from vaultlens.chunking.source import NoteReader
from vaultlens.errors import InvalidInput, VaultError, translated_errors
from vaultlens.services.app import App
from vaultlens.services.finding import discover, notes
from vaultlens.services.finding.discover import SimilarNote, SimilarResult
from vaultlens.services.finding.duplicates import report as dups
from vaultlens.services.finding.duplicates.report import (
    Dismissed,
    DuplicatePair,
    DuplicateReport,
    LineRange,
    Restored,
)
from vaultlens.services.finding.notes import (
    DEFAULT_PAGE,
    DEFAULT_SLICE,
    IMAGE_TYPES,
    MAX_PAGE,
    MAX_PATH_CHARS,
    MAX_SLICE,
    NoteEntry,
    NoteGraph,
    NoteList,
    NoteSlice,
    NoteText,
)
from vaultlens.services.finding.search import NOTICES_HEADER, NoteHit, SearchHits, rank_notes
from vaultlens.services.finding.section import Section
from vaultlens.services.finding.tagged import MAX_TAGGED, TaggedNote, TaggedNotes, as_tag, tagged_notes

if TYPE_CHECKING:
    from vaultlens.index.store import Store
    from vaultlens.vault.links import LinkResolver

__all__ = [
    "DEFAULT_PAGE",
    "DEFAULT_SLICE",
    "IMAGE_TYPES",
    "MAX_PAGE",
    "MAX_PATH_CHARS",
    "MAX_SLICE",
    "MAX_TAGGED",
    "NOTICES_HEADER",
    "Dismissed",
    "DuplicatePair",
    "DuplicateReport",
    "LineRange",
    "NoteEntry",
    "NoteGraph",
    "NoteHit",
    "NoteList",
    "NoteSlice",
    "NoteText",
    "Restored",
    "SearchHits",
    "Section",
    "SimilarNote",
    "SimilarResult",
    "TaggedNote",
    "TaggedNotes",
    "as_tag",
    "dismiss",
    "dismissed",
    "duplicates",
    "image",
    "link_resolver",
    "list_notes",
    "note",
    "note_graph",
    "note_path",
    "note_text",
    "restore",
    "search",
    "similar",
    "tagged",
]


def search(
    app: App, query: str, limit: int | None = None, sections: int | None = None, *, untrusted: bool = False
) -> SearchHits:
    """Notes matching ``query`` by meaning and by words, inside one snapshot.

    ``untrusted``: a program's query (API, MCP), refused when longer than search.max_query_chars
    rather than cut without a word (it has no terminal to be told on)."""
    s = app.settings.search
    if untrusted:
        s.refuse_long_query(query)
    with translated_errors(path=app.index_dir), app.reading() as store:
        store.check_space(app.provider().space)
        tier = app.search_tier(store)
        return rank_notes(store, app.provider(), query, s, limit or s.limit, sections or s.sections, tier)


def similar(app: App, note: str, limit: int | None = None, *, untrusted: bool = False) -> SimilarResult:
    """Notes related to ``note`` from stored vectors only (no embedding call).

    ``untrusted``: ``note`` comes from a program or an agent (API, MCP), so it is resolved by the
    same rule as a note it reads (:func:`~vaultlens.services.finding.notes.resolve_untrusted`: an exact
    vault-relative path to a listed note; no names, case or extension variants, encoded tricks)."""
    if untrusted:  # a PDF or canvas the index reads has related notes too, as in the CLI
        note = note_path(app, note, also=app.settings.index.attachments)
    with translated_errors(path=app.index_dir), app.reading() as store:
        path = discover.resolve_note(store, str(app.vault), note)
        d = app.settings.discover
        return discover.similar(store, path, limit or app.settings.search.limit, d.min_chars, settings=d)


def duplicates(app: App, threshold: float | None = None, limit: int | None = None) -> DuplicateReport:
    """Exact copies; whole-note pairs (near_duplicate, contained at ``threshold``; translation); shared passages; same-named notes."""
    with translated_errors(path=app.index_dir), app.reading() as store:
        return _report(app, store, threshold, limit)


def _report(app: App, store: Store, threshold: float | None, limit: int | None) -> DuplicateReport:
    d = app.settings.discover
    return dups.duplicates(
        store,
        d.duplicate_threshold if threshold is None else threshold,
        d.duplicate_limit if limit is None else limit,
        d.min_chars,
        settings=d,
    )


def dismiss(app: App, a: str, b: str, threshold: float | None = None) -> Dismissed:
    """Hide a pair :func:`duplicates` lists (at ``threshold``, any limit) until either note changes.
    A pair it does not list is refused: a typo or a guess would otherwise be stored silently and
    hide nothing, or hide a pair before it was ever shown."""
    with translated_errors(path=app.index_dir):
        with app.reading() as store:
            pa = discover.resolve_note(store, str(app.vault), a)
            pb = discover.resolve_note(store, str(app.vault), b)
            if pa == pb:
                raise VaultError(
                    f"{a!r} and {b!r} are the same note ({pa}); a note cannot duplicate itself.",
                    hint="Pass the two notes of a pair that `vaultlens duplicates` listed.",
                )
            pair = tuple(sorted((pa, pb)))
            if pair not in store.dismissed_pairs():
                report = _report(app, store, threshold, sys.maxsize)
                listed = {(p.a, p.b) for p in (*report.pairs, *report.shared_passages)}
                if pair not in listed:
                    raise InvalidInput(
                        f"{pa} and {pb} are not a pair `vaultlens duplicates` lists"
                        + (f" at threshold {threshold}" if threshold is not None else "")
                        + "; nothing was dismissed.",
                        hint="Dismiss a pair from its list (with the same --threshold). Exact copies are "
                        "listed as a group, not a pair, and cannot be dismissed.",
                    )
        with app.live.lease() as store:
            store.dismiss_pair(pa, pb)
        return Dismissed(pa, pb)


def dismissed(app: App) -> list[Dismissed]:
    """The pairs hidden from :func:`duplicates` now (both notes unchanged since they were dismissed)."""
    with translated_errors(path=app.index_dir), app.reading() as store:
        return [Dismissed(a, b) for a, b in sorted(store.dismissed_pairs())]


def restore(app: App, a: str, b: str) -> Restored:
    """Undo :func:`dismiss`: the pair is listed again. A pair that is not dismissed is refused."""
    with translated_errors(path=app.index_dir):
        with app.reading() as store:
            pa = discover.resolve_note(store, str(app.vault), a)
            pb = discover.resolve_note(store, str(app.vault), b)
        with app.live.lease() as store:
            if not store.restore_pair(pa, pb):
                raise InvalidInput(
                    f"{pa} and {pb} are not a dismissed pair; nothing was restored.",
                    hint="The Duplicates page lists the dismissed pairs (a pair whose note changed is listed again by itself).",
                )
        return Restored(*sorted((pa, pb)))


def note(app: App, path: str, offset: int = 0, length: int = DEFAULT_SLICE) -> NoteSlice:
    """A bounded slice of one note's text, with its total length and content hash (no index needed)."""
    with translated_errors(path=app.index_dir):
        files = app.files()
        return notes.note_slice(files.rules(), path, offset, length, files.max_bytes)


def note_text(app: App, path: str) -> NoteText:
    """One note whole, from one read of its file, with that read's content hash (no index needed):
    the page's note view. Bounded by index.max_file_mb; a larger note is refused, saying so."""
    with translated_errors(path=app.index_dir):
        files = app.files()
        return notes.note_text(files.rules(), path, files.max_bytes)


def image(app: App, path: str) -> tuple[bytes, str]:
    """An image file of the vault (the bytes and media type), by the path rules of :func:`note`."""
    with translated_errors(path=app.index_dir):
        files = app.files()
        return notes.read_image(files.rules(), path, files.max_bytes)


def list_notes(
    app: App, folder: str = "", cursor: str | None = None, limit: int = DEFAULT_PAGE, match: str = ""
) -> NoteList:
    """One page of the indexed notes under ``folder``, sorted by path; with ``match``, the notes
    whose title, an alias or the path match it, best first (the page's note picker)."""
    with translated_errors(path=app.index_dir), app.reading() as store:
        return notes.list_notes(store, app.files().rules(), folder, cursor, limit, match)


def tagged(app: App, tag: str) -> TaggedNotes:
    """The notes carrying ``tag`` (with or without "#"), or a tag nested under it, case-insensitively, as
    Obsidian's tag search lists them: from the tags the index holds, each note re-read for the tag's lines."""
    with translated_errors(path=app.index_dir), app.reading() as store:
        files = app.files()
        return tagged_notes(store, NoteReader(files.root, files.max_bytes), tag)


# the last resolver built per vault and index: (store id, generation) -> the resolver of that state
_RESOLVERS: dict[str, tuple[tuple[str, int], LinkResolver]] = {}


def link_resolver(app: App) -> LinkResolver:
    """The vault's files (notes and attachments, as the scan lists them) for resolving links the way
    the index and the audit do: the page links a note's wikilinks through it. Built once per index
    generation (a whole-vault scan costs more than rendering most notes); without an index, each call
    scans. A file the index does not know yet (an image copied in while nothing else changed) is
    resolved once a note changes."""
    from vaultlens.vault.links import LinkResolver

    state = _index_state(app)
    kept = _RESOLVERS.get(str(app.vault))
    if state is not None and kept is not None and kept[0] == state:
        return kept[1]
    resolver = LinkResolver(f.path for f in app.files().scan().files)
    if state is not None:
        _RESOLVERS[str(app.vault)] = (state, resolver)
    return resolver


def _index_state(app: App) -> tuple[str, int] | None:
    """The live store's id and committed generation; None without an index."""
    if not app.has_index():
        return None
    with translated_errors(path=app.index_dir), app.reading() as store:
        return store.store_id, store.generation


def note_path(app: App, path: str, also: Collection[str] = ()) -> str:
    """A path from a program or the page → the vault-relative note it names: an exact path to a note
    (or a file of a kind in ``also``) the vault's scan lists, else refused
    (:func:`~vaultlens.services.finding.notes.resolve_untrusted`)."""
    with translated_errors(path=app.index_dir):
        return notes.resolve_untrusted(app.files().rules(), path, also)


def note_graph(app: App, path: str, resolver: LinkResolver | None = None) -> NoteGraph:
    """The notes ``path`` links to and the notes linking to it, as the index knows its links."""
    rel = note_path(app, path)
    with translated_errors(path=app.index_dir), app.reading() as store:
        links = store.links()
    return notes.note_graph(rel, links, resolver or link_resolver(app))
