"""Composition root and service facade: one :class:`App` per vault, and the verbs every interface calls.

The CLI today, and the HTTP API, the MCP server and the web page next, build one :class:`App`
and call these functions, so they all behave the same. An App is safe to share between
threads: searches run on leased snapshots of the live store while one writer (``watch``)
commits, and a switch after a background rebuild never closes a store a reader still holds.

The embedding provider and the store backend are injected (defaults: the configured provider
from the registry, the SQLite backend). Privacy is enforced here, not in an interface: a verb
that would send note text off this machine raises :class:`ConsentRequired` unless the
destination was granted before or the caller passes ``consent=True`` for this call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.config import paths
from vaultlens.config.consent import require_consent
from vaultlens.config.settings import LoadedSettings, Settings, load_settings
from vaultlens.embedding.base import EmbeddingProvider, remote_destination
from vaultlens.embedding.registry import make_provider
from vaultlens.embedding.tier import TierProvider, make_tier
from vaultlens.errors import IndexNotFound, ProviderError, VaultError, VaultlensError, translated_errors
from vaultlens.index.backends import get_backend
from vaultlens.index.indexer import Indexer, Progress
from vaultlens.index.lifecycle import IndexHome, LiveStore
from vaultlens.index.rebuild import RebuildResult, rebuild_background
from vaultlens.index.runs import RunRecord, RunStats
from vaultlens.index.store import Store, StoreBackend, space_matches
from vaultlens.llm.base import LLMProvider, OnText, llm_destination
from vaultlens.llm.registry import make_llm
from vaultlens.services import ask as asking
from vaultlens.services import discover, notes
from vaultlens.services import duplicates as dups
from vaultlens.services.ask import AskAnswer
from vaultlens.services.providers import ProviderInfo, describe_providers
from vaultlens.services.results import DoctorReport, FileProblem, IndexStatus, SpaceChange, TierStatus
from vaultlens.services.search import NoteHit, rank_notes
from vaultlens.vault.scan import VaultRules, check_vault, paths_sharing_a_file


@dataclass
class App:
    vault: Path
    loaded: LoadedSettings
    backend: StoreBackend = field(default_factory=get_backend)
    _provider: EmbeddingProvider | None = field(default=None, repr=False)
    _provider_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _tier: TierProvider | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.home = IndexHome(paths.index_dir(self.vault), self.backend)
        self.live = LiveStore(self.home)

    @classmethod
    def open(
        cls,
        vault: Path,
        overrides: dict[str, str] | None = None,
        *,
        provider: EmbeddingProvider | None = None,
        backend: StoreBackend | None = None,
    ) -> App:
        """An App for ``vault``: settings from every layer, and optionally an injected provider or backend."""
        root = check_vault(vault)
        paths.check_index_outside_vault(root)  # before anything is created under the home
        paths.ensure_home(writable=False)
        loaded = load_settings(root, overrides)
        return cls(root, loaded, backend or get_backend(loaded.settings.index.backend), provider)

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    @property
    def index_dir(self) -> Path:
        """The live store's folder, re-read on every call (a background rebuild may switch it)."""
        return self.home.live_dir()

    def has_index(self) -> bool:
        return self.home.has_index()

    @contextmanager
    def reading(self) -> Iterator[Store]:
        """The live store frozen at one committed generation for the block (safe from any thread)."""
        if not self.has_index():
            raise IndexNotFound(
                f"There is no index for {self.vault} yet.", hint="Run `vaultlens index` to build it."
            )
        with self.live.reading() as store:
            yield store

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The index's one writer: a writable home, then the writer lock (refused while another holds it)."""
        paths.ensure_home()
        with self.home.writer_lock():
            yield

    def chunker(self) -> MarkdownChunker:
        """The chunker the index uses (the same settings give the same chunk ids and hashes)."""
        s = self.settings.index
        return MarkdownChunker(s.chunk_target, s.chunk_max, s.chunk_overlap)

    def provider(self) -> EmbeddingProvider:
        with self._provider_lock:
            if self._provider is None:
                self._provider = make_provider(self.settings.embedding)
            return self._provider

    def tier(self) -> TierProvider | None:
        """The quality tier's model (``embedding.tier``), or None when it is off; loaded on first use."""
        with self._provider_lock:
            if self._tier is None:
                self._tier = make_tier(self.settings.embedding)
            return self._tier

    def search_tier(self, store: Store) -> TierProvider | None:
        """The tier to blend into a search of ``store``: on, and holding vectors of its model."""
        tier, stored = self.tier(), store.tier_space
        if tier is None or stored is None or not space_matches(stored, tier.space):
            return None  # off, or on but no index run has filled it yet
        return tier

    def close(self) -> None:
        self.live.close()


def _rule_problems(app: App) -> list[str]:
    """Ignore rules of the vault that could not be applied as written (a broken .obsidian/app.json)."""
    return list(VaultRules(app.vault, int(app.settings.index.max_file_mb * 1_000_000)).rule_problems)


def _refuse_with_broken_rules(app: App, destination: str) -> None:
    """Notes the user excluded could be sent while the vault's ignore rules cannot be applied: refuse."""
    problems = _rule_problems(app)
    if problems:
        raise VaultlensError(
            f"Not sending note text to {destination} while the vault's ignore rules are broken: "
            + "; ".join(problems),
            hint="Fix .obsidian/app.json (Settings → Files and links → Excluded files), so notes you "
            "excluded are not sent.",
        )


def require_embedding_consent(app: App, consent: bool) -> None:
    """Refuse (ConsentRequired) before note text goes to a remote embedding provider nobody agreed to."""
    destination = remote_destination(app.provider())
    if destination is None:
        return
    _refuse_with_broken_rules(app, "a remote provider")
    what = (
        f"the text of your notes, in chunks of up to {app.settings.index.chunk_max} characters"
        " (a single longer table row stays whole)"
    )
    require_consent(destination, what, granted_now=consent)


def index(app: App, progress: Progress | None = None, consent: bool = False) -> RunStats:
    """Bring the index up to date with the vault (the one writer; resumable)."""
    with translated_errors(path=app.index_dir):
        require_embedding_consent(app, consent)
        with app.writing(), app.live.lease(create=True) as store:
            return Indexer(app.vault, store, app.provider(), app.settings, progress, app.tier()).run()


def clear(app: App) -> bool:
    """Empty the index; it stays empty until the user indexes again (no unfinished rebuild revives it).

    Returns False when there was no index to clear."""
    with translated_errors(path=app.index_dir):
        if not app.has_index():
            return False
        with app.writing():
            with app.live.lease() as store:
                store.clear()
            app.home.discard_stale_staging()
        return True


def rebuild(app: App, progress: Progress | None = None, consent: bool = False) -> RunStats:
    """Throw the live index away (including its embedding space) and build it from scratch.

    The new store lives in a new folder (:meth:`IndexHome.start_over`); searches meanwhile find no
    index or a partial one, as the user chose by not rebuilding in the background."""
    with translated_errors(path=app.index_dir):
        require_embedding_consent(app, consent)
        _check_provider(app)
        with app.writing():
            app.live.reset()
            app.home.start_over()
            with app.live.lease(create=True) as store:
                return Indexer(app.vault, store, app.provider(), app.settings, progress, app.tier()).run()


def _check_provider(app: App) -> None:
    """Embed one probe text, so a rebuild never deletes a working index for a provider that fails."""
    try:
        app.provider().embed(["vaultlens provider check"])
    except ProviderError as exc:
        raise type(exc)(f"{exc.message} Nothing was deleted: the index is as it was.", hint=exc.hint) from exc


def rebuild_in_background(
    app: App, progress: Progress | None = None, switch_wait: float = 30.0, consent: bool = False
) -> RebuildResult:
    """Build the configured space next to the live index, which keeps answering; switch when done."""
    with translated_errors(path=app.index_dir):
        require_embedding_consent(app, consent)
        result = rebuild_background(
            app.home, app.vault, app.provider(), app.settings, progress, switch_wait, app.tier()
        )
        app.live.reset()
        return result


def search(app: App, query: str, limit: int | None = None, sections: int | None = None) -> list[NoteHit]:
    """Notes matching ``query`` by meaning and by words, inside one snapshot."""
    s = app.settings.search
    with translated_errors(path=app.index_dir), app.reading() as store:
        store.check_space(app.provider().space)
        tier = app.search_tier(store)
        return rank_notes(store, app.provider(), query, s, limit or s.limit, sections or s.sections, tier)


def similar(
    app: App, note: str, limit: int | None = None, *, untrusted: bool = False
) -> discover.SimilarResult:
    """Notes related to ``note`` from stored vectors only (no embedding call).

    ``untrusted``: ``note`` comes from a program or an agent (API, MCP), so it must also pass
    :func:`~vaultlens.services.notes.check_untrusted_arg` (no absolute paths, no encoded tricks)."""
    if untrusted:
        notes.check_untrusted_arg(note)
    with translated_errors(path=app.index_dir), app.reading() as store:
        path = discover.resolve_note(store, str(app.vault), note)
        d = app.settings.discover
        return discover.similar(store, path, limit or app.settings.search.limit, d.min_chars, settings=d)


def duplicates(app: App, threshold: float | None = None, limit: int | None = None) -> dups.DuplicateReport:
    """Exact copies; whole-note pairs (near_duplicate, contained at ``threshold``; translation); shared passages; same-named notes."""
    d = app.settings.discover
    with translated_errors(path=app.index_dir), app.reading() as store:
        return dups.duplicates(
            store,
            d.duplicate_threshold if threshold is None else threshold,
            d.duplicate_limit if limit is None else limit,
            d.min_chars,
            settings=d,
        )


def dismiss(app: App, a: str, b: str) -> tuple[str, str]:
    """Hide a candidate duplicate pair until either note changes."""
    with translated_errors(path=app.index_dir):
        with app.reading() as store:
            pa = discover.resolve_note(store, str(app.vault), a)
            pb = discover.resolve_note(store, str(app.vault), b)
        if pa == pb:
            raise VaultError(
                f"{a!r} and {b!r} are the same note ({pa}); a note cannot duplicate itself.",
                hint="Pass the two notes of a pair that `vaultlens duplicates` listed.",
            )
        with app.live.lease() as store:
            store.dismiss_pair(pa, pb)
        return pa, pb


def status(app: App) -> IndexStatus:
    """Coverage: indexed, skipped and failed files with reasons, totals, model, last run."""
    with translated_errors(path=app.index_dir):
        base = IndexStatus(
            str(app.vault), str(app.index_dir), indexed=False, rule_problems=_rule_problems(app)
        )
        if not app.has_index():
            return base
        with app.reading() as store:
            records = store.file_records()
            counts = store.counts()
            change = _space_change(app, store)
            return IndexStatus(
                base.vault,
                base.index_dir,
                indexed=True,
                cleared=store.cleared,
                files={"indexed": 0, "skipped": 0, "failed": 0, **counts.files},
                notes=counts.notes,
                chunks=counts.chunks,
                vectors=counts.vectors,
                size_bytes=store.size_bytes(),
                embedding_space=store.space,
                space_change=change,
                problems=[
                    FileProblem(r.path, r.status, r.reason)
                    for r in sorted(records.values(), key=lambda r: r.path)
                    if r.reason
                ],
                last_run=_last_run(app, store),
                rule_problems=base.rule_problems,
                rechunk_pending=store.get_meta("chunker") not in (None, app.chunker().signature),
                tier=_tier_status(app, store),
            )


def unfinished_run(app: App) -> RunRecord | None:
    """The last index run when it stopped before every note reached the index (Ctrl-C, a kill, an
    error), so a search may miss notes; None when the index is whole or there is none."""
    if not app.has_index():
        return None
    with translated_errors(path=app.index_dir), app.reading() as store:
        run = _last_run(app, store)
    return run if run is not None and run.status != "ok" and not run.stats.complete else None


def _tier_status(app: App, store: Store) -> TierStatus | None:
    """What the quality tier covers, when it is switched on or still holds vectors."""
    setting, stored = app.settings.embedding.tier, store.tier_space
    if setting == "off" and stored is None:
        return None
    have, total = store.tier_coverage()
    return TierStatus(setting, None if stored is None else stored.describe(), have, total)


def _last_run(app: App, store: Store) -> RunRecord | None:
    """The last run; one still marked running whose process is gone (kill -9, power loss) is interrupted."""
    run = store.last_run()
    if run is not None and run.status == "running":
        try:
            busy = app.home.writer_lock().busy()
        except VaultlensError:  # a read-only index: it cannot be probed, so it is not called interrupted
            return run
        if not busy:
            return replace(run, status="interrupted")
    return run


def _space_change(app: App, store: Store) -> SpaceChange | None:
    """None when the settings' space is the index's; else the configured space and the rebuild estimate."""
    stored = store.space
    try:
        configured = app.provider().space
    except VaultlensError as exc:  # a provider that cannot be built here
        return SpaceChange(None, None, exc.message)
    if stored is None or space_matches(stored, configured):
        return None
    estimate = store.rebuild_estimate(configured)
    return SpaceChange(configured.describe(), estimate, estimate.describe())


def doctor(app: App) -> DoctorReport:
    """Integrity and consistency of the index, and vault rules that do not work as the user meant."""
    with translated_errors(path=app.index_dir):
        with app.reading() as store:
            records = store.file_records()
            problems = store.problems()
            unused = store.unused_vectors()
        indexed = [p for p, r in records.items() if r.status == "indexed"]
        for real, rels in paths_sharing_a_file(app.vault, indexed).items():
            problems.append(f"{real} is indexed under {len(rels)} paths: {', '.join(rels)}")
        return DoctorReport(problems, _rule_problems(app), unused)


# ---- ask and chat (issue 11): thin verbs; the pipeline is services/ask.py ------------------------


def require_llm_consent(app: App, llm: LLMProvider, consent: bool, what: str | None = None) -> None:
    """Refuse (ConsentRequired) before note text goes to a remote LLM nobody agreed to (same
    mechanism and file as the embedding grants; the destination names the LLM). ``what`` says what
    this call sends (default: what Ask sends)."""
    destination = llm_destination(llm)
    if destination is None:
        return
    _refuse_with_broken_rules(app, "a remote LLM")
    what = what or (
        f"your questions and, per answer, up to {asking.CONTEXT_CHARS:,} characters of matching note text "
        f"(at most {asking.SOURCE_NOTES} notes; in chat also earlier questions and answers)"
    )
    require_consent(
        destination,
        what,
        granted_now=consent,
        hint="Nothing was sent. Agree once for this destination (the CLI asks, or pass --yes), "
        "use a local model (--set llm.provider=ollama), or answer without a model: --extractive.",
    )


def llm(app: App) -> LLMProvider:
    """The configured chat model (a new HTTP client: close it when done)."""
    return make_llm(app.settings.llm)


def ask(
    app: App,
    question: str,
    on_text: OnText | None = None,
    consent: bool = False,
    extractive: bool = False,
    provider: LLMProvider | None = None,
) -> AskAnswer:
    """Answer ``question`` from the vault only, citing sources (``extractive``: passages, no model)."""
    with translated_errors(path=app.index_dir):
        if extractive:
            return asking.extractive(asking.gather(app, question))
        model = provider or llm(app)
        try:
            require_llm_consent(app, model, consent)
            context = asking.gather(app, question)  # the index is released before the model is called
            return asking.answer(context, model, on_text)
        finally:
            if provider is None:
                model.close()


def providers(app: App) -> list[ProviderInfo]:
    """What is configured for embeddings and for the LLM, and which data each one receives."""
    with translated_errors(path=app.index_dir):
        return describe_providers(app)


# ---- reading notes for programs and agents (HTTP API, MCP): see services/notes.py ----------------------


def _vault_rules(app: App) -> VaultRules:
    return VaultRules(app.vault, int(app.settings.index.max_file_mb * 1_000_000))


def note(app: App, path: str, offset: int = 0, length: int = notes.DEFAULT_SLICE) -> notes.NoteSlice:
    """A bounded slice of one note's text, with its total length and content hash (no index needed)."""
    with translated_errors(path=app.index_dir):
        rules = _vault_rules(app)
        return notes.note_slice(rules, path, offset, length, rules.max_file_bytes)


def list_notes(
    app: App, folder: str = "", cursor: str | None = None, limit: int = notes.DEFAULT_PAGE
) -> notes.NoteList:
    """One page of the indexed notes under ``folder``, sorted by path."""
    with translated_errors(path=app.index_dir), app.reading() as store:
        return notes.list_notes(store, _vault_rules(app), folder, cursor, limit)
