"""`vaultlens review A B` (and `--batch`): show the exact prompt, send it once accepted, validate, plan.

Nothing here writes a note: a valid recommendation becomes a *planned* operation whose diff is
printed; `vaultlens apply OP` writes it. `--batch` plans nothing at all: it writes a report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.errors import ConfigError, ConsentRequired, PlanRefused, VaultlensError
from vaultlens.fsutil import outside_vault, write_outside_vault
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


def _plan(app: App, reviewed: Reviewed, options: PlanOptions) -> tuple[dict[str, Any] | None, str | None]:
    """Record the proposed edit as a planned operation; (plan, why there is none)."""
    try:
        edit = propose(app, reviewed, options)
    except PlanRefused as exc:
        return None, exc.message
    if edit is None:
        return None, None
    planned = writes.plan_write(app, edit.path, edit.after, edit.summary)
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
        str | None, typer.Option(help="Insert after this fragment id (default: the last block).")
    ] = None,
    fragment: Annotated[str | None, typer.Option(help="consider_merge: the fragment id to copy.")] = None,
    batch: Annotated[
        Path | None, typer.Option(help='Review every pair in this JSONL file ({"a", "b"}).')
    ] = None,
    report: Annotated[Path | None, typer.Option(help="--batch: write the Markdown report here.")] = None,
) -> None:
    """Ask the configured LLM how two notes relate; a valid recommendation becomes a planned, exact diff."""
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
        _accepted(prepared, yes, json_)
        reviewed = send(app, prepared, provider, consent=True)
        plan, refused = _plan(app, reviewed, PlanOptions(link_from, after, fragment))
        result = _result(reviewed, plan, refused)
        if json_:
            render.print_json(result)
        else:
            _show(result)
    finally:
        provider.close()


def _pairs(path: Path) -> list[tuple[str, str]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror or exc}).") from exc
    pairs: list[tuple[str, str]] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            pairs.append((str(item["a"]), str(item["b"])))
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f'{path}:{n}: expected a JSON object with "a" and "b" note paths.') from None
    if not pairs:
        raise ConfigError(f"{path} holds no pairs.")
    return pairs


def _batch(
    app: App, provider: LLMProvider, pairs_file: Path, report: Path | None, yes: bool, json_: bool
) -> None:
    if report is None:
        raise ConfigError("--batch needs --report FILE (the batch never changes a note; it writes a report).")
    outside_vault(report, app.vault)  # before anything is sent
    pairs = _pairs(pairs_file)
    first = prepare(app, *pairs[0], provider)
    _accepted(first, yes, json_, count=len(pairs))
    sections = [
        f"# vaultlens review report\n\nPairs: {len(pairs)} · provider {first.provider} · model {first.model}\n"
    ]
    summary: list[dict[str, Any]] = []
    for n, (a, b) in enumerate(pairs, 1):
        sections.append(f"\n## {n}. {a} ↔ {b}\n")
        try:
            prepared = prepare(app, a, b, provider)
            sections.append(
                "".join(
                    f"- `{p}` SHA-256 `{src.file_hash}`\n"
                    for p, src in zip(
                        prepared.catalog.paths.values(), prepared.catalog.sources.values(), strict=True
                    )
                )
            )
            reviewed = send(app, prepared, provider, consent=True)
            try:
                edit = propose(app, reviewed, PlanOptions())
                proposed, refused = (edit_diff(edit) if edit else None), None
            except PlanRefused as exc:
                proposed, refused = None, exc.message
            result = _result(reviewed, None, refused)
            summary.append(
                {
                    "a": a,
                    "b": b,
                    "ok": result["validation"]["ok"],
                    "action": (result["recommendation"] or {}).get("action"),
                }
            )
            cost = (result["usage"] or {}).get("cost")
            sections.append(
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
        except VaultlensError as exc:
            summary.append({"a": a, "b": b, "ok": False, "error": exc.to_dict()})
            sections.append(f"\nFailed: {exc.message}\n")
    written = write_outside_vault(report, "".join(sections), app.vault)
    if json_:
        render.print_json({"report": str(written), "pairs": summary})
    else:
        ok = sum(1 for s in summary if s.get("ok"))
        render.out.print(f"Reviewed {len(pairs)} pairs ({ok} valid answers); report: {escape(str(written))}")
