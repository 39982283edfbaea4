"""History, Duplicates and the Audit over HTTP on a real server (loopback, the fake embedding
provider): local times, undo rows under what they undid, one state word, discard, duplicate sets,
the score's meaning, dismissed pairs restored, the audit naming its notes and kept across restarts.
The browser half (the same pages in Chromium, axe-core on every page) is tests/test_web_lists_browser.py.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from test_web_routes import SCRIPT_NOTE, Page, error_code, get, page, post
from vaultlens.errors import WriteRefused
from vaultlens.safewrite import Journal
from vaultlens.services import writes
from vl_support import snapshot

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
