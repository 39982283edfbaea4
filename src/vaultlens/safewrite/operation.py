"""A planned change to one note: its exact bytes before and after, and the diff the user confirms.

Nothing here touches the disk. An operation is what a planner (review, audit, note tools)
hands to safewrite; the diff is rendered from the exact bytes, so a change of BOM, line ending
or trailing space shows up in it (and a control character shows by name, never as itself), and the user confirms that diff by its SHA-256
(:attr:`Operation.diff_sha`): a later plan whose bytes differ has another diff and needs
another confirmation.
"""

from __future__ import annotations

import difflib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from vaultlens.fsutil import sha256_hex
from vaultlens.vault.hidden import exact

__all__ = ["Operation", "new_op_id", "render_diff"]


def new_op_id() -> str:
    """A short, sortable, unguessable operation id: UTC time plus random hex (``20261203T101500-4f2a9c``)."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")  # after LF, CRLF or a lone CR (as the parser counts lines)


def _lines(data: bytes | None) -> list[str]:
    """The lines of ``data``, each with its line ending (LF, CRLF or a lone CR, as the note parser,
    the note view and ``--lines`` count lines, so the diff's line numbers are theirs). A form feed,
    U+2028 or another separator inside a line does not end it: it is shown by name, so nothing a
    terminal acts on is printed raw."""
    # surrogateescape: bytes that are not UTF-8 still show (and still differ) instead of failing
    if not data:
        return []
    return [line for line in _LINE_END.split(data.decode("utf-8", "surrogateescape")) if line]


def _visible(line: str) -> str:
    """A diff line with what a terminal would hide named (:func:`vaultlens.vault.hidden.exact`: a BOM,
    ESC, a bidi override..., ``<LT>`` for a ``<`` that would read as a name) and its line ending said
    unless it is LF: ``<CR>`` before a CRLF's LF, ``<CR><no LF>`` for a lone CR, the unified diff's
    marker for none. Each way of ending a line reads differently, so the diff the user confirms
    reads back to one text only (tests/test_diff_reads_back.py applies it)."""
    if line.endswith("\r\n"):
        return exact(line[:-2]) + "<CR>\n"
    if line.endswith("\n"):
        return exact(line[:-1]) + "\n"
    if line.endswith("\r"):
        return exact(line[:-1]) + "<CR><no LF>\n"
    return exact(line) + "\n\\ No newline at end of file\n"


def render_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    """The unified diff of ``before`` → ``after`` (``None`` = the file does not exist)."""
    old = "/dev/null" if before is None else f"a/{path}"
    new = "/dev/null" if after is None else f"b/{path}"
    out = [f"--- {old}\n", f"+++ {new}\n"]
    # the first two lines are the file header; a removed "---" line (front matter) is "----" and stays
    for line in list(difflib.unified_diff(_lines(before), _lines(after), n=3, lineterm="\n"))[2:]:
        out.append(line if line.startswith("@@") else line[0] + _visible(line[1:]))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Operation:
    """Replace ``before`` with ``after`` at ``path`` (vault-relative, POSIX).

    ``before is None``: create the note (refused if the path exists by then).
    ``after is None``: remove it (only an undo of a creation does this).
    """

    op_id: str
    path: str
    before: bytes | None
    after: bytes | None
    summary: str

    @property
    def diff(self) -> str:
        return render_diff(self.path, self.before, self.after)

    @property
    def diff_sha(self) -> str:
        return sha256_hex(self.diff)

    @property
    def before_sha(self) -> str | None:
        return None if self.before is None else sha256_hex(self.before)

    @property
    def after_sha(self) -> str | None:
        return None if self.after is None else sha256_hex(self.after)

    def reversed(self, op_id: str) -> Operation:
        """The operation that puts ``before`` back (what undo writes)."""
        return Operation(op_id, self.path, self.after, self.before, f"undo {self.op_id}")
