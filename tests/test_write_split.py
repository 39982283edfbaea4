"""`vaultlens write split`: the model names titles, line ranges and links; code builds the notes from
the original's exact lines, never loses or doubles a line, and plans one operation group.

Property-based tests (hypothesis) on generated Markdown for the coverage check and the builder;
the scripted LLM server on loopback and real files for the command itself.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vaultlens
from scripted_chat_server import ScriptedChatServer
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.chunking.source import NoteSource, RawNote, note_from_bytes
from vaultlens.errors import ConsentRequired, PlanRefused
from vaultlens.fsutil import sha256_hex
from vaultlens.services.app import App
from vaultlens.services.restructuring import split
from vl_support import check_shape, run_cli, snapshot, write_vault
from write_support import ToolModel, cli_args, llm_settings

# ---- properties on generated Markdown ------------------------------------------------------------

LINE = st.sampled_from(
    ["", "   ", "# Heading", "## Sub", "- item", "1. step", "Plain text.", "See [[Other]] #tag", "```",
     "~~~", "code()", "> quote", "| a | b |", "Ünïcödé line", "\tindented", "---", "trailing  "]
)  # fmt: skip


@st.composite
def markdown(draw: st.DrawFn) -> tuple[NoteSource, list[str]]:
    """A note (front matter or not, LF or CRLF, final newline or not) and its lines."""
    body = draw(st.lists(LINE, min_size=1, max_size=30))
    front = ["---", "tags: [x]", "---"] if draw(st.booleans()) else []
    lines = front + body
    text = "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    raw = text.replace("\n", "\r\n" if draw(st.booleans()) else "\n").encode("utf-8")
    source = note_from_bytes(RawNote("Folder/Long note.md", raw, sha256_hex(raw)), MarkdownChunker())
    return source, split.note_lines(source.text)


@st.composite
def answers(draw: st.DrawFn, total: int) -> dict[str, Any]:
    """Any plan a model could send: ranges may overlap, fall outside the note or cut a code block."""
    n = draw(st.integers(1, 5))
    edge = st.integers(-1, total + 2)
    return {
        "notes": [
            {
                "title": f"Part {i}",
                "ranges": [
                    {"first": a, "last": b}
                    for a, b in draw(st.lists(st.tuples(edge, edge), min_size=1, max_size=3))
                ],
                "links": [f"Part {j}" for j in draw(st.lists(st.integers(0, n - 1), max_size=2))],
            }
            for i in range(n)
        ]
    }


def exactly_once(parts: list[tuple[int, ...]], total: int) -> bool:
    counts = Counter(n for p in parts for n in p)
    return sorted(counts) == list(range(1, total + 1)) and set(counts.values()) == {1}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_plan_check_never_lets_a_line_be_lost_or_doubled(data: st.DataObject) -> None:
    source, lines = data.draw(markdown())
    answer = data.draw(answers(len(lines)))
    try:
        found = split.partition(answer, lines, source.note.body_start_line)
    except PlanRefused:
        return
    assert exactly_once([p.lines for p in found.parts] + [found.kept], len(lines))
    asked = [
        {
            n
            for r in note["ranges"]
            for n in range(r["first"], r["last"] + 1)
            if n > source.note.body_start_line
        }
        for note in answer["notes"]
    ]
    for i, a in enumerate(asked):
        assert a <= set(found.parts[i].lines), "every line the model gave a note is in it"
        assert all(not a & b for b in asked[i + 1 :]), "a plan giving a line to two notes was accepted"
    assert all(n > source.note.body_start_line for p in found.parts for n in p.lines), "front matter stays"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_coverage_check_accepts_exactly_the_partitions(data: st.DataObject) -> None:
    total = data.draw(st.integers(1, 25))
    numbers = st.lists(st.integers(0, total + 1), max_size=total + 3)
    parts = data.draw(st.lists(numbers, min_size=1, max_size=4))
    kept = data.draw(numbers)
    candidate = split.Partition(
        tuple(split.Part(f"P{i}", tuple(p)) for i, p in enumerate(parts)), tuple(kept)
    )
    exact = exactly_once([tuple(p) for p in parts] + [tuple(kept)], total)
    try:
        split.check_coverage(candidate, total)
    except PlanRefused:
        assert not exact
    else:
        assert exact


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_building_from_any_partition_reproduces_every_line_exactly_once(data: st.DataObject) -> None:
    source, lines = data.draw(markdown())
    k = data.draw(st.integers(1, 4))
    owner = data.draw(st.lists(st.integers(-1, k - 1), min_size=len(lines), max_size=len(lines)))
    parts = tuple(split.Part(f"P{i}", tuple(n for n, o in enumerate(owner, 1) if o == i)) for i in range(k))
    partition = split.Partition(
        tuple(p for p in parts if p.lines), tuple(n for n, o in enumerate(owner, 1) if o == -1)
    )
    index = data.draw(st.booleans())
    changes = split.build(source, partition, index, "Long note")
    split.verify(source, partition, changes, index)
    seen: list[str] = []
    by_path = {
        c.path: (c.after or b"").decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n") for c in changes
    }
    for p in partition.parts:
        text = by_path[f"Folder/{p.title}.md"]
        assert text.endswith("From [[Long note]]\n")
        seen += split.note_lines(text)[: len(p.lines)]
    kept = [lines[n - 1] for n in partition.kept]
    if index:
        assert split.note_lines(by_path["Folder/Long note.md"])[: len(kept)] == kept
        assert all(f"- [[{p.title}]]" in by_path["Folder/Long note.md"] for p in partition.parts)
    else:
        assert "Folder/Long note.md" not in by_path, "--keep-original leaves it as it is"
    assert Counter(seen + kept) == Counter(lines), "every line once: none lost, none doubled"
    assert all(
        c.after is not None and (b"\r\n" in c.after) == (b"\r\n" in source.raw)
        for c in changes
        if len(lines) > 1
    )


# ---- the command on real files with the scripted model --------------------------------------------

NOTE = (
    "---\ntags: [study]\n---\n# Caching\n\nIntro line.\n\n## TTL\n\nA value expires after its TTL.\n"
    "Short TTLs cost more requests.\n\n## Invalidation\n\nPurge on write.\n```\npurge(key)\n```\n"
)
PLAN = {
    "notes": [
        {"title": "Cache TTL", "ranges": [{"first": 8, "last": 11}], "links": ["Cache invalidation"]},
        {"title": "Cache invalidation", "ranges": [{"first": 13, "last": 18}], "links": []},
    ]
}


def model_args(vault: Path, server: ScriptedChatServer) -> list[str]:
    s = {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "split-test",
         "llm.endpoint": server.url + "/v1", "llm.max_retries": "0", "llm.read_timeout_s": "5"}  # fmt: skip
    return ["--vault", str(vault), *[a for k, v in s.items() for a in ("--set", f"{k}={v}")]]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {"Study/Caching.md": NOTE, "Other.md": "# Other\n"})


def test_split_index_applies_as_one_group_and_undo_restores_every_byte(vault: Path) -> None:
    original = snapshot(vault)
    with ScriptedChatServer(reply=json.dumps(PLAN)) as server:
        done = run_cli(
            ["write", "split", "Study/Caching.md", "--index", "--yes", "--json", *model_args(vault, server)]
        )
        prompt = server.chats()[0]["messages"][1]["content"]
    assert done.exit_code == 0, done.output
    assert "10| A value expires after its TTL." in prompt, "the model sees numbered lines"
    data = json.loads(done.stdout)
    check_shape("write_split", data)
    assert [n["path"] for n in data["notes"]] == ["Study/Cache TTL.md", "Study/Cache invalidation.md"]
    assert data["notes"][0]["lines"] == [[8, 12]], "the blank line after a note's lines goes with it"
    assert data["kept"] == [[1, 7]] and data["applied"]["state"] == "applied"
    assert (vault / "Study/Cache TTL.md").read_text() == (
        "## TTL\n\nA value expires after its TTL.\nShort TTLs cost more requests.\n\n"
        "From [[Caching]]; see also [[Cache invalidation]]\n"
    )
    assert (
        (vault / "Study/Cache invalidation.md")
        .read_text()
        .startswith("## Invalidation\n\nPurge on write.\n```\n")
    )
    assert (vault / "Study/Caching.md").read_text() == (
        "---\ntags: [study]\n---\n# Caching\n\nIntro line.\n\n- [[Cache TTL]]\n- [[Cache invalidation]]\n"
    )
    group = data["plan"]["op_id"]
    listed = json.loads(run_cli(["history", "--json", "--vault", str(vault)]).stdout)
    assert [(e["op_id"], e["state"], e["kind"]) for e in listed] == [(group, "applied", "group")]
    undone = run_cli(["undo", group, "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert snapshot(vault) == original, "every byte back, only the new notes removed"


def test_split_keep_original_creates_notes_and_leaves_the_original(vault: Path) -> None:
    with ScriptedChatServer(reply=json.dumps(PLAN)) as server:
        done = run_cli(["write", "split", "Study/Caching.md", "--yes", "--json", *model_args(vault, server)])
    assert done.exit_code == 0, done.output
    assert (vault / "Study/Caching.md").read_text() == NOTE
    assert json.loads(done.stdout)["plan"]["paths"] == ["Study/Cache TTL.md", "Study/Cache invalidation.md"]


@pytest.mark.parametrize(
    ("plan", "said"),
    [
        ({"notes": [{"title": "A", "ranges": [{"first": 8, "last": 12}], "links": []},
                    {"title": "B", "ranges": [{"first": 12, "last": 14}], "links": []}]}, "line 12 into both"),
        ({"notes": [{"title": "A", "ranges": [{"first": 15, "last": 17}], "links": []}]}, "cuts the code block"),
        ({"notes": [{"title": "Other", "ranges": [{"first": 8, "last": 9}], "links": []}]}, "already has a note"),
        ({"notes": [{"title": "a/b", "ranges": [{"first": 8, "last": 9}], "links": []}]}, "not a valid note name"),
        ({"notes": [{"title": "A", "ranges": [{"first": 8, "last": 99}], "links": []}]}, "outside the note"),
    ],
    ids=["doubled", "code-block", "taken", "bad-name", "outside"],
)  # fmt: skip
def test_a_plan_that_would_lose_double_or_clash_is_refused_before_anything_is_shown(
    vault: Path, plan: dict[str, Any], said: str
) -> None:
    original = snapshot(vault)
    with ScriptedChatServer(reply=json.dumps(plan)) as server:
        done = run_cli(["write", "split", "Study/Caching.md", "--index", "--yes", *model_args(vault, server)])
    assert done.exit_code != 0
    assert said in " ".join(done.output.split()), done.output
    assert "Traceback" not in done.output and "+++" not in done.output, "no diff shown"
    assert snapshot(vault) == original
    assert json.loads(run_cli(["history", "--json", "--vault", str(vault)]).stdout) == []


def test_a_remote_model_gets_nothing_before_consent(vault: Path) -> None:
    with ToolModel(PLAN) as server:
        remote = llm_settings(server, remote=True)
        app = App.open(vault, remote)
        with pytest.raises(ConsentRequired) as caught:
            vaultlens.write_split(app, "Study/Caching.md", "index", consent=False)
        assert server.chats() == [] and "Study/Caching.md" in caught.value.proposal.what
        refused = run_cli(["write", "split", "Study/Caching.md", *cli_args(vault, remote)])
        assert refused.exit_code == 7 and "Nothing was sent" in refused.stderr and server.chats() == []
        planned = vaultlens.write_split(app, "Study/Caching.md", "index", consent=True)
        assert len(server.chats()) == 1 and planned.plan.entry.state == "planned"
    assert (vault / "Study/Caching.md").read_text() == NOTE, "planned, not written"
