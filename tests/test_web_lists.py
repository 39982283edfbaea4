"""History, Duplicates and the Audit over HTTP on a real server (loopback, the fake embedding
provider): local times, undo rows under what they undid, one state word, discard, duplicate sets,
the score's meaning, dismissed pairs restored, the audit naming its notes and kept across restarts.
The browser half (the same pages in Chromium, axe-core on every page) is tests/test_web_lists_browser.py.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

import vaultlens
from server_support import running_server
from test_web_routes import NOTES as PAGE_NOTES
from test_web_routes import SCRIPT_NOTE, Page, error_code, get, opened, page, post
from vaultlens.errors import WriteRefused
from vaultlens.safewrite import Journal
from vaultlens.services.changing import writes
from vl_support import snapshot, write_vault

__all__ = ["page"]  # the fixture, used by name

REPLACED = b"# Hostile\n\nReplaced.\n"


def applied_then_undone(site: Page) -> tuple[str, str]:
    """A change of SCRIPT_NOTE applied, then its undo applied: (the change's id, the undo's id)."""
    hostile = (site.vault / SCRIPT_NOTE).read_bytes()
    planned = writes.plan_write(site.vault, SCRIPT_NOTE, REPLACED, "replace the hostile note", hostile)
    op = writes.apply(site.vault, planned.entry.op_id, planned.proposal).op_id
    undo = writes.plan_undo(site.vault, op)
    writes.apply(site.vault, undo.entry.op_id, undo.proposal)
    return op, undo.entry.op_id


def rows(html: str) -> list[str]:
    """The history table's rows as HTML, in page order."""
    return re.findall(r"<tr class=\"entry[^>]*>.*?</tr>", html, re.S)


def test_history_shows_local_times_one_state_word_and_each_undo_under_what_it_undid(page: Page) -> None:
    op, undo = applied_then_undone(page)
    listed = get(page, "/history").text
    assert "(undone)" not in listed and "undone (" not in listed
    found = rows(listed)
    [at] = [i for i, r in enumerate(found) if f'data-op="{op}"' in r]
    assert f'data-op="{undo}"' in found[at + 1] and f'data-undo-of="{op}"' in found[at + 1], found
    assert "Undo of the change above" in found[at + 1]
    assert f"undo {op}" not in found[at + 1], "the undo row says what it is, not a bare id"
    state = re.search(r'<td class="state">([^<]*)</td>', found[at])
    assert state and state.group(1) == "undone", found[at]
    when = re.search(r'<time datetime="([^"]+)" title="([^"]+)">([^<]+)</time>', found[at])
    assert when, found[at]
    utc, title, shown = when.groups()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown), "local time to the second"
    assert title.endswith(" UTC") and "." not in title + shown, "no microseconds anywhere shown"
    local = datetime.fromisoformat(utc).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert shown == local, "the server's local zone"
    assert 'class="undo"' not in found[at], "an undone change offers no second undo"


def test_a_planned_change_is_discarded_with_the_page_token_without_touching_a_note(page: Page) -> None:
    hostile = (page.vault / SCRIPT_NOTE).read_bytes()
    planned = writes.plan_write(page.vault, SCRIPT_NOTE, REPLACED, "replace the hostile note", hostile)
    op = planned.entry.op_id
    [row] = [r for r in rows(get(page, "/history").text) if f'data-op="{op}"' in r]
    assert 'class="discard"' in row and ">planned<" in row
    before = snapshot(page.vault)
    refused = post(page, "/ui/api/discard", {"op_id": op}, **{"X-Vaultlens-CSRF": "x" * 43})
    assert refused.status_code == 403 and error_code(refused) == "csrf_refused"
    done = post(page, "/ui/api/discard", {"op_id": op})
    assert done.status_code == 200 and done.json()["state"] == "discarded", done.text
    assert snapshot(page.vault) == before, "discarding touches no note"
    [row] = [r for r in rows(get(page, "/history").text) if f'data-op="{op}"' in r]
    assert ">discarded<" in row and 'class="discard"' not in row and 'class="undo"' not in row
    again = post(page, "/ui/api/discard", {"op_id": op})
    assert again.status_code == 409 and "only a planned operation" in again.json()["error"]["message"]
    applied = post(page, "/ui/api/apply", {"op_id": op, "token": planned.proposal.token})
    assert applied.status_code == 409 and snapshot(page.vault) == before, "a discarded change never applies"


def test_a_discarded_group_stays_discarded_with_its_members(page: Page) -> None:
    hostile = (page.vault / SCRIPT_NOTE).read_bytes()
    planned = writes.plan_group(
        page.vault,
        [
            writes.Change(SCRIPT_NOTE, b"# Hostile\n\n- [[Part one]]\n", "index", based_on=hostile),
            writes.Change("Part one.md", b"Moved here.\n", "new note", based_on=None),
        ],
        "split Hostile.md",
    )
    group = planned.entry.op_id
    member = writes.journal(page.vault).group(group).members[0]
    with pytest.raises(WriteRefused, match="only with it"):
        writes.discard(page.vault, member)  # a member goes only with its group
    assert writes.discard(page.vault, group).state == "discarded"
    [listed] = [r for r in writes.history(page.vault) if r.op_id == group]
    assert listed.state == "discarded", "settling the journal leaves a discarded group as it is"
    journal: Journal = writes.journal(page.vault)
    assert {journal.entry(m).state for m in journal.group(group).members} == {"discarded"}
    assert not (page.vault / "Part one.md").exists()


# ---- Duplicates: counts per kind, sets of copies, the score's meaning, dismissed pairs restored -------

BODY = "".join(
    f"## Step {i}\n\nRepot the fig number {i} in spring, water it {i} times a week, keep it {i * 3} cm from glass.\n\n"
    for i in range(5)
)
COPIES = [f"Figs/Fig care {n}.md" for n in ("one", "two", "three", "four")]
EXACT = [f"Same/Copy {n}.md" for n in "abcd"]
DUPLICATE_NOTES = {
    **{path: f"# {Path(path).stem}\n\n{BODY}" for path in COPIES},  # titles differ: near, not exact
    **{path: "# Copy\n\nThe exact same text, kept four times, about tomatoes in pots.\n" for path in EXACT},
    "Garden/Plan.md": PAGE_NOTES["Garden/Plan.md"],
    "Garden/Plan extended.md": PAGE_NOTES["Garden/Plan extended.md"],
}


@pytest.fixture
def dups(tmp_path: Path) -> Iterator[Page]:
    vault = write_vault(tmp_path / "vault", DUPLICATE_NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as server:
        yield opened(server, vault, None)  # type: ignore[arg-type]  # no model here


def section(html: str, kind: str) -> str:
    found = re.search(
        rf'<section class="kind" id="kind-{kind}" data-kind="{kind}">(.*?)</section>', html, re.S
    )
    assert found, kind
    return found.group(1)


TITLES = {"near_duplicate": "Near duplicates", "contained": "Contained in another note"}
PLAN_PAIR = sorted(["Garden/Plan.md", "Garden/Plan extended.md"])


def plan_kind(site: Page) -> str:
    """The kind the duplicate finder gave the pair of plans (near_duplicate or contained)."""
    [kind] = [
        p["kind"] for p in get(site, "/ui/api/duplicates").json()["pairs"] if [p["a"], p["b"]] == PLAN_PAIR
    ]
    return str(kind)


def test_copies_of_one_text_are_one_set_and_each_kind_is_counted(dups: Page) -> None:
    html = get(dups, "/duplicates").text
    report = get(dups, "/ui/api/duplicates").json()
    whole = report["counts"]["near_duplicate"] + report["counts"]["contained"]
    assert whole == 7 and report["counts"]["exact"] == 1, report["counts"]  # 6 pairs of copies, the plans
    near = section(html, "near_duplicate")
    sets = re.findall(r'<li class="copy-set" data-paths="([^"]*)" data-size="(\d+)">', near)
    assert sets == [("\n".join(sorted(COPIES)), "4")], near
    assert "4 near-identical copies" in near and "The 6 pairs" in near, "the six pairs folded away"
    exact = section(html, "exact")
    assert re.findall(r'data-size="(\d+)"', exact) == ["4"] and 'class="pair"' not in exact
    shown = {"near_duplicate": 1, "contained": 0}  # the set counts once
    shown[plan_kind(dups)] += 1
    for kind, n in shown.items():
        assert f"{TITLES[kind]} ({n})" in html
        assert re.search(rf'data-count="{kind}"><a [^>]*>{TITLES[kind]}</a>: {n}<', html)
    assert "Exact copies (1)" in html


def test_each_score_says_what_it_measures_for_its_kind(dups: Page) -> None:
    html = get(dups, "/duplicates").text
    for kind, word, meaning in [
        ("near_duplicate", "overlap", "share of one note&#x27;s sections found in the other"),
        ("contained", "contained", "share of the smaller note&#x27;s sections found in the larger"),
    ]:
        found = section(html, kind)
        assert meaning in found, kind
        if kind != plan_kind(dups) and kind != "near_duplicate":
            continue
        score = re.search(
            rf'<span class="score" title="([^"]+)" data-score="([0-9.]+)">(\d+)% {word}</span>', found
        )
        assert score, found
        assert meaning in score.group(1)
        assert round(float(score.group(2)) * 100) == int(score.group(3))


def test_a_dismissed_pair_is_listed_apart_and_restored(dups: Page) -> None:
    a, b = PLAN_PAIR
    title = TITLES[plan_kind(dups)]
    before = re.search(rf"{title} \((\d+)\)", get(dups, "/duplicates").text)
    assert before
    assert post(dups, "/ui/api/dismiss", {"a": a, "b": b}).status_code == 200
    html = get(dups, "/duplicates").text
    assert f"{title} ({int(before.group(1)) - 1})" in html
    listed = re.search(r'<section id="dismissed">(.*?)</section>', html, re.S)
    assert listed and f'data-a="{a}" data-b="{b}"' in listed.group(1) and 'class="restore"' in listed.group(1)
    assert "Dismissed pairs (1)" in html
    refused = post(dups, "/ui/api/restore", {"a": a, "b": b}, **{"X-Vaultlens-CSRF": "x" * 43})
    assert refused.status_code == 403
    done = post(dups, "/ui/api/restore", {"a": a, "b": b})
    assert done.status_code == 200 and done.json() == {"restored": [a, b]}, done.text
    html = get(dups, "/duplicates").text
    assert f"{title} ({before.group(1)})" in html and "Dismissed pairs (0)" in html
    again = post(dups, "/ui/api/restore", {"a": a, "b": b})
    assert again.status_code == 400 and "not a dismissed pair" in again.json()["error"]["message"]


# ---- Audit: the notes behind every count, kept across a restart, the tag tree folded ------------------

AUDIT_NOTES = {
    "Hub.md": "---\ntags: [garden/veg/tomato, garden/fruit, kitchen]\n---\n# Hub\n\nSee [[Leaf]] and [[Nowhere]].\n",
    "Leaf.md": "# Leaf\n\nA leaf links back to nothing.\n",
    "Alone.md": "# Alone\n\nNo links at all here. #garden/veg\n",
    "Sender.md": "# Sender\n\nPoints at [[Hub]].\n",
}


def test_the_audit_names_the_notes_behind_each_count_and_survives_a_restart(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", AUDIT_NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as first:
        site = opened(first, vault, None)  # type: ignore[arg-type]  # no model here
        assert "No structure audit has run" in get(site, "/audit").text
        assert post(site, "/ui/api/audit", {}).status_code == 200
        shown = get(site, "/audit").text
    named = {
        key: re.findall(r'<a href="/note\?path=([^"]+)">', part)
        for key, part in re.findall(r'<details id="named-(\w+)">(.*?)</details>', shown, re.S)
    }
    assert named == {
        "orphans": ["Alone.md"],
        "orphans_no_incoming": ["Alone.md", "Sender.md"],
        "no_outgoing": ["Alone.md", "Leaf.md"],
        "broken_links": ["Hub.md"],
    }, named
    assert re.search(r'<dd data-summary="orphans"><a href="#named-orphans">1</a></dd>', shown)
    tree = re.search(r'<details id="tag-tree-box">(.*?)</ul></details>', shown, re.S)
    assert tree and "<details open" not in tree.group(0), "the tag tree starts folded"
    assert re.search(r'<li data-tag="garden"><details><summary>garden <span class="count">', shown), (
        "a fold per parent"
    )
    with running_server(
        vault, tmp_path / "home", watch=False
    ) as second:  # a new process state: nothing kept in memory
        site = opened(second, vault, None)  # type: ignore[arg-type]
        again = get(site, "/audit").text
        assert "No structure audit has run" not in again and 'id="audit-when"' in again
        assert re.findall(r'<details id="named-orphans">.*?path=([^"]+)"', again, re.S) == ["Alone.md"]
        assert "Nowhere" in again, "the broken links table is back"
        canvas = get(site, "/ui/api/audit/canvas")
        assert canvas.status_code == 200 and {n.get("file") for n in canvas.json()["nodes"]} >= {"Hub.md"}


# ---- typed rendering (issue 45 item 2) ----------------------------------------------------------------

WEB = Path(vaultlens.__file__).parent / "web"
RENDERERS = ("lists.py", "audit_page.py", "status_page.py", "pages.py")  # HTML from typed results


def test_the_page_renders_typed_results_and_names_no_any() -> None:
    """JSON routes answer ``as_dict()``; the HTML renderers read the verbs' results by attribute."""
    for module in sorted(WEB.glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "Any" not in names, f"{module.name} names typing.Any"
        if module.name in RENDERERS:
            calls = [
                n.lineno
                for n in ast.walk(tree)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "as_dict"
            ]
            assert not calls, f"{module.name} renders a dict (as_dict() on lines {calls})"
