"""Quality metrics and the `vaultlens eval` commands on small labelled data made here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vaultlens.services.evaluation import ndcg_at, recall_at, rr_at
from vl_support import run_cli, write_vault


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


def test_a_query_direction_is_named_query_language_to_note_language() -> None:
    from vaultlens.services.evaluation import note_language, vault_label

    assert note_language({"lang": "ru", "cross_lingual": True}) == "en"  # a Russian query, English notes
    assert note_language({"lang": "en", "cross_lingual": True}) == "ru"
    assert note_language({"lang": "en", "cross_lingual": False}) == "en"
    assert note_language({"lang": "ru", "note_lang": "ru"}) == "ru"
    assert note_language({"lang": "ru", "cross_lingual": True, "vault": "vaults/docs/en"}) == "en"
    assert note_language({"lang": "en", "cross_lingual": True, "vault": "vaults/docs/ru"}) == "ru"
    assert (
        vault_label("vaults/fastapi-docs/ru") == "fastapi-docs" and vault_label("vaults/ru-wiki") == "ru-wiki"
    )


def test_eval_on_a_folder_that_is_not_beir_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli(["eval", "beir", str(tmp_path)])
    assert result.exit_code != 0
    assert "not a BEIR folder" in " ".join(result.stderr.split())  # Rich may wrap the line
    assert "Traceback" not in result.output
