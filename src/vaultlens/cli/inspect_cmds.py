"""`vaultlens status`, `doctor`, `config show`, `eval beir | queries` and `bench embed`: what the index,
the settings and this machine say about themselves."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, YesOpt, open_app, parse_overrides
from vaultlens.cli.render import shown

if TYPE_CHECKING:
    from vaultlens.services.verbs.inspecting import GroupScore

config_cli = typer.Typer(help="Inspect settings.", no_args_is_help=True)
eval_cli = typer.Typer(help="Measure retrieval quality on labelled data.", no_args_is_help=True)
bench_cli = typer.Typer(help="Measure what this machine does.", no_args_is_help=True)


def status(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Coverage of the index: indexed, skipped and failed files with reasons, totals, last run."""
    from vaultlens.services.verbs.status import status as index_status

    app = open_app(vault, set_)
    info = index_status(app)
    if json_:
        render.print_json(info.as_dict())
        return
    render.print_status(info)


def doctor(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    deep: Annotated[
        bool, typer.Option("--deep", help="Also measure the ANN tier's recall@10 against exact search.")
    ] = False,
) -> None:
    """Check the index's integrity and consistency; exits non-zero on any problem."""
    from vaultlens.services.verbs.status import doctor as check

    app = open_app(vault, set_)
    report = check(app, deep)
    if json_:
        render.print_json(report.as_dict())
    else:
        render.print_doctor(report)
    if not report.healthy:
        raise typer.Exit(1)


def config_show(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Print the effective settings and where each value came from."""
    from vaultlens.config.settings import allowed, as_rows

    app = open_app(vault, set_)
    rows = as_rows(app.loaded)
    if json_:
        render.print_json({k: {"value": v, "from": o, "allowed": allowed(k)} for k, v, o in rows})
        return
    for key, value, origin in rows:
        rng = f", allowed {allowed(key)}" if allowed(key) else ""
        render.out.print(f"{key:<26} = {value!r:<28} [dim]# {shown(origin)}{shown(rng)}[/dim]")


def _run_eval(evaluate: Callable[..., list[GroupScore]], set_: SetOpt, json_: bool, yes: bool) -> None:
    """An eval verb with the --set overrides, live progress and the consent a remote model needs."""
    overrides = parse_overrides(set_)
    with render.RichProgress() as progress:
        scores = confirmed(
            lambda grant: evaluate(overrides=overrides, progress=progress, consent=grant is not None),
            yes,
            json_,
        )
    _print_scores(scores, json_)


def _print_scores(scores: list[GroupScore], json_: bool) -> None:
    if json_:
        render.print_json([s.as_dict() for s in scores])
        return
    for s in scores:
        cells = "  ".join(f"{k} {v:.3f}" for k, v in s.metrics.items())
        render.out.print(f"{s.group:<22} n={s.n:<4} {cells}", soft_wrap=True)  # one line a group


def eval_beir(
    folder: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv.")],
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """nDCG@10, Recall@100 and MRR@10 of search on a BEIR data set (written as one note per document)."""
    from vaultlens.services.verbs import inspecting

    _run_eval(functools.partial(inspecting.eval_beir, folder), set_, json_, yes)


def eval_queries(
    file: Annotated[
        Path, typer.Argument(help="queries.jsonl with vault, query, relevant, lang, cross_lingual.")
    ],
    split: Annotated[
        str | None,
        typer.Option("--split", help="Only the lines whose split field is this: tune or held."),
    ] = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """hit@1, hit@3, hit@5 and MRR on a labelled query file, per vault, language and cross-lingual flag."""
    from vaultlens.services.verbs import inspecting

    _run_eval(functools.partial(inspecting.eval_queries, file, split=split), set_, json_, yes)


def bench_embed(
    vault: VaultOpt = None,
    tier: Annotated[
        bool,
        typer.Option(
            "--tier", help="The quality tier's model instead (embedding.tier; e5 when off or auto)."
        ),
    ] = False,
    set_: SetOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Embedding speed on a built-in sample: docs/s, chunks/s and the ratio to the model alone."""
    from vaultlens.services.verbs import inspecting

    result = inspecting.bench_embed(open_app(vault, set_), tier)
    if json_:
        render.print_json(result.as_dict())
        return
    ratio = (
        f"{result.ratio_to_model:.2f}x the model alone" if result.ratio_to_model else "model alone not timed"
    )
    render.out.print(
        f"{shown(result.model)}: {result.docs_per_s:.1f} docs/s, {result.chunks_per_s:.1f} chunks/s "
        f"({result.texts} texts, {result.threads} threads, batches of {result.batch_size}; {ratio}; "
        f"load average {result.load_average:.1f})"
    )
