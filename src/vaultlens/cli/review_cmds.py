"""`vaultlens review A B` (and `--batch`): show the exact prompt, send it once accepted, validate, plan.

Nothing here writes a note: a valid recommendation becomes a *planned* operation whose diff is
printed; `vaultlens apply OP` writes it. `--batch` plans nothing at all: it writes a report.
Everything a user can get wrong (the arguments, the notes, `--after` / `--fragment`, the report
path, the pairs file) is checked before a prompt is shown or sent. A batch whose pairs all fail
or are rejected exits non-zero (the first failure's exit code) after writing its report.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.errors import (
    ConfigError,
    ConsentRequired,
    InvalidInput,
    InvalidModelOutput,
    PermissionDenied,
    PlanRefused,
    VaultlensError,
)
from vaultlens.fsutil import nearest_existing, outside_vault, read_jsonl, write_outside_vault
from vaultlens.llm.base import LLMProvider
from vaultlens.services import app as services
from vaultlens.services import writes
from vaultlens.services.app import App
from vaultlens.services.review.session import (
    PlanOptions,
    Prepared,
    Reviewed,
    claim_dict,
    edit_diff,
    prepare,
    propose,
    resolve_options,
    send,
)

SendOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Send the prompt without asking (it is still shown).")
]


def _accepted(prepared: Prepared, yes: bool, json_: bool, count: int = 1) -> None:
    where = (
        prepared.destination
        or f"{prepared.provider} model {prepared.model} at {prepared.endpoint} (this machine)"
    )
    if not json_:
        render.err.print(
            f"[bold]Prompt for {escape(where)}[/bold] ({len(prepared.prompt_text):,} characters):"
        )
        sys.stderr.write(prepared.prompt_text + "\n")
        for cut in _cuts(prepared):
            render.err.print(
                f"[yellow]Note {cut['side']}, {escape(cut['path'])}, has {cut['chars']:,} characters: "
                f"only its first {cut['sent']:,} are in this prompt.[/yellow]"
            )
    if yes:
        return
    what = "the review prompt shown above" + (f" and {count - 1} more like it" if count > 1 else "")
    if json_ or not sys.stdin.isatty():
        raise ConsentRequired(
            where,
            what,
            message="Not sent: accept the prompt first.",
            hint="Run it in a terminal, or pass --yes.",
        )
    if not typer.confirm(
        f"Send {'these prompts' if count > 1 else 'this prompt'} to {where}?", default=False
    ):
        raise ConsentRequired(where, what, message="Nothing was sent.")


def _cuts(prepared: Prepared) -> list[dict[str, Any]]:
    """The notes the prompt carries only the start of (longer than the catalog's max_chars)."""
    catalog = prepared.catalog
    return [
        {
            "side": side,
            "path": catalog.paths[side],
            "chars": len(catalog.sources[side].text),
            "sent": len(catalog.sent_text(side)),
        }
        for side in ("A", "B")
        if catalog.cut(side)
    ]


def _plan(app: App, reviewed: Reviewed, options: PlanOptions) -> tuple[dict[str, Any] | None, str | None]:
    """Record the proposed edit as a planned operation; (plan, why there is none)."""
    try:
        edit = propose(app, reviewed, options)
    except PlanRefused as exc:
        return None, exc.message
    if edit is None:
        return None, None
    planned = writes.plan_write(app, edit.path, edit.after, edit.summary, based_on=edit.before)
    return {"op_id": planned.entry.op_id, "path": planned.entry.path, "diff": planned.diff}, None


def _result(reviewed: Reviewed, plan: dict[str, Any] | None, refused: str | None) -> dict[str, Any]:
    v = reviewed.validation
    review = v.review
    return {
        "a": reviewed.prepared.catalog.paths["A"],
        "b": reviewed.prepared.catalog.paths["B"],
        "relation": review.relation if review else None,
        "recommendation": review.recommendation.model_dump() if review else None,
        "claims": [claim_dict(c, reviewed.prepared.catalog) for c in v.claims],
        "notes_cut": _cuts(reviewed.prepared),
        "validation": v.to_dict(),
        "plan": plan,
        "plan_refused": refused,
        "model": reviewed.completion.model,
        "usage": reviewed.completion.usage.as_dict() if reviewed.completion.usage else None,
        "seconds": round(reviewed.seconds, 2),
    }


def _show(result: dict[str, Any]) -> None:
    out = render.out
    if not result["validation"]["ok"]:
        out.print("[red]The model's answer was rejected:[/red]")
        for d in result["validation"]["diagnostics"]:
            out.print(f"  {d['code']}: {escape(d['message'])}")
        return
    out.print(f"[bold]Relation:[/bold] {result['relation']}")
    for claim in result["claims"]:
        out.print(f"\n[bold]{claim['id']}[/bold] ({claim['kind']}) {escape(claim['text'])}")
        for side in ("evidenceA", "evidenceB"):
            q = claim[side]
            if q:
                out.print(f"  [cyan]{escape(q['path'])}[/cyan] L{q['start_line']}-{q['end_line']}:")
                out.print("    " + escape(q["text"]).replace("\n", "\n    "), highlight=False)
    rec = result["recommendation"]
    out.print(f"\n[bold]Recommendation:[/bold] {rec['action']} — {escape(rec['reason'])}")
    if result["plan_refused"]:
        out.print(f"[yellow]Not planned:[/yellow] {escape(result['plan_refused'])}")
    if result["plan"]:
        sys.stdout.write(result["plan"]["diff"])
        out.print(
            f"Planned as {result['plan']['op_id']}; write it with `vaultlens apply {result['plan']['op_id']}`."
        )


def review(
    a: Annotated[str | None, typer.Argument(help="Note A (vault-relative path).")] = None,
    b: Annotated[str | None, typer.Argument(help="Note B.")] = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: SendOpt = False,
    link_from: Annotated[
        Literal["A", "B"], typer.Option(help="add_link: the note that gets the link.")
    ] = "A",
    after: Annotated[
        str | None,
        typer.Option(
            help="Insert after this block: SIDE:NUMBER from the prompt's fragment catalog, e.g. A:2 "
            "(default: the last block the review saw)."
        ),
    ] = None,
    fragment: Annotated[
        str | None, typer.Option(help="consider_merge: the block to copy, as SIDE:NUMBER (e.g. B:1).")
    ] = None,
    batch: Annotated[
        Path | None, typer.Option(help='Review every pair in this JSONL file ({"a", "b"}).')
    ] = None,
    report: Annotated[Path | None, typer.Option(help="--batch: write the Markdown report here.")] = None,
) -> None:
    """Ask the configured LLM how two notes relate; a valid recommendation becomes a planned, exact diff.

    At most 12,000 characters of each note are sent (a longer note is cut, and the prompt says so)."""
    _check_arguments(a, b, batch, report, after, fragment)
    app = open_app(vault, set_)
    provider = services.llm(app)
    try:
        if batch is not None:
            _batch(app, provider, batch, report, yes, json_)
            return
        if not a or not b:
            raise ConfigError(
                "Give two notes (vaultlens review A B) or --batch pairs.jsonl --report report.md."
            )
        prepared = prepare(app, a, b, provider)
        options = resolve_options(prepared.catalog, PlanOptions(link_from, after, fragment))
        _accepted(prepared, yes, json_)
        reviewed = send(app, prepared, provider, consent=True)
        plan, refused = _plan(app, reviewed, options)
        result = _result(reviewed, plan, refused)
        if json_:
            render.print_json(result)
        else:
            _show(result)
        if not reviewed.validation.ok:  # shown above; a script must not take a rejected answer for one
            raise typer.Exit(InvalidModelOutput.exit_code)
    finally:
        provider.close()


def _check_arguments(
    a: str | None,
    b: str | None,
    batch: Path | None,
    report: Path | None,
    after: str | None,
    fragment: str | None,
) -> None:
    """Refuse combinations that would silently ignore part of what the user asked for."""
    if batch is not None and (a or b):
        given = " ".join(repr(x) for x in (a, b) if x)
        raise InvalidInput(
            f"Give either two notes or --batch, not both (got {given} and --batch {batch}).",
            hint="Review one pair with `vaultlens review A B`, or put every pair into the --batch file.",
        )
    if batch is None and report is not None:
        raise InvalidInput(
            "--report is for --batch; a single review prints its result.",
            hint="Use `vaultlens review --batch pairs.jsonl --report report.md`, or leave out --report.",
        )
    if batch is not None and (after or fragment):
        raise InvalidInput(
            "--after and --fragment choose the edit of one review; --batch plans no edit.",
            hint="Review the pair on its own (vaultlens review A B) to choose where an edit goes.",
        )


def _report_target(report: Path, vault: Path) -> Path:
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


def _pairs(path: Path) -> list[tuple[str, str]]:
    """The pairs of a JSONL file: one {"a": ..., "b": ...} object per line, UTF-8 (a BOM is allowed)."""
    shape = 'one JSON object per line, {"a": "Note A.md", "b": "Note B.md"}'
    pairs: list[tuple[str, str]] = []
    for n, item in read_jsonl(path, "the pairs file", shape):
        a, b = item.get("a"), item.get("b")
        if not (isinstance(a, str) and a and isinstance(b, str) and b):
            raise ConfigError(
                f'{path}:{n}: expected a JSON object with "a" and "b" note paths.',
                hint=f"The pairs file holds {shape}.",
            )
        pairs.append((a, b))
    if not pairs:
        raise ConfigError(f"{path} holds no pairs.", hint=f"The pairs file holds {shape}.")
    return pairs


def _sources(prepared: Prepared) -> str:
    """A report's lines naming both notes with their SHA-256 (and how much of a long one was sent)."""
    catalog = prepared.catalog
    cut = {c["side"]: c for c in _cuts(prepared)}
    return "".join(
        f"- `{catalog.paths[side]}` SHA-256 `{catalog.sources[side].file_hash}`"
        + (
            f" (only its first {cut[side]['sent']:,} of {cut[side]['chars']:,} characters sent)"
            if side in cut
            else ""
        )
        + "\n"
        for side in ("A", "B")
    )


def _send_pair(app: App, provider: LLMProvider, prepared: Prepared) -> tuple[dict[str, Any], str]:
    """Send one prepared pair: ({"ok", "action"}, its report section after the notes' lines)."""
    reviewed = send(app, prepared, provider, consent=True)
    try:
        edit = propose(app, reviewed, PlanOptions())
        proposed, refused = (edit_diff(edit) if edit else None), None
    except PlanRefused as exc:
        proposed, refused = None, exc.message
    result = _result(reviewed, None, refused)
    entry = {"ok": result["validation"]["ok"], "action": (result["recommendation"] or {}).get("action")}
    cost = (result["usage"] or {}).get("cost")
    section = (
        f"\nTime {result['seconds']} s · usage {json.dumps(result['usage'])}"
        + (f" · cost {cost}" if cost is not None else "")
        + "\n"
        f"\n### Model response\n\n```json\n{reviewed.completion.text}\n```\n"
        f"\n### Validator\n\n{'valid' if result['validation']['ok'] else 'rejected'}\n"
        + "".join(f"- `{d['code']}` {d['message']}\n" for d in result["validation"]["diagnostics"])
        + "\n### Proposed operation\n\n"
        + (
            f"```diff\n{proposed}```\n"
            if proposed
            else f"{refused or 'none (' + str((result['recommendation'] or {}).get('action')) + ')'}\n"
        )
    )
    return entry, section


def _batch(
    app: App, provider: LLMProvider, pairs_file: Path, report: Path | None, yes: bool, json_: bool
) -> None:
    if report is None:
        raise ConfigError("--batch needs --report FILE (the batch never changes a note; it writes a report).")
    target = _report_target(report, app.vault)  # before anything is read or sent
    pairs = _pairs(pairs_file)
    sections = [
        f"# vaultlens review report\n\nPairs: {len(pairs)} · provider {provider.name} · model {provider.model}\n"
    ]
    summary: list[dict[str, Any]] = []
    failures: list[tuple[int, str, str, VaultlensError]] = []
    accepted = False
    for n, (a, b) in enumerate(pairs, 1):
        sections.append(f"\n## {n}. {a} ↔ {b}\n")
        try:
            prepared = prepare(app, a, b, provider)
            if not accepted:  # the first pair that could be prepared is the one shown
                _accepted(prepared, yes, json_, count=len(pairs) - n + 1)
                accepted = True
            sections.append(_sources(prepared))
            entry, section = _send_pair(app, provider, prepared)
            summary.append({"a": a, "b": b, **entry})
            sections.append(section)
        except ConsentRequired:  # not accepted: the batch stops, nothing more is sent or written
            raise
        except VaultlensError as exc:
            failures.append((n, a, b, exc))
            summary.append({"a": a, "b": b, "ok": False, "error": exc.to_dict()})
            sections.append(f"\nFailed: {exc.message}\n" + (f"\n{exc.hint}\n" if exc.hint else ""))
    written = write_outside_vault(target, "".join(sections), app.vault)
    ok = sum(1 for s in summary if s.get("ok"))
    rejected = len(summary) - ok - len(failures)
    if json_:
        render.print_json(
            {
                "report": str(written),
                "valid": ok,
                "rejected": rejected,
                "failed": len(failures),
                "pairs": summary,
            }
        )
    else:
        render.out.print(
            f"Reviewed {len(pairs)} pairs: {ok} valid answers, {rejected} rejected by the validator, "
            f"{len(failures)} failed; report: {escape(str(written))}"
        )
    if failures:
        n, a, b, first = failures[0]
        render.err.print(
            f"[yellow]{len(failures)} of {len(pairs)} pairs failed; the first, pair {n} "
            f"({escape(a)} ↔ {escape(b)}): {escape(first.message)}[/yellow]"
        )
        if first.hint:
            render.err.print(f"[yellow]hint:[/yellow] {escape(first.hint)}")
    if ok == 0:
        render.err.print("[bold red]error:[/bold red] no pair got a valid answer.")
        raise typer.Exit(failures[0][3].exit_code if failures else InvalidModelOutput.exit_code)
