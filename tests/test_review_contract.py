"""The refs.v2 validator: a valid answer passes, and each rejection has its own diagnostic code.

The catalog is built from real notes on disk; answers are crafted the way a model would get
them wrong (invented ids, the other side's fragment, claim and fragment ids swapped, stale notes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.services.changing.review.catalog import Catalog, Side, build_catalog
from vaultlens.services.changing.review.contract import SCHEMA_ID, response_schema, validate_response
from vl_support import write_vault

A = "# Cache lifetime\n\nA cached value expires after its TTL.\n\nExpired values are evicted lazily.\n"
B = "# Cache lifetime\n\nEvery entry lives five minutes.\n\n```\nttl = 300\n```\n"


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    vault = write_vault(
        tmp_path / "v", {"Study/Caching/Cache lifetime.md": A, "Study/Systems/Cache lifetime.md": B}
    )
    return build_catalog(
        vault, "Study/Caching/Cache lifetime.md", "Study/Systems/Cache lifetime.md", MarkdownChunker()
    )


def answer(catalog: Catalog, **changes: Any) -> dict[str, Any]:
    a, b = catalog.side("A"), catalog.side("B")
    data: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "relation": "partial_overlap",
        "claims": [
            {
                "id": "c1",
                "kind": "shared",
                "text": "Both set a lifetime.",
                "evidenceA": a[1].id,
                "evidenceB": b[1].id,
            },
            {
                "id": "c2",
                "kind": "a_only",
                "text": "A evicts lazily.",
                "evidenceA": a[2].id,
                "evidenceB": None,
            },
        ],
        "explanation": {"text": "Same topic, different detail.", "evidence": ["c1", "c2"]},
        "recommendation": {"action": "add_link", "reason": "Keep both, link them.", "evidence": ["c1"]},
        "limitations": ["Only these two notes were read."],
    }
    data.update(changes)
    return data


def codes(catalog: Catalog, data: Any, hashes: Mapping[Side, str | None] | None = None) -> list[str]:
    raw = data if isinstance(data, str) else json.dumps(data)
    result = validate_response(raw, catalog, hashes or catalog.hashes())
    return [d.code for d in result.diagnostics]


def test_the_catalog_numbers_blocks_per_side_under_a_random_nonce(tmp_path: Path, catalog: Catalog) -> None:
    ids = [f.id for f in catalog.fragments]
    assert ids == [f"{catalog.nonce}:A:{i}" for i in range(3)] + [f"{catalog.nonce}:B:{i}" for i in range(3)]
    assert catalog.side("B")[2].kind == "code" and catalog.side("B")[2].text == "```\nttl = 300\n```"
    assert (catalog.side("A")[1].start_line, catalog.side("A")[1].end_line) == (3, 3)
    again = build_catalog(tmp_path / "v", catalog.paths["A"], catalog.paths["B"], MarkdownChunker())
    assert again.nonce != catalog.nonce


def test_a_valid_answer_passes_and_quotes_come_from_the_catalog(catalog: Catalog) -> None:
    data = answer(catalog)
    data["claims"][0]["text"] = (
        "Both say values live forever."  # the claim text is the model's, quotes are not
    )
    result = validate_response(json.dumps(data), catalog, catalog.hashes())
    assert result.ok, result.diagnostics
    first = result.claims[0]
    assert first.evidence_a is not None and first.evidence_a.text == "A cached value expires after its TTL."
    assert first.evidence_b is not None and first.evidence_b.text == "Every entry lives five minutes."


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda c, d: "{not json", "invalid_json"),
        (lambda c, d: {**d, "schema": "veynrel.relationship.refs.v1"}, "wrong_schema"),
        (
            lambda c, d: {**d, "recommendation": {**d["recommendation"], "action": "delete_note"}},
            "schema_violation",
        ),
        (lambda c, d: {**d, "extra": 1}, "schema_violation"),
        (lambda c, d: _claim(d, evidenceA=f"{c.nonce}:A:99"), "reference_unknown"),
        (lambda c, d: _claim(d, evidenceA="deadbeef:A:0"), "reference_unknown"),
        (lambda c, d: _claim(d, evidenceA=c.side("B")[0].id), "reference_side_mismatch"),
        (lambda c, d: _claim(d, evidenceB="c2"), "claim_as_fragment"),
        (
            lambda c, d: {**d, "explanation": {"text": "x", "evidence": [c.side("A")[0].id]}},
            "fragment_as_claim",
        ),
        (lambda c, d: {**d, "recommendation": {**d["recommendation"], "evidence": ["c9"]}}, "claim_unknown"),
        (lambda c, d: _claim(d, id="c2"), "duplicate_claim_id"),
        (lambda c, d: _claim(d, evidenceA=None, evidenceB=None), "claim_without_evidence"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_rejection_has_its_code(catalog: Catalog, mutate: Any, code: str) -> None:
    assert code in codes(catalog, mutate(catalog, answer(catalog)))


def _claim(data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    claims = [dict(c) for c in data["claims"]]
    claims[0].update(changes)
    return {**data, "claims": claims}


def test_a_note_changed_since_the_catalog_is_source_changed(catalog: Catalog) -> None:
    stale: dict[Side, str | None] = {**catalog.hashes(), "B": "0" * 64}
    assert codes(catalog, answer(catalog), stale) == ["source_changed"]


def test_the_requested_json_schema_is_the_contract(catalog: Catalog) -> None:
    schema = response_schema()
    assert schema["properties"]["schema"]["const"] == SCHEMA_ID
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {
        "schema",
        "relation",
        "claims",
        "explanation",
        "recommendation",
        "limitations",
    }
