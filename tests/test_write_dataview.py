"""`vaultlens write dataview`: the vault's real fields (keys with value types, tags, folders) are collected
by code and sent without note text; the model's DQL is checked in code (query type, FROM sources that
exist, fields that exist) and refused otherwise; `--insert` plans a ```dataview block through safewrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vaultlens
from vaultlens.errors import InvalidQuery
from vaultlens.services.app import App
from vaultlens.services.drafting.dataview.check import query_problems
from vaultlens.services.drafting.dataview.fields import VaultFields, collect
from vaultlens.services.verbs import changing
from vl_support import check_shape, run_cli, write_vault
from write_support import ToolModel, cli_args, llm_settings

NOTES = {
    "Books/Dune.md": "---\nauthor: Frank Herbert\nrating: 5\nread: 2024-03-01\nfinished: true\ntags: [book, scifi]\n---\n# Dune\n\nSecret body text.\n",
    "Books/Emma.md": "---\nauthor: Jane Austen\nrating: 4\nDue Date: 2024-05-01\n---\n# Emma\n\n#book #classic/english\n",
    "Projects/Garden.md": "---\nstatus: active\n---\n# Garden\n\n- [ ] buy seeds\n",
    "Reading list.md": "# Reading list\n\nSee [[Dune]].\n",
}
GOOD = 'TABLE author, rating AS "Stars"\nFROM "Books" AND #book\nWHERE rating >= 4 AND file.mtime > date(today) - dur(1 year)\nSORT rating DESC\nLIMIT 10'


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", NOTES)


@pytest.fixture
def fields(vault: Path) -> VaultFields:
    return collect(App.open(vault).files())


def test_fields_come_from_the_notes_with_value_types(fields: VaultFields) -> None:
    facts = fields.facts()
    by_name = {f["name"]: f for f in facts["fields"]}
    assert by_name["rating"] == {"name": "rating", "types": ["number"], "notes": 2}
    assert by_name["read"]["types"] == ["date"] and by_name["finished"]["types"] == ["checkbox"]
    assert by_name["author"]["types"] == ["text"] and "Due Date" in by_name
    assert set(facts["tags"]) == {"#book", "#scifi", "#classic/english"}
    assert set(facts["folders"]) == {"Books", "Projects"}


@pytest.mark.parametrize(
    "query",
    [
        GOOD,
        "LIST FROM #classic",
        "LIST file.name FROM [[Dune]] OR outgoing([[Reading list]])",
        'TABLE WITHOUT ID file.link AS "Book", due-date FROM -"Projects"',
        'TASK FROM "Projects" WHERE !completed AND contains(text, "seeds")',
        'TABLE rows.file.link FROM "Books" GROUP BY author AS writer SORT writer',
        'TABLE filter(file.tasks, (t) => !t.completed) AS open FROM "Projects"',
        'CALENDAR file.ctime FROM "Books"',
        'table author from "Books" flatten author as a where a',
    ],
)
def test_valid_queries_pass_the_check(fields: VaultFields, query: str) -> None:
    assert query_problems(query, fields) == []


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ('TABLE pages FROM "Books"', "field 'pages'"),
        ('TABLE author WHERE publisher = "x"', "field 'publisher'"),
        ('LIST FROM "Films"', 'FROM "Films"'),
        ("LIST FROM #poetry", "FROM #poetry"),
        ("LIST FROM [[Nowhere]]", "FROM [[Nowhere]]"),
        ("SELECT * FROM books", "a query starts with"),
        ("LIST file.colour", "file.colour"),
        ('CALENDAR FROM "Books"', "CALENDAR needs"),
        ('LIST FROM "Books" LIMIT ten', "LIMIT"),
        ("LIST FROM books", "FROM accepts only"),
    ],
)
def test_invalid_queries_are_refused_with_the_reason(fields: VaultFields, query: str, problem: str) -> None:
    assert any(problem in p for p in query_problems(query, fields)), query_problems(query, fields)


def test_a_checked_query_is_shown_and_inserted_through_safewrite(vault: Path) -> None:
    before = (vault / "Reading list.md").read_bytes()
    answer = {"query": f"```dataview\n{GOOD}\n```", "explanation": "Books rated 4 or more."}
    with ToolModel(answer) as server:
        app = App.open(vault, llm_settings(server))
        result = vaultlens.write_dataview(app, "my best books", insert="Reading list.md")
        [user] = server.user_messages()
    assert "Secret body text" not in user and '"rating"' in user and "Question: my best books" in user
    data = result.as_dict()
    check_shape("write_dataview", data)
    assert data["query"] == GOOD
    applied = changing.apply(app, result.plan.entry.op_id, result.plan.proposal) if result.plan else None
    assert applied is not None
    assert (vault / "Reading list.md").read_bytes() == before + f"\n```dataview\n{GOOD}\n```\n".encode()
    undo = changing.plan_undo(app, applied.entry.op_id)
    changing.apply(app, undo.entry.op_id, undo.proposal)
    assert (vault / "Reading list.md").read_bytes() == before


def test_a_query_naming_a_field_the_vault_lacks_is_refused(vault: Path) -> None:
    with ToolModel({"query": 'TABLE author, pages FROM "Books"', "explanation": "x"}) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(InvalidQuery, match="'pages'"):
            vaultlens.write_dataview(app, "books with page counts", insert="Reading list.md")
        refused = run_cli(
            ["write", "dataview", "page counts", "--json", *cli_args(vault, llm_settings(server))]
        )
    assert refused.exit_code != 0 and json.loads(refused.stdout)["error"]["code"] == "invalid_query"
    assert (
        vaultlens.history(app) == []
        and (vault / "Reading list.md").read_bytes() == NOTES["Reading list.md"].encode()
    )


def test_cli_prints_the_query_without_writing(vault: Path) -> None:
    with ToolModel({"query": "LIST FROM #book", "explanation": "All books."}) as server:
        done = run_cli(["write", "dataview", "all my books", *cli_args(vault, llm_settings(server))])
    assert done.exit_code == 0, done.output
    assert "```dataview\nLIST FROM #book\n```" in done.stdout and "All books." in done.stdout
