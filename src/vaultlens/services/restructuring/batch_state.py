"""A batch's state under ``$VAULTLENS_HOME/batches/<id>/state.json``, saved after every note.

So Ctrl-C or a kill keeps every finished note: ``vaultlens write batch --resume ID`` reads the
state and runs only the notes still ``pending`` or ``failed`` (and those whose planned change
can no longer be written: :func:`~vaultlens.services.restructuring.batch.reopen`). A note's change is a planned
safewrite operation (its exact bytes are in the journal), so the state holds only its id. Each
save replaces the file atomically (temporary file, fsync, rename): a kill leaves the state as it
was before or after that note, never half of it. One process at a time runs a batch
(:func:`locked`): two resumes at once would both send every pending note.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from vaultlens.config import paths
from vaultlens.errors import (
    IndexLocked,
    InvalidInput,
    OperationNotFound,
    StoreCorrupt,
    translate_error,
    translated_errors,
)
from vaultlens.fsutil import atomic_write
from vaultlens.index.estimate import CHARS_PER_TOKEN
from vaultlens.index.lock import WriterLock

__all__ = ["BatchNote", "BatchState", "Estimate", "NoteStatus", "load", "locked", "new_batch_id", "save"]

NoteStatus = Literal["pending", "planned", "unchanged", "skipped", "failed"]
_ID_CHARS = frozenset("0123456789abcdefT-")
_SAVING = threading.Lock()  # a batch's workers settle notes from several threads


def new_batch_id() -> str:
    """A short, sortable, unguessable id (UTC time plus random hex), like an operation id."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


@dataclass(slots=True)
class BatchNote:
    """One note of a batch: ``planned`` carries the safewrite operation that writes its change."""

    path: str
    status: NoteStatus = "pending"
    op_id: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the batch sends and gets back, in approximate tokens, and its cost if prices are set."""

    notes: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0
    cost: float | None = None  # in the settings' price unit; None: no price set

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        """The estimate as the CLI says it before a batch runs."""
        said = (
            "unknown (set llm.price_in_per_mtok and llm.price_out_per_mtok)"
            if self.cost is None
            else f"about {self.cost:.4f}"
        )
        return (
            f"{self.notes} notes: about {self.prompt_tokens:,} prompt tokens and {self.answer_tokens:,} answer "
            f"tokens (characters / {CHARS_PER_TOKEN}); cost {said}."
        )


@dataclass(slots=True)
class BatchState:
    """What a batch is (vault, selection, instruction) and how far it got."""

    batch_id: str
    vault: str
    selection: dict[str, str]
    instruction: str
    title: str
    concurrency: int
    created: str
    notes: list[BatchNote]
    estimate: Estimate = field(default_factory=Estimate)
    vault_id: str = ""  # the vault's journal id: the batch follows its vault when the folder moves

    def as_dict(self) -> dict[str, Any]:
        """As the verbs return it (the vault id is bookkeeping, not part of that shape)."""
        out = asdict(self)
        del out["vault_id"]
        return out

    @property
    def summary(self) -> str:
        """The journal summary of each of its notes' changes (also how a kill's last plan is found again)."""
        return f"batch {self.batch_id}: {self.title}"

    def settle(self, path: str, status: NoteStatus, op_id: str | None = None, detail: str = "") -> BatchNote:
        """Record one note's outcome and save the state at once (threads call this)."""
        with _SAVING:
            note = next(n for n in self.notes if n.path == path)
            note.status, note.op_id, note.detail = status, op_id, detail
            save(self)
            return note


def _file(batch_id: str) -> Path:
    if not batch_id or set(batch_id) - _ID_CHARS:
        raise InvalidInput(
            f"{batch_id!r} is not a batch id.", hint="Batch ids look like 20261204T181500-4f2a9c."
        )
    return paths.batches_dir() / batch_id / "state.json"


@contextlib.contextmanager
def locked(batch_id: str) -> Iterator[None]:
    """Run batch ``batch_id`` in this process only: an OS file lock beside its state (released when
    the holder exits, kill -9 included); a second run gets :class:`IndexLocked` naming the holder."""
    folder = _file(batch_id).parent
    lock = WriterLock(folder, what=f"batch {batch_id}")
    try:
        lock.acquire()
    except IndexLocked as exc:
        raise IndexLocked(
            exc.message.replace(" is writing ", " is running "),
            hint="Wait for it to finish (or stop it with Ctrl-C), then resume the batch; "
            "notes it has done are not sent again.",
        ) from None
    try:
        yield
    finally:
        lock.release()


def save(state: BatchState) -> None:
    target = _file(state.batch_id)
    with translated_errors("save the batch state", target):
        paths.ensure_home()
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, json.dumps(asdict(state), ensure_ascii=False, indent=2) + "\n", mode=0o600)


def load(batch_id: str) -> BatchState:
    target = _file(batch_id)
    try:
        raw = json.loads(target.read_bytes())
        raw["notes"] = [BatchNote(**n) for n in raw["notes"]]
        raw["estimate"] = Estimate(**raw.get("estimate", {}))
        return BatchState(**raw)
    except FileNotFoundError:
        raise OperationNotFound(
            f"No batch {batch_id} under {paths.batches_dir()}.",
            hint="The id was printed when the batch started; `ls` that folder lists the batches.",
            op_id=None,
        ) from None
    except OSError as exc:
        raise translate_error(exc, "read the batch state", target) from exc
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreCorrupt(f"The batch state {target} is damaged ({exc}).") from exc
