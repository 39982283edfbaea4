"""``review --batch``: every pair of a JSONL file reviewed, one Markdown report, no note planned.

Everything a user can get wrong (the report path, the pairs file) is checked before a prompt is
shown or sent. The first pair that can be prepared is the prompt the user accepts for the batch
(with "and N more like it"); a pair that fails is recorded in the report and the batch goes on.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultlens.errors import (
    ConfigError,
    ConsentRequired,
    InvalidInput,
    PermissionDenied,
    PlanRefused,
    Proposal,
    VaultError,
    VaultlensError,
)
from vaultlens.fsutil import jsonl_rows, nearest_existing, outside_vault, write_outside_vault
from vaultlens.llm.base import LLMProvider
from vaultlens.services.changing.review.outcome import ReviewResult, cuts, destination
from vaultlens.services.changing.review.session import (
    PlanOptions,
    Prepared,
    edit_diff,
    prepare,
    propose,
    send,
)
from vaultlens.services.context import VaultFiles
from vaultlens.vault.hidden import visible
from vaultlens.vault.safepath import resolve_note_path

PAIRS_SHAPE = 'one JSON object per line, {"a": "Note A.md", "b": "Note B.md"}'


@dataclass(frozen=True, slots=True)
class PairOutcome:
    a: str
    b: str
    ok: bool
    action: str | None = None
    error: VaultlensError | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"a": self.a, "b": self.b, "ok": self.ok}
        if self.error is not None:
            out["error"] = self.error.to_dict()
        else:
            out["action"] = self.action
        return out


@dataclass
class BatchReport:
    """The batch's outcome: the report file, and per pair whether the answer was valid or why it failed."""

    report: Path
    pairs: list[PairOutcome] = field(default_factory=list)

    @property
    def valid(self) -> int:
        return sum(1 for p in self.pairs if p.ok)

    @property
    def failures(self) -> list[tuple[int, PairOutcome]]:
        return [(n, p) for n, p in enumerate(self.pairs, 1) if p.error is not None]

    @property
    def rejected(self) -> int:
        return len(self.pairs) - self.valid - len(self.failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "report": str(self.report),
            "valid": self.valid,
            "rejected": self.rejected,
            "failed": len(self.failures),
            "pairs": [p.as_dict() for p in self.pairs],
        }


def report_target(report: Path, vault: Path) -> Path:
    """The report's resolved path, checked before any note is read or prompt sent: outside the
    vault, not a folder, in a folder that is (or can be made) writable."""
    resolved = outside_vault(report, vault)
    try:
        if resolved.is_dir():
            raise InvalidInput(
                f"--report {report} is a folder; the report is one Markdown file.",
                hint=f"Give a file path, e.g. --report {report / 'review-report.md'}.",
            )
        folder = nearest_existing(resolved.parent)
    except OSError as exc:
        raise PermissionDenied(
            f"Cannot write the report {report}: {exc.strerror or exc}.", path=str(resolved)
        ) from None
    if not folder.is_dir():
        raise InvalidInput(f"Cannot write the report {report}: {folder} is a file, not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionDenied(
            f"Cannot write the report {report}: permission denied for the folder {folder}.",
            hint="Choose a folder you may write to.",
            path=str(folder),
        )
    return resolved


@dataclass(frozen=True, slots=True)
class PairLine:
    """One line of the pairs file: two note paths, or the ``problem`` that makes it no pair (then
    ``a`` and ``b`` are what the line gave, if anything), reported like a missing note."""

    line: int
    a: str
    b: str
    problem: InvalidInput | None = None


def read_pairs(path: Path) -> list[PairLine]:
    """The lines of a JSONL file of {"a": ..., "b": ...} objects, UTF-8 (a BOM is allowed); a
    malformed line is kept with its problem, so one typo does not stop the batch."""
    pairs: list[PairLine] = []
    for n, item in jsonl_rows(path, "the pairs file", PAIRS_SHAPE):
        if isinstance(item, InvalidInput):
            pairs.append(PairLine(n, "", "", item))
            continue
        a, b = item.get("a"), item.get("b")
        if isinstance(a, str) and a and isinstance(b, str) and b:
            pairs.append(PairLine(n, a, b))
        else:
            problem = InvalidInput(
                f'{path}:{n}: expected a JSON object with "a" and "b" note paths.',
                hint=f"The pairs file holds {PAIRS_SHAPE}.",
            )
            pairs.append(
                PairLine(n, a if isinstance(a, str) else "", b if isinstance(b, str) else "", problem)
            )
    if not pairs:
        raise ConfigError(f"{path} holds no pairs.", hint=f"The pairs file holds {PAIRS_SHAPE}.")
    return pairs


def proposal_for(prepared: Prepared, count: int = 1) -> ConsentRequired:
    """The prompt to accept before anything is sent (``count``: the pairs it stands for)."""
    what = "the review prompt shown" + (f" and {count - 1} more like it" if count > 1 else "")
    return ConsentRequired(
        destination(prepared),
        what,
        message="Not sent: accept the prompt first.",
        hint="Show the prompt and call again with the grant (the CLI asks, or pass --yes).",
        preview=prepared.prompt_text,
        remarks=tuple(c.remark() for c in cuts(prepared)),
        payload=prepared,
    )


def accepted(confirmed: Proposal | None, root: Path, a: str, b: str) -> Prepared | None:
    """The prepared prompt the user accepted for the pair (a, b), if ``confirmed`` holds it (the
    paths compared as the vault spells them on disk, so an NFC argument finds an NFD file)."""
    prepared = confirmed.payload if confirmed is not None else None
    if not isinstance(prepared, Prepared):
        return None
    try:
        wanted = (resolve_note_path(root, a).rel, resolve_note_path(root, b).rel)
    except VaultError:
        return None
    return prepared if (prepared.catalog.paths["A"], prepared.catalog.paths["B"]) == wanted else None


def _sources(prepared: Prepared) -> str:
    """A report's lines naming both notes with their SHA-256 (and how much of a long one was sent)."""
    catalog = prepared.catalog
    cut = {c.side: c for c in cuts(prepared)}
    return "".join(
        f"- `{catalog.paths[side]}` SHA-256 `{catalog.sources[side].file_hash}`"
        + (
            f" (only its first {cut[side].sent:,} of {cut[side].chars:,} characters sent)"
            if side in cut
            else ""
        )
        + "\n"
        for side in ("A", "B")
    )


def _section(files: VaultFiles, provider: LLMProvider, prepared: Prepared) -> tuple[bool, str | None, str]:
    """Send one prepared pair: whether the answer is valid, its action, its report section."""
    reviewed = send(files, prepared, provider, consent=True)
    try:
        edit = propose(files, reviewed, PlanOptions())
        proposed, refused = (edit_diff(edit) if edit else None), None
    except PlanRefused as exc:
        proposed, refused = None, exc.message
    result = ReviewResult(reviewed, None, refused).as_dict()
    action = (result["recommendation"] or {}).get("action")
    cost = (result["usage"] or {}).get("cost")
    section = (
        f"\nTime {result['seconds']} s · usage {json.dumps(result['usage'])}"
        + (f" · cost {cost}" if cost is not None else "")
        + "\n"
        f"\n### Model response\n\n```json\n{visible(reviewed.completion.text)}\n```\n"  # ESC shown, not run
        f"\n### Validator\n\n{'valid' if result['validation']['ok'] else 'rejected'}\n"
        + "".join(f"- `{d['code']}` {d['message']}\n" for d in result["validation"]["diagnostics"])
        + "\n### Proposed operation\n\n"
        + (f"```diff\n{proposed}```\n" if proposed else f"{refused or 'none (' + str(action) + ')'}\n")
    )
    return reviewed.validation.ok, action, section


def run_batch(
    files: VaultFiles,
    provider: LLMProvider,
    pairs: list[PairLine],
    target: Path,
    confirmed: Proposal | None,
) -> BatchReport:
    """Review every pair; without ``confirmed``, stop at the first pair that can be prepared with its
    proposal (:class:`ConsentRequired`): nothing is sent and no report is written."""
    sections = [
        f"# vaultlens review report\n\nPairs: {len(pairs)} · provider {provider.name} · model {provider.model}\n"
    ]
    if confirmed is not None and not any(accepted(confirmed, files.root, p.a, p.b) for p in pairs):
        confirmed = None  # a grant for another prompt does not cover this batch
    result = BatchReport(target)
    for n, pair in enumerate(pairs, 1):
        a, b = pair.a, pair.b
        sections.append(f"\n## {n}. {a} ↔ {b}\n" if pair.problem is None else f"\n## {n}. line {pair.line}\n")
        try:
            if pair.problem is not None:
                raise pair.problem
            prepared = accepted(confirmed, files.root, a, b) or prepare(files, a, b, provider)
            if confirmed is None:
                raise proposal_for(prepared, count=len(pairs) - n + 1)
            sections.append(_sources(prepared))
            ok, action, section = _section(files, provider, prepared)
            result.pairs.append(PairOutcome(a, b, ok, action))
            sections.append(section)
        except ConsentRequired:  # not accepted: the batch stops, nothing more is sent or written
            raise
        except VaultlensError as exc:
            result.pairs.append(PairOutcome(a, b, False, error=exc))
            sections.append(f"\nFailed: {exc.message}\n" + (f"\n{exc.hint}\n" if exc.hint else ""))
    result.report = write_outside_vault(target, "".join(sections), files.root)
    return result
