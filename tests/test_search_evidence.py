"""What a match is worth as evidence (services/finding/evidence.py), with the real model on small vaults on disk:
a lexical match across scripts counts nothing, everyday words cover nothing of a query, front matter
is no answer unless a property matched, a hub ranks below the note it points to."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultlens.config.settings import SearchSettings
from vaultlens.index.lexical import query_evidence, terms
from vaultlens.services.finding.search import NoteHit, rank_notes, score_chunks
from vl_support import opened_store, run_index, write_vault

NOTES = {
    # the answer to the English query below, in other words than the query's
    "Deploys.md": "# Shipping a new version safely\n\nFirst send the new build to five servers out of a "
    "hundred and watch the error graphs for an hour; only then roll it out everywhere. If errors rise, "
    "switch the few servers back to the old build.\n",
    # a Russian note about something else that holds the query's English words in passing
    "Дача.md": "# Дача\n\nВ субботу поливали огурцы и чинили забор. Сосед, который работает в айти, весь "
    "вечер рассказывал про canary release percentage, я ничего не понял. Потом пили чай с вареньем "
    "из крыжовника, смотрели на закат над рекой и обсуждали, когда сажать чеснок и как укрыть розы.\n",
    # front matter whose aliases say what the note is about; the body answers in Russian
    "Хлеб.md": "---\ntags: [кулинария]\naliases: [Sourdough starter, Levain]\n---\n\n# Хлеб\n\n"
    "## Подкормка\n\nКормлю закваску раз в день: 50 г ржаной муки и 50 г воды, держу в тепле, пока не "
    "удвоится. Перед выпечкой подкармливаю дважды.\n\n## Выпечка\n\nТесто расстаивается ночь в "
    "холодильнике, печь в чугунной кастрюле под крышкой 20 минут, потом без крышки.\n",
    # a hub: a list of links, each with the words of the note it points to
    "Home.md": "# Home\n\n- [[Tomatoes]]: watering tomato plants deeply twice a week, at the roots\n"
    "- [[Deploys]]: shipping a new version safely\n- [[Хлеб]]: хлеб на закваске\n- [[Дача]]: дача\n",
    "Tomatoes.md": "# Tomatoes\n\nWater the plants deeply at the base two times a week, early in the morning, "
    "so the leaves stay dry and the roots grow down.\n",
    "Git.md": "# Git\n\nTo keep the same branch after a mistake, run git reset --soft and commit again.\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, use_provider) -> Path:
    root = tmp_path_factory.mktemp("evidence")
    vault = write_vault(root / "vault", NOTES)
    run_index(vault, root / "index", use_provider)
    return root / "index"


def search(index: Path, provider, query: str) -> list[NoteHit]:
    with opened_store(index) as store:
        return rank_notes(store, provider, query, SearchSettings(), 10, 3)


def test_a_lexical_match_across_scripts_counts_nothing(index: Path, use_provider) -> None:
    query = "canary release percentage"  # every word of it is in the Russian note, in passing
    with opened_store(index) as store:
        found = store.chunk_paths(store.lexical_chunks(terms(query), 10))
        assert "Дача.md" in found.values()  # the full-text index does match it
        scores = score_chunks(store, use_provider.embed([query])[0], query, SearchSettings())
    by_note = {s.path: s.lexical for s in scores.values() if s.path == "Дача.md"}
    assert by_note == {"Дача.md": 0.0}  # but an English query's words in a Russian section are no evidence
    # the same words in a section of the query's script do count
    query = "git reset soft"
    with opened_store(index) as store:
        scores = score_chunks(store, use_provider.embed([query])[0], query, SearchSettings())
    assert max(s.lexical for s in scores.values() if s.path == "Git.md") > 0.0


def test_everyday_words_cover_nothing_of_a_query() -> None:
    terms, share = query_evidence("how do I keep the browser from downloading the same scripts again")
    # "same" and "again" are stop words; "keep" is an everyday word: still part of the query, never matched
    assert terms == ["browser", "download", "script"]
    assert share == pytest.approx(3 / 4)
    terms, share = query_evidence("как правильно нарезать лук")
    assert "правильн" not in terms and "лук" in terms


def test_front_matter_without_a_matched_property_is_not_the_best_section(index: Path, use_provider) -> None:
    hits = search(index, use_provider, "levain")
    bread = next(h for h in hits if h.path == "Хлеб.md")
    # "levain" is a property: the front matter may be shown
    assert bread.sections[0].heading_path == ("front matter",)
    hits = search(index, use_provider, "wild yeast culture for bread")
    bread = next(h for h in hits if h.path == "Хлеб.md")
    assert bread.sections[0].heading_path != ("front matter",), bread.sections


def test_a_hub_ranks_below_the_note_it_points_to(index: Path, use_provider) -> None:
    hits = search(index, use_provider, "watering tomato plants deeply twice a week")
    paths = [h.path for h in hits]
    assert paths.index("Tomatoes.md") < paths.index("Home.md"), paths


def test_candidates_in_one_language_keep_the_best_note_as_yardstick() -> None:
    """A documentation vault's candidates are in one language (a few English code sections aside):
    the best partial match is the yardstick. A bilingual vault's are in both: coverage is."""
    from vaultlens.chunking.scripts import ScriptMix
    from vaultlens.services.finding.evidence import SectionTraits, bilingual

    def section(language: str | None) -> SectionTraits:
        return SectionTraits(language, ScriptMix(), False, ())

    docs = [section("ru")] * 9 + [section("en")] + [section(None)] * 5  # one English code section in ten
    personal = [section("ru")] * 6 + [section("en")] * 4
    assert not bilingual(docs)
    assert bilingual(personal)
    assert not bilingual([section(None)] * 3)


def lexical_of(vault_notes: dict[str, str], root: Path, provider, query: str) -> dict[str, float]:
    """Each note's lexical score (0 = no evidence) for ``query`` on a vault of ``vault_notes`` indexed here."""
    vault = write_vault(root / "vault", vault_notes)
    run_index(vault, root / "index", provider)
    with opened_store(root / "index") as store:
        scores = score_chunks(store, provider.embed([query])[0], query, SearchSettings())
    out: dict[str, float] = {}
    for s in scores.values():
        out[s.path] = max(out.get(s.path, 0.0), s.lexical)
    return out


def test_everyday_words_are_evidence_in_a_vault_of_one_language(tmp_path: Path, use_provider) -> None:
    """In a vault written in one language every candidate can match an everyday word alike ("body",
    "set", "type" are a documentation vault's subject), so BM25 weighs it there; only a vault in both
    languages leaves it out, where it pulls notes of the query's language over the answer."""
    english = {
        "Request body.md": "# Reading the JSON body\n\nThe body of a POST request is read once and checked "
        "against the model; a body over the size limit is refused with status 413.\n",
        "Query strings.md": "# Query strings\n\nParsing of the query string happens before the handler "
        "runs; repeated keys become a list.\n",
    }
    found = lexical_of(english, tmp_path / "en", use_provider, "body parsing")
    assert found["Request body.md"] > 0.0, found
    # the same notes beside Russian ones: "body" is an everyday word again, "parsing" alone is matched
    both = {**english, **{k: v for k, v in NOTES.items() if k in ("Дача.md", "Хлеб.md")}}
    found = lexical_of(both, tmp_path / "both", use_provider, "body parsing")
    assert found.get("Request body.md", 0.0) == 0.0, found


def test_english_identifiers_in_a_russian_vault_are_evidence(tmp_path: Path, use_provider) -> None:
    """Candidates in one language (a Russian documentation vault, its identifiers in English under 15%
    of its letters) keep an English query's matches: the identifier is the page's subject, not a word
    in passing, so the script rule applies only among candidates in both languages."""
    russian = {
        "Сжатие.md": "# Сжатие ответов\n\nЧтобы сервер сжимал большие ответы, подключите промежуточный слой "
        "GZipMiddleware: он сжимает тело ответа, если клиент прислал заголовок о поддержке сжатия. Маленькие "
        "ответы сжимать незачем, для них задаётся минимальный размер в байтах.\n",
        "Дача.md": NOTES["Дача.md"].replace("canary release percentage", "что-то про серверы"),
        "Хлеб.md": NOTES["Хлеб.md"],
    }
    found = lexical_of(russian, tmp_path, use_provider, "GZipMiddleware")
    assert found["Сжатие.md"] > 0.0, found


def test_front_matter_is_in_its_notes_language_for_the_tier() -> None:
    """The quality tier's weight across languages applies to a Russian note's front matter for an English
    query (its aliases are that note's names), not to an English note's."""
    from vaultlens.chunking.scripts import ScriptMix
    from vaultlens.services.finding.evidence import SectionTraits, crosses, note_languages

    front = SectionTraits(None, ScriptMix(), True, ())
    ru, en = (
        SectionTraits("ru", ScriptMix(90, 10), False, ()),
        SectionTraits("en", ScriptMix(0, 90), False, ()),
    )
    langs = note_languages([front, ru, ru, front, en], ["a.md", "a.md", "a.md", "b.md", "b.md"])
    assert langs == {"a.md": "ru", "b.md": "en"}
    assert crosses("en", front, langs["a.md"]) and not crosses("en", front, langs["b.md"])
    assert crosses("en", ru) and not crosses("ru", ru) and not crosses(None, ru)
    assert not crosses("en", front)  # a note whose language its candidates do not tell
