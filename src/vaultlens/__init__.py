"""vaultlens: a local-first knowledge layer for Markdown / Obsidian vaults.

The public API is the service facade every interface uses (the CLI today; the HTTP API, the
MCP server and the web page next): open an :class:`App` for a vault, then call the verbs::

    import vaultlens

    app = vaultlens.App.open(Path("~/notes").expanduser())
    vaultlens.index(app)                       # only changed chunks are embedded
    for hit in vaultlens.search(app, "how do I cache static files"):
        print(hit.path, hit.score, [s.heading_path for s in hit.sections])

An App may be shared between threads. Errors are :class:`VaultlensError` subclasses with a
``code``, an ``exit_code`` and an ``http_status``. ``vaultlens.testing`` holds a deterministic
embedding provider for tests that need no model.
"""

from vaultlens.errors import ConsentRequired, VaultlensError
from vaultlens.index.rebuild import RebuildResult
from vaultlens.index.runs import RunRecord, RunStats
from vaultlens.services.app import (
    App,
    ask,
    clear,
    dismiss,
    doctor,
    duplicates,
    index,
    list_notes,
    note,
    providers,
    rebuild,
    rebuild_in_background,
    search,
    similar,
    status,
)
from vaultlens.services.ask import AskAnswer, Source
from vaultlens.services.discover import SimilarNote, SimilarResult
from vaultlens.services.duplicates import DuplicatePair, DuplicateReport
from vaultlens.services.layout import ExactGroup
from vaultlens.services.notes import NoteEntry, NoteList, NoteSlice  # companion: note slices and listings
from vaultlens.services.results import DoctorReport, FileProblem, IndexStatus, SpaceChange
from vaultlens.services.search import NoteHit
from vaultlens.services.section import Section
from vaultlens.services.watch import watch

__all__ = [
    "App",
    "AskAnswer",
    "ConsentRequired",
    "DoctorReport",
    "DuplicatePair",
    "DuplicateReport",
    "ExactGroup",
    "FileProblem",
    "IndexStatus",
    "NoteEntry",
    "NoteHit",
    "NoteList",
    "NoteSlice",
    "RebuildResult",
    "RunRecord",
    "RunStats",
    "Section",
    "SimilarNote",
    "SimilarResult",
    "Source",
    "SpaceChange",
    "VaultlensError",
    "ask",
    "clear",
    "dismiss",
    "doctor",
    "duplicates",
    "index",
    "providers",
    "list_notes",
    "note",
    "rebuild",
    "rebuild_in_background",
    "search",
    "similar",
    "status",
    "watch",
]
