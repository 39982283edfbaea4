"""Shared passages past the bundled model: text copied between same-language notes that otherwise differ.

A vault indexed with the real bundled model: deploy steps copied verbatim into three service notes and,
with small edits, into a fourth; a paragraph on storing bread copied into six Russian recipe notes (more
notes than the boilerplate floor); a long template paragraph in ten daily notes; two notes that share
only their front matter and a short closing phrase.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vaultlens.embedding.local import LocalUSEProvider
from vaultlens.index.store import Store
from vaultlens.services.finding.duplicates import coverage
from vaultlens.services.finding.duplicates import report as dups
from vl_support import opened_store, run_index, write_vault

DEPLOY = """## Deploy

The service runs from a Docker Compose file on the home server. To roll out a new version:

1. Log in with `ssh deploy@homeserver` and change into the service folder under `/srv`.
2. Pull the latest commit with `git pull --ff-only`; stop if git reports local changes.
3. Rebuild and restart the containers in the background:

   ```bash
   docker compose pull
   docker compose up --detach --remove-orphans
   ```

4. Follow the logs for a minute with `docker compose logs --follow` and open the site in a browser.
"""
# the same steps copied with small edits: a flag, a reworded step, another log command
DEPLOY_EDITED = (
    DEPLOY.replace("`git pull --ff-only`", "`git pull --rebase`")
    .replace("open the site in a browser", "send yourself a test message")
    .replace("docker compose logs --follow", "docker compose logs --follow mail")
)
SERVICES = {
    "blog": (
        "The blog is a static site built by Hugo from the `content/` folder; the container only serves the"
        " generated files with Caddy, which also renews the TLS certificate on its own.",
        "## Writing\n\nDrafts live in `content/drafts` and are never published. Images go next to the post"
        " in a page bundle, resized to 1600 pixels wide before they are committed.",
    ),
    "wiki": (
        "The family wiki runs DokuWiki with its plain text pages on a bind mount, so a backup is a copy of"
        " the `data/pages` folder and nothing needs to be exported from a database.",
        "## Accounts\n\nEveryone in the family has a login; the children's accounts cannot delete pages. The"
        " access list is in `conf/acl.auth.php` and is edited by hand, not through the web admin.",
    ),
    "photos": (
        "Photos are served by Immich, which indexes the phone uploads, recognises faces and keeps its"
        " thumbnails in a PostgreSQL database that must be dumped before every upgrade.",
        "## Storage\n\nOriginals stay on the mirrored disks and are never edited in place. The machine"
        " learning container is optional and can be stopped when the server needs its memory.",
    ),
}
MAIL = (
    "# Mail relay\n\nOutgoing mail from the home server goes through a Postfix relay that signs messages"
    " with DKIM and forwards them to the provider's smarthost on port 587.\n\n"
    + DEPLOY_EDITED
    + "\n## Deliverability\n\nSPF, DKIM and DMARC records are in the DNS zone file. Check a new setup with"
    " an external tester; a score under 9 usually means the reverse DNS entry is missing.\n"
)
KEEP = """## Как хранить

Хлеб храним в льняном мешке при комнатной температуре, но не в холодильнике: там мякиш черствеет быстрее
всего. То, что не съедим за два дня, режем ломтями и замораживаем, а размораживаем прямо в тостере, без
разогрева в микроволновке, чтобы корка осталась хрустящей.
"""
BREADS = {
    "бородинский": "Бородинский замешиваем на ржаной закваске с солодом и кориандром, тесто получается"
    " липким, поэтому формуем его мокрыми руками и печём в форме почти два часа при низкой температуре.",
    "чиабатта": "Для чиабатты нужна очень влажная опара и долгая холодная расстойка; тесто почти не мнём,"
    " а только складываем каждые полчаса, чтобы сохранить крупные дыры в мякише.",
    "багет": "Багет формуем из пшеничного теста средней влажности, делаем косые надрезы лезвием и ставим в"
    " печь с паром, иначе корка не раскроется и будет бледной.",
    "фокачча": "Фокаччу раскладываем по противню с оливковым маслом, продавливаем пальцами ямки и посыпаем"
    " крупной солью и розмарином перед тем, как отправить в горячую духовку.",
    "лаваш": "Лаваш раскатываем очень тонко и печём несколько секунд на раскалённой сковороде без масла,"
    " а готовые листы сразу накрываем полотенцем, чтобы они остались мягкими.",
    "бриошь": "Бриошь замешиваем долго, постепенно добавляя мягкое сливочное масло, и оставляем тесто на"
    " ночь в холодильнике, чтобы его было проще формовать утром.",
}
TEMPLATE = """## Evening review

Before closing the day, write down what actually happened rather than what was planned, name one thing
that went well and one that did not, and move every unfinished task either to tomorrow or to the backlog
so that nothing stays open in today's note.
"""
DAYS = [
    "Fixed the leaking tap in the bathroom and finally returned the library books.",
    "Long call with the accountant about the tax return; two receipts are still missing.",
    "Rain all day. Read half of the new novel and sorted the photos from the trip.",
    "Ran ten kilometres before work, the fastest time since spring.",
    "Team offsite: we agreed to drop the mobile app and focus on the web version.",
    "Bought seedlings for the balcony: basil, mint and two kinds of tomatoes.",
    "Car service: new brake pads, and the air conditioning needs a refill next month.",
    "Cooked dinner for the neighbours; the lentil soup was the clear favourite.",
    "Migrated the old mailbox and unsubscribed from forty newsletters.",
    "Doctor's appointment moved to Thursday; picked up the new glasses.",
]
FRONT = "---\ntags: [reference]\nstatus: reviewed\nowner: me\n---\n"
CLOSING = "\nLast reviewed during the spring cleanup.\n"
VAULT = {
    **{
        f"services/{name}.md": f"# {name.title()}\n\n{intro}\n\n{DEPLOY}\n{extra}\n"
        for name, (intro, extra) in SERVICES.items()
    },
    "services/mail.md": MAIL,
    **{f"хлеб/{name}.md": f"# {name.capitalize()}\n\n{text}\n\n{KEEP}" for name, text in BREADS.items()},
    **{
        f"daily/2026-05-{i + 1:02d}.md": f"# 2026-05-{i + 1:02d}\n\n{text}\n\n{TEMPLATE}"
        for i, text in enumerate(DAYS)
    },
    "reference/keyboard shortcuts.md": FRONT
    + "# Keyboard shortcuts\n\nCtrl+P opens the command palette, Ctrl+O the quick switcher and Ctrl+Shift+F"
    " searches every note. Alt+Enter follows the link under the cursor.\n" + CLOSING,
    "reference/tea brewing.md": FRONT
    + "# Tea brewing\n\nGreen tea wants water at about 75 degrees for two minutes; black tea boiling water"
    " for four. Oolong can be steeped five or six times from the same leaves.\n" + CLOSING,
}


def _lines(note: str, block: str) -> tuple[int, int]:
    """1-based first and last line of ``block`` inside ``note``."""
    start = note[: note.index(block)].count("\n") + 1
    return start, start + block.strip("\n").count("\n")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, use_provider: LocalUSEProvider) -> Iterator[Store]:
    root = tmp_path_factory.mktemp("passages")
    run_index(write_vault(root / "vault", VAULT), root / "store", use_provider)
    with opened_store(root / "store") as s:
        yield s


@pytest.fixture(scope="module")
def report(store: Store) -> dups.DuplicateReport:
    return dups.duplicates(store, 0.93, 1000, 32)


def _passages(report: dups.DuplicateReport) -> dict[frozenset[str], dups.DuplicatePair]:
    return {frozenset((p.a, p.b)): p for p in report.shared_passages}


def _lines_in(pair: dups.DuplicatePair, note: str) -> list[tuple[int, int]]:
    """The line ranges of ``pair``'s passages in ``note`` (one of its two notes)."""
    sides = [p.a if pair.a == note else p.b for p in pair.passages]
    return [(r.start_line, r.end_line) for r in sides]


def test_copied_install_steps_are_a_shared_passage_of_every_pair_with_their_lines(
    report: dups.DuplicateReport,
) -> None:
    names = sorted(SERVICES)
    found = _passages(report)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pair = found[frozenset((f"services/{a}.md", f"services/{b}.md"))]
            assert pair.kind == "shared_passage" and len(pair.passages) == 1
            for note in (pair.a, pair.b):
                assert _lines_in(pair, note) == [_lines(VAULT[note], DEPLOY)]
    assert not {p.kind for p in report.pairs if "services/" in p.a}  # never whole-note duplicates


def test_a_copy_with_small_edits_is_found_whole(report: dups.DuplicateReport) -> None:
    found = _passages(report)
    for name in SERVICES:
        pair = found[frozenset(("services/mail.md", f"services/{name}.md"))]
        assert _lines_in(pair, "services/mail.md") == [_lines(MAIL, DEPLOY_EDITED)]
        assert _lines_in(pair, f"services/{name}.md") == [_lines(VAULT[f"services/{name}.md"], DEPLOY)]
        assert 0.7 <= pair.score < 1.0  # edits: not every word of the passage is copied


def test_a_passage_copied_into_more_notes_than_the_boilerplate_floor_is_still_reported(
    report: dups.DuplicateReport,
) -> None:
    notes = sorted(f"хлеб/{name}.md" for name in BREADS)
    assert len(notes) >= report.boilerplate_min_notes  # its lines are boilerplate for coverage
    found = _passages(report)
    for i, a in enumerate(notes):
        for b in notes[i + 1 :]:
            pair = found[frozenset((a, b))]
            assert all(_lines_in(pair, n) == [_lines(VAULT[n], KEEP)] for n in (a, b))


def test_a_template_in_many_notes_shared_front_matter_and_short_phrases_are_not_reported(
    report: dups.DuplicateReport,
) -> None:
    assert len(DAYS) >= max(coverage.TEMPLATE_MIN_NOTES, report.boilerplate_min_notes)
    reported = {frozenset((p.a, p.b)) for p in (*report.pairs, *report.shared_passages)}
    reported |= {frozenset((a, b)) for g in report.exact for a in g.paths for b in g.paths if a != b}
    daily = {n for n in VAULT if n.startswith("daily/")}
    assert not [k for k in reported if k & daily]
    assert frozenset(("reference/keyboard shortcuts.md", "reference/tea brewing.md")) not in reported
    # nothing else: the copies above are every pair reported
    copies = {
        frozenset((a, b))
        for group in ("services/", "хлеб/")
        for a in VAULT
        for b in VAULT
        if a < b and a.startswith(group) and b.startswith(group)
    }
    assert reported == copies
