"""Quality metrics and the `vaultlens eval` commands on small labelled data made here."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from vaultlens.services.inspecting.evaluation import ndcg_at, recall_at, rr_at
from vl_support import check_shape, run_cli, write_vault


def test_metrics_on_hand_computed_rankings() -> None:
    gains = {"a": 2.0, "b": 1.0}
    assert ndcg_at(["a", "b", "x"], gains, 10) == pytest.approx(1.0)
    swapped = (1 / math.log2(2) + 2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at(["b", "a"], gains, 10) == pytest.approx(swapped)
    assert ndcg_at(["x", "y"], gains, 10) == 0.0
    assert recall_at(["a", "x", "b"], ["a", "b"], 2) == 0.5
    assert rr_at(["x", "y", "b"], ["a", "b"]) == pytest.approx(1 / 3)
    assert rr_at(["x", "y", "b"], ["a", "b"], k=2) == 0.0


DOCS = {
    "d1": ("Sourdough starter", "Feed the starter with rye flour every morning and keep it warm."),
    "d2": ("Night trains", "The sleeper train to Vienna leaves at nine and arrives at dawn."),
    "d3": ("Browser caching", "Cache-Control max-age lets the browser reuse scripts without a request."),
}


def test_eval_beir_through_the_cli(tmp_path: Path, use_provider: object) -> None:
    beir = tmp_path / "tiny"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n" for k, (t, x) in DOCS.items()),
        encoding="utf-8",
    )
    queries = {"q1": "how do I keep my rye starter alive", "q2": "overnight rail journey"}
    (beir / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()), encoding="utf-8"
    )
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n", encoding="utf-8"
    )

    result = run_cli(["eval", "beir", str(beir), "--json"])
    assert result.exit_code == 0, result.output
    (score,) = json.loads(result.stdout)
    assert score["group"] == "tiny" and score["n"] == 2
    assert score["metrics"]["ndcg@10"] == pytest.approx(1.0)  # both answers ranked first
    assert score["metrics"]["recall@100"] == pytest.approx(1.0)
    assert score["metrics"]["ndcg@10 h1"] == score["metrics"]["ndcg@10 h2"] == pytest.approx(1.0)


def test_eval_queries_groups_by_direction_language_and_half(tmp_path: Path, use_provider: object) -> None:
    root = tmp_path / "data"
    write_vault(
        root / "vaults" / "mini",
        {
            "хлеб.md": "# Закваска\n\nЗакваску кормят ржаной мукой каждое утро и держат в тепле.\n",
            "поезд.md": "# Ночной поезд\n\nСпальный вагон до Вены уходит в девять вечера.\n",
        },
    )
    rows = [
        {"id": "1", "vault": "vaults/mini", "lang": "ru", "query": "чем кормить закваску",
         "relevant": ["хлеб.md"], "cross_lingual": False},
        {"id": "2", "vault": "vaults/mini", "lang": "en", "query": "overnight sleeper train to Vienna",
         "relevant": ["поезд.md"], "cross_lingual": True},
    ]  # fmt: skip
    qfile = root / "eval" / "queries.jsonl"
    qfile.parent.mkdir(parents=True)
    qfile.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    result = run_cli(["eval", "queries", str(qfile), "--json"])
    assert result.exit_code == 0, result.output
    check_shape("eval_queries", json.loads(result.stdout))
    groups = {g["group"]: g for g in json.loads(result.stdout)}
    assert set(groups) == {
        "all", "lang en", "lang ru", "mini en→ru", "mini ru→ru", "en→ru", "ru→ru", "cross-lingual",
        "half 1", "half 2",
    }  # fmt: skip
    assert groups["all"]["n"] == 2 and groups["half 1"]["n"] == groups["half 2"]["n"] == 1
    assert groups["mini en→ru"]["metrics"]["hit@5"] == 1.0
    assert groups["mini ru→ru"]["metrics"]["mrr"] == 1.0
    # each group also reads hit@5 on either half of the file (line 1, 3, ... and line 2, 4, ...)
    assert groups["all"]["metrics"]["hit@5 h1"] == groups["all"]["metrics"]["hit@5 h2"] == 1.0
    assert "hit@5 h2" not in groups["mini ru→ru"]["metrics"]  # its one query is on line 1
    assert "hit@5 h1" not in groups["half 2"]["metrics"] and "position" not in groups["all"]["metrics"]

    text = run_cli(["eval", "queries", str(qfile)])  # the text table: one line a group, never wrapped
    (line,) = [x for x in text.stdout.splitlines() if x.startswith("all ")]
    assert "hit@5 1.000" in line and "hit@5 h1 1.000" in line and "hit@5 h2 1.000" in line


def test_eval_queries_reads_one_split_and_says_which_lines_lack_one(
    tmp_path: Path, use_provider: object
) -> None:
    root = tmp_path / "data"
    write_vault(
        root / "vaults" / "mini",
        {
            "bread.md": "# Rye\n\nFeed the rye starter every morning and keep it warm.\n",
            "train.md": "# Night trains\n\nThe sleeper train to Vienna leaves at nine.\n",
            "cache.md": "# Browser caching\n\nCache-Control max-age lets the browser reuse scripts.\n",
        },
    )
    rows = [
        {"vault": "vaults/mini", "lang": "en", "query": "feeding the rye starter", "relevant": ["bread.md"],
         "split": "tune"},
        {"vault": "vaults/mini", "lang": "en", "query": "sleeper to Vienna", "relevant": ["train.md"],
         "split": "held"},
        {"vault": "vaults/mini", "lang": "en", "query": "browser reuse scripts", "relevant": ["cache.md"],
         "split": "held"},
    ]  # fmt: skip
    qfile = root / "eval" / "queries.jsonl"
    qfile.parent.mkdir(parents=True)
    qfile.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    held = run_cli(["eval", "queries", str(qfile), "--split", "held", "--json"])
    assert held.exit_code == 0, held.output
    groups = {g["group"]: g for g in json.loads(held.stdout)}
    assert groups["all"]["n"] == 2 and groups["mini en→en"]["n"] == 2  # the tune line is left out
    assert groups["all"]["metrics"]["hit@3"] == 1.0
    tune = run_cli(["eval", "queries", str(qfile), "--split", "tune", "--json"])
    assert {g["group"]: g["n"] for g in json.loads(tune.stdout)}["all"] == 1

    wrong = run_cli(["eval", "queries", str(qfile), "--split", "test"])
    assert wrong.exit_code == 2 and _said("Unknown split 'test'", wrong.stderr)
    del rows[1]["split"]
    qfile.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    unmarked = run_cli(["eval", "queries", str(qfile), "--split", "held"])
    assert unmarked.exit_code == 2 and _said('queries.jsonl:2: no "split" of tune, held', unmarked.stderr)
    assert "Traceback" not in unmarked.output


def test_a_query_direction_is_named_query_language_to_note_language() -> None:
    from vaultlens.services.inspecting.evaluation import note_language, vault_label

    assert note_language({"lang": "ru", "cross_lingual": True}) == "en"  # a Russian query, English notes
    assert note_language({"lang": "en", "cross_lingual": True}) == "ru"
    assert note_language({"lang": "en", "cross_lingual": False}) == "en"
    assert note_language({"lang": "ru", "note_lang": "ru"}) == "ru"
    assert note_language({"lang": "ru", "cross_lingual": True, "vault": "vaults/docs/en"}) == "en"
    assert note_language({"lang": "en", "cross_lingual": True, "vault": "vaults/docs/ru"}) == "ru"
    assert (
        vault_label("vaults/fastapi-docs/ru") == "fastapi-docs" and vault_label("vaults/ru-wiki") == "ru-wiki"
    )
    assert vault_label("personal/vault") == "personal" and vault_label("../examples/vault") == "examples"


def test_eval_on_a_folder_that_is_not_beir_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli(["eval", "beir", str(tmp_path)])
    assert result.exit_code != 0
    assert "not a BEIR folder" in " ".join(result.stderr.split())  # Rich may wrap the line
    assert "Traceback" not in result.output


def _said(text: str, output: str) -> bool:
    """``text`` in ``output`` whatever Rich's line wrapping did to either (it breaks long paths)."""
    return re.sub(r"\s", "", text) in re.sub(r"\s", "", output)


def _beir(root: Path, corpus: Sequence[Mapping[str, object]], qrels: str = "q1\td1\t1\n") -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "rye starter"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    return root


@pytest.mark.parametrize("doc_id", ["<victim>", "sub/x", "<absolute>", ".hidden", "a\\b"])
def test_a_beir_document_id_can_never_name_a_file_outside_the_eval_folder(
    tmp_path: Path, doc_id: str
) -> None:
    from vaultlens.config import paths

    victim = tmp_path / "victim.md"
    victim.write_text("my own note\n", encoding="utf-8")
    if doc_id == "<victim>":  # the relative path from the folder the corpus is written to
        doc_id = os.path.relpath(victim.with_suffix(""), paths.home() / "eval" / "evil")
    elif doc_id == "<absolute>":
        doc_id = str(tmp_path / "absolute")
    beir = _beir(tmp_path / "evil", [{"_id": "d1", "text": "fine"}, {"_id": doc_id, "text": "OVERWRITTEN"}])

    result = run_cli(["eval", "beir", str(beir)])
    assert result.exit_code == 2, result.output
    assert _said("corpus.jsonl:2:", result.stderr) and _said("cannot be a file name", result.stderr)
    assert victim.read_text(encoding="utf-8") == "my own note\n"
    assert not (tmp_path / "absolute.md").exists()
    eval_home = paths.home() / "eval"
    assert not eval_home.exists() or not any(eval_home.rglob("*.md"))  # checked before the first write


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "queries.jsonl:1: not valid JSON"),
        ('["a list"]', "queries.jsonl:1: expected a JSON object"),
        ('{"vault": "vaults/mini", "lang": "ru", "query": "q"}', '"relevant" must be a non-empty list'),
        ('{"vault": "vaults/mini", "lang": "ru", "query": "q", "relevant": "x.md"}', '"relevant" must be'),
        ('{"vault": "vaults/mini", "query": "q", "relevant": ["x.md"]}', '"lang" must be a non-empty string'),
        ('{"vault": "vaults/nope", "lang": "ru", "query": "q", "relevant": ["x.md"]}', "is not a folder"),
    ],
)
def test_a_malformed_queries_file_is_a_clear_error_naming_the_line(
    tmp_path: Path, line: str, message: str
) -> None:
    write_vault(tmp_path / "data" / "vaults" / "mini", {"x.md": "# X\n\nText.\n"})
    qfile = tmp_path / "data" / "eval" / "queries.jsonl"
    qfile.parent.mkdir(parents=True)
    qfile.write_text(line + "\n", encoding="utf-8")
    result = run_cli(["eval", "queries", str(qfile)])
    assert result.exit_code == 2, result.output
    assert _said(message, result.stderr)
    assert "Traceback" not in result.output


def test_a_queries_file_that_is_empty_or_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text("\n\n", encoding="utf-8")
    result = run_cli(["eval", "queries", str(qfile)])
    assert result.exit_code == 2 and "holds no queries" in result.stderr
    qfile.write_bytes(b'{"query": "\xff\xfe"}\n')
    result = run_cli(["eval", "queries", str(qfile)])
    assert result.exit_code == 2 and _said("queries.jsonl:1: not UTF-8 text (byte 0xff", result.stderr)
    assert "Traceback" not in result.output


def test_an_empty_beir_document_is_an_empty_note_and_a_text_that_is_not_a_string_an_error(
    tmp_path: Path,
) -> None:
    corpus = [{"_id": "d1", "title": "Rye", "text": "rye starter"}, {"_id": "d2", "title": "", "text": ""}]
    result = run_cli(["eval", "beir", str(_beir(tmp_path / "b1", corpus)), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["metrics"]["ndcg@10"] == pytest.approx(1.0)
    broken: list[dict[str, object]] = [{"_id": "d1", "text": "rye starter"}, {"_id": "d2", "text": 7}]
    result = run_cli(["eval", "beir", str(_beir(tmp_path / "b2", broken))])
    assert result.exit_code == 2 and _said('corpus.jsonl:2: "text" must be a string, got 7.', result.stderr)


def test_malformed_beir_judgements_are_a_clear_error(tmp_path: Path) -> None:
    beir = _beir(tmp_path / "b1", [{"_id": "d1", "text": "rye"}], qrels="q1\td1\tx\n")
    result = run_cli(["eval", "beir", str(beir)])
    assert result.exit_code == 2 and _said("test.tsv:2: expected tab-separated", result.stderr)
    beir = _beir(tmp_path / "b2", [{"_id": "d1", "text": "rye"}], qrels="q9\td1\t1\n")
    result = run_cli(["eval", "beir", str(beir)])
    assert result.exit_code == 2 and _said("are not in", result.stderr) and _said("'q9'", result.stderr)


def test_cli_text_does_not_wrap_whatever_the_path_length(tmp_path: Path) -> None:
    """The fresh-machine failure: the path in the message pushed the asserted phrase across
    column 80, where Rich broke the line. Tests read CLI text from a console wider than any path."""
    folder = tmp_path.joinpath(*(c * 200 for c in "defgh"))
    folder.mkdir(parents=True)
    qfile = folder / "queries.jsonl"
    qfile.write_text("\n\n", encoding="utf-8")
    result = run_cli(["eval", "queries", str(qfile)])
    assert result.exit_code == 2
    assert f"error: {qfile} holds no queries." in result.stderr
