"""vaultlens: a local-first knowledge layer for Markdown / Obsidian vaults.

The public API is the facade every interface uses (the CLI, the HTTP API, MCP and the web page):
open an :class:`App` for a vault, then call the verbs; each returns a typed result whose
``as_dict()`` is the JSON the CLI"s ``--json``, the API and MCP share::

    import vaultlens

    app = vaultlens.App.open(Path("~/notes").expanduser())
    vaultlens.index(app)                       # only changed chunks are embedded
    for hit in vaultlens.search(app, "how do I cache static files"):
        print(hit.path, hit.score, [s.heading_path for s in hit.sections])

A verb that would send note text off the machine (ask, review, audit_deep, a remote embedding
provider) or write a note (apply) first raises a :class:`ConfirmationRequired` whose
``proposal`` says exactly what and where; show it, then call again with the grant
(``consent=True`` or ``confirmed=proposal``). An App may be shared between threads. Errors are
:class:`VaultlensError` subclasses with a ``code``, an ``exit_code`` and an ``http_status``.
``vaultlens.testing`` holds a deterministic embedding provider for tests that need no model.

Names are imported on first use, so ``vaultlens --help`` loads no model, numpy or HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vaultlens.errors import (
        ConfirmationRequired,
        ConsentRequired,
        Proposal,
        VaultlensError,
        WriteUnconfirmed,
    )
    from vaultlens.index.rebuild import RebuildResult
    from vaultlens.index.runs import RunRecord, RunStats
    from vaultlens.index.watcher import FlushReport
    from vaultlens.safewrite import Entry, Group, Recovered
    from vaultlens.services.app import App
    from vaultlens.services.asking.ask import AskAnswer, Source
    from vaultlens.services.asking.chat import ChatSession, ChatTurn, Exchange
    from vaultlens.services.auditing.moc import MocPlan
    from vaultlens.services.changing.review.batch import BatchReport
    from vaultlens.services.changing.review.outcome import ReviewResult
    from vaultlens.services.changing.writes import Applied, Planned
    from vaultlens.services.drafting.results import (
        ContinueResult,
        DataviewResult,
        FlashcardsResult,
        TransformResult,
    )
    from vaultlens.services.finding.discover import SimilarNote, SimilarResult
    from vaultlens.services.finding.duplicates.report import Dismissed, DuplicatePair, DuplicateReport
    from vaultlens.services.finding.note_profile import ExactGroup
    from vaultlens.services.finding.notes import NoteEntry, NoteList, NoteSlice, NoteText
    from vaultlens.services.finding.search import NoteHit
    from vaultlens.services.finding.section import Section
    from vaultlens.services.finding.tagged import TaggedNote, TaggedNotes
    from vaultlens.services.inspecting.embed_bench import EmbedBench
    from vaultlens.services.inspecting.evaluation import GroupScore
    from vaultlens.services.inspecting.providers import ProviderInfo
    from vaultlens.services.restructuring.batch import BatchResult, NoteSelector
    from vaultlens.services.restructuring.split import SplitResult
    from vaultlens.services.status.results import Cleared, DoctorReport, FileProblem, IndexStatus, SpaceChange
    from vaultlens.services.verbs.asking import ask, ask_turn, chat_turn, open_chat
    from vaultlens.services.verbs.auditing import (
        StructureResult,
        TopicsResult,
        audit_clusters_only,
        audit_deep,
        audit_structure,
        moc,
    )
    from vaultlens.services.verbs.changing import (
        PlanOptions,
        apply,
        history,
        plan_undo,
        recover,
        replan,
        review,
        review_batch,
        show_before,
        to_confirm,
    )
    from vaultlens.services.verbs.drafting import (
        write_continue,
        write_dataview,
        write_flashcards,
        write_transform,
    )
    from vaultlens.services.verbs.finding import (
        dismiss,
        duplicates,
        list_notes,
        note,
        note_text,
        search,
        similar,
        tagged,
    )
    from vaultlens.services.verbs.indexing import clear, index, rebuild, rebuild_in_background, watch
    from vaultlens.services.verbs.inspecting import bench_embed, eval_beir, eval_queries, providers
    from vaultlens.services.verbs.restructuring import (
        write_batch,
        write_batch_run,
        write_merge,
        write_move,
        write_split,
    )
    from vaultlens.services.verbs.status import doctor, status, unfinished_run
else:
    # The subpackage vaultlens.index first (importing it later would rebind the name to it); then the
    # verb of the same name, which imports the index machinery only when called.
    importlib.import_module("vaultlens.index")

    def index(*args: Any, **kwargs: Any) -> Any:
        """Bring the index up to date with the vault: see :func:`vaultlens.services.verbs.indexing.index`."""
        from vaultlens.services.verbs.indexing import index as run

        return run(*args, **kwargs)


_WHERE: dict[str, str] = {
    **dict.fromkeys(
        ["ConfirmationRequired", "ConsentRequired", "Proposal", "VaultlensError", "WriteUnconfirmed"],
        "vaultlens.errors",
    ),
    **dict.fromkeys(["RebuildResult"], "vaultlens.index.rebuild"),
    **dict.fromkeys(["RunRecord", "RunStats"], "vaultlens.index.runs"),
    **dict.fromkeys(["FlushReport"], "vaultlens.index.watcher"),
    **dict.fromkeys(["Entry", "Group", "Recovered"], "vaultlens.safewrite"),
    **dict.fromkeys(["App"], "vaultlens.services.app"),
    **dict.fromkeys(["AskAnswer", "Source"], "vaultlens.services.asking.ask"),
    **dict.fromkeys(["MocPlan"], "vaultlens.services.auditing.moc"),
    **dict.fromkeys(["ChatSession", "ChatTurn", "Exchange"], "vaultlens.services.asking.chat"),
    **dict.fromkeys(["SimilarNote", "SimilarResult"], "vaultlens.services.finding.discover"),
    **dict.fromkeys(["TaggedNote", "TaggedNotes"], "vaultlens.services.finding.tagged"),
    **dict.fromkeys(
        ["Dismissed", "DuplicatePair", "DuplicateReport"], "vaultlens.services.finding.duplicates.report"
    ),
    **dict.fromkeys(["GroupScore"], "vaultlens.services.inspecting.evaluation"),
    **dict.fromkeys(["ExactGroup"], "vaultlens.services.finding.note_profile"),
    **dict.fromkeys(["NoteEntry", "NoteList", "NoteSlice", "NoteText"], "vaultlens.services.finding.notes"),
    **dict.fromkeys(
        ["ContinueResult", "DataviewResult", "FlashcardsResult", "TransformResult"],
        "vaultlens.services.drafting.results",
    ),
    **dict.fromkeys(["BatchResult", "NoteSelector"], "vaultlens.services.restructuring.batch"),
    **dict.fromkeys(["SplitResult"], "vaultlens.services.restructuring.split"),
    **dict.fromkeys(["ProviderInfo"], "vaultlens.services.inspecting.providers"),
    **dict.fromkeys(["EmbedBench"], "vaultlens.services.inspecting.embed_bench"),
    **dict.fromkeys(
        ["Cleared", "DoctorReport", "FileProblem", "IndexStatus", "SpaceChange"],
        "vaultlens.services.status.results",
    ),
    **dict.fromkeys(["BatchReport"], "vaultlens.services.changing.review.batch"),
    **dict.fromkeys(["ReviewResult"], "vaultlens.services.changing.review.outcome"),
    **dict.fromkeys(["NoteHit"], "vaultlens.services.finding.search"),
    **dict.fromkeys(["Section"], "vaultlens.services.finding.section"),
    **dict.fromkeys(["ask", "ask_turn", "chat_turn", "open_chat"], "vaultlens.services.verbs.asking"),
    **dict.fromkeys(
        ["StructureResult", "TopicsResult", "audit_clusters_only", "audit_deep", "audit_structure", "moc"],
        "vaultlens.services.verbs.auditing",
    ),
    **dict.fromkeys(
        [
            "PlanOptions",
            "apply",
            "history",
            "plan_undo",
            "recover",
            "replan",
            "review",
            "review_batch",
            "show_before",
            "to_confirm",
        ],
        "vaultlens.services.verbs.changing",
    ),
    **dict.fromkeys(
        ["write_continue", "write_dataview", "write_flashcards", "write_transform"],
        "vaultlens.services.verbs.drafting",
    ),
    **dict.fromkeys(
        ["write_batch", "write_batch_run", "write_merge", "write_move", "write_split"],
        "vaultlens.services.verbs.restructuring",
    ),
    **dict.fromkeys(
        ["dismiss", "duplicates", "list_notes", "note", "note_text", "search", "similar", "tagged"],
        "vaultlens.services.verbs.finding",
    ),
    **dict.fromkeys(
        ["clear", "index", "rebuild", "rebuild_in_background", "watch"], "vaultlens.services.verbs.indexing"
    ),
    **dict.fromkeys(
        ["bench_embed", "eval_beir", "eval_queries", "providers"], "vaultlens.services.verbs.inspecting"
    ),
    **dict.fromkeys(["doctor", "status", "unfinished_run"], "vaultlens.services.verbs.status"),
    **dict.fromkeys(["Applied", "Planned"], "vaultlens.services.changing.writes"),
}

__all__ = [
    "App",
    "Applied",
    "AskAnswer",
    "BatchReport",
    "BatchResult",
    "ChatSession",
    "ChatTurn",
    "Cleared",
    "ConfirmationRequired",
    "ConsentRequired",
    "ContinueResult",
    "DataviewResult",
    "Dismissed",
    "DoctorReport",
    "DuplicatePair",
    "DuplicateReport",
    "EmbedBench",
    "Entry",
    "ExactGroup",
    "Exchange",
    "FileProblem",
    "FlashcardsResult",
    "FlushReport",
    "Group",
    "GroupScore",
    "IndexStatus",
    "MocPlan",
    "NoteEntry",
    "NoteHit",
    "NoteList",
    "NoteSelector",
    "NoteSlice",
    "NoteText",
    "PlanOptions",
    "Planned",
    "Proposal",
    "ProviderInfo",
    "RebuildResult",
    "Recovered",
    "ReviewResult",
    "RunRecord",
    "RunStats",
    "Section",
    "SimilarNote",
    "SimilarResult",
    "Source",
    "SpaceChange",
    "SplitResult",
    "StructureResult",
    "TaggedNote",
    "TaggedNotes",
    "TopicsResult",
    "TransformResult",
    "VaultlensError",
    "WriteUnconfirmed",
    "apply",
    "ask",
    "ask_turn",
    "audit_clusters_only",
    "audit_deep",
    "audit_structure",
    "bench_embed",
    "chat_turn",
    "clear",
    "dismiss",
    "doctor",
    "duplicates",
    "eval_beir",
    "eval_queries",
    "history",
    "index",
    "list_notes",
    "moc",
    "note",
    "note_text",
    "open_chat",
    "plan_undo",
    "providers",
    "rebuild",
    "rebuild_in_background",
    "recover",
    "replan",
    "review",
    "review_batch",
    "search",
    "show_before",
    "similar",
    "status",
    "tagged",
    "to_confirm",
    "unfinished_run",
    "watch",
    "write_batch",
    "write_batch_run",
    "write_continue",
    "write_dataview",
    "write_flashcards",
    "write_merge",
    "write_move",
    "write_split",
    "write_transform",
]


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'vaultlens' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
