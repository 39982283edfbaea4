"""`vaultlens merge KEEP OTHER` and `vaultlens move OLD NEW`: one operation group each, every link in the
vault repointed (wikilinks with headings, blocks and display text, embeds, Markdown links with encoded
paths, property links), OTHER moved to the vault's trash, undone together byte for byte.

Real files, the project's own resolver to check every link afterwards, a real child killed with SIGKILL.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import httpx
import pytest

from test_safewrite_groups import kill_9_when_ready, run_child
from test_web_routes import Page, post
from test_web_routes import page as page  # the fixture: a running server
from vaultlens.errors import PlanRefused, WriteRefused
from vaultlens.services.app import App
from vaultlens.services.changing import writes
from vaultlens.services.verbs import restructuring
from vaultlens.vault.links import LinkResolver, masked_spans
from vaultlens.vault.outline import extract_headings, located_links
from vaultlens.vault.scan import scan_vault
from vl_support import check_shape, run_cli, snapshot, write_vault

KEEP = "A.md"
OTHER = "notes/My B.md"
LINKING = {  # five notes linking OTHER in every form Obsidian has
    "C.md": "See [[My B]] and [[My B|the B note]].\n",
    "D.md": "# D\n\n[[My B#Extra]] and ![[My B]] and [[My B#^blk|a block]]\n",
    "sub/E.md": "[t](../notes/My%20B.md#Extra) and [x](<notes/My B.md>)\n",
    "F.md": '---\r\nrelated: "[[My B]]"\r\n---\r\nBody [[notes/My B|by path]]\r\n\r\n```\r\n[[My B]] in code\r\n```\r\n'
    "and `[[My B]]` inline.\r\n",
    "G.md": "\ufeffTable | [[My B\\|cell]] | and [m](My%20B.md)\n",
}
FILES: dict[str, str] = {
    KEEP: "---\ntags: [a]\n---\n# A\n\nShared line.\n",
    OTHER: "---\ntags: [b]\naliases: [Bee]\n---\n# My B\n\nShared line.\n\n## Extra\n\nOnly in B. ^blk\n",
    **LINKING,
}


def vault_of(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "v", {k: v.encode("utf-8") for k, v in FILES.items()})


def files_of(snap: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in snap.items() if v != "dir"}


def resolved_targets(vault: Path) -> dict[str, list[str | None]]:
    """Where every link of each linking note goes, by the project's resolver over the vault as it is."""
    scan = scan_vault(vault, 10_000_000)
    resolver = LinkResolver([f.path for f in scan.files])
    out: dict[str, list[str | None]] = {}
    for f in scan.notes:
        text = (vault / f.path).read_bytes().decode("utf-8-sig").replace("\r\n", "\n")
        out[f.path] = [resolver.resolve(loc.link.target, f.path).path for loc in located_links(text, f.path)]
    return out


def test_the_bar_merge_plan_only_json_rewrites_cs_link_to_a(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"A.md": "# A\n", "B.md": "# B\n\nbee\n", "C.md": "see [[B]]\n"})
    before = snapshot(vault)
    done = run_cli(["merge", "A.md", "B.md", "--plan-only", "--json", "--vault", str(vault)])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    diff = data["plan"]["diff"]
    assert "--- a/C.md\n+++ b/C.md\n@@ -1 +1 @@\n-see [[B]]\n+see [[A]]\n" in diff
    assert data["plan"]["kind"] == "group" and data["applied"] is None
    assert data["trash"] == ".trash/B.md" and "+++ /dev/null" in diff
    assert snapshot(vault) == before, "planning writes nothing"
    check_shape("write_merge", data)


def test_merge_repoints_every_link_form_and_undo_restores_all_seven_files(tmp_path: Path) -> None:
    vault = vault_of(tmp_path)
    original = snapshot(vault)
    app = App.open(vault)
    result = restructuring.write_merge(app, KEEP, OTHER)
    assert result.plan_of.carried == ["Extra"] and result.plan_of.left_out == ["My B"]
    assert sorted(result.plan_of.relinked) == sorted(LINKING)
    assert "\n--- a/notes/My B.md\n+++ /dev/null\n@@ -1,11 +0,0 @@\n----\n" in result.plan.diff, (
        "every line shown"
    )
    writes.apply(vault, result.plan.entry.op_id, result.plan.proposal)
    after = resolved_targets(vault)
    for path in LINKING:
        assert after[path] and all(t == KEEP for t in after[path]), (path, after[path])
    f = (vault / "F.md").read_bytes()
    assert f.count(b"[[My B]]") == 2 and b'related: "[[A]]"\r\n' in f, "code untouched, CRLF kept"
    assert b"Body [[A|by path]]\r\n" in f
    assert (vault / "G.md").read_bytes() == "\ufeffTable | [[A\\|cell]] | and [m](A.md)\n".encode()
    assert (vault / "sub/E.md").read_text() == "[t](../A.md#Extra) and [x](<A.md>)\n"
    keep = (vault / KEEP).read_text()
    assert (
        "## Merged from My B (notes)\n\n### Extra\n\nOnly in B. ^blk" in keep
        and keep.count("Shared line.") == 1
    )
    assert '  - "Bee"' in keep and '  - "b"' in keep and '  - "My B"' in keep
    assert not (vault / OTHER).exists()
    assert (vault / ".trash/My B.md").read_text() == FILES[OTHER], "moved to the trash, never deleted"
    undone = run_cli(["undo", result.plan.entry.op_id, "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original), "all seven files back, byte for byte"


def test_merged_sections_sit_below_the_merged_from_heading_with_their_text_and_links_kept(
    tmp_path: Path,
) -> None:
    """OTHER's ``# Title`` becomes a level-3 heading under ``## Merged from`` (never a second title of
    KEEP), each deeper heading shifted alike; only the ``#`` run changes, code is untouched, and links
    to the headings resolve in KEEP afterwards by the project's resolver and outline."""
    other = (
        "# Other title\n\nNew text.\n\n  ## Sub ##\n\nMore.\n\n```\n# not a heading\n```\n\n"
        "##### Deep\n\nDeepest.\n"
    )
    vault = write_vault(
        tmp_path / "v",
        {
            "A.md": "# A\n\nkept\n",
            "Other.md": other,
            "L.md": "[[Other#Sub]] [[Other#Other title]] [[Other#Deep]]\n",
        },
    )
    done = run_cli(["merge", "A.md", "Other.md", "--yes", "--json", "--vault", str(vault)])
    assert done.exit_code == 0, done.output
    assert (vault / "A.md").read_text().split("---\n")[-1] == (
        "# A\n\nkept\n\n## Merged from Other\n\n### Other title\n\nNew text.\n\n  #### Sub ##\n\nMore.\n\n"
        "```\n# not a heading\n```\n\n###### Deep\n\nDeepest.\n"
    )
    text = (vault / "A.md").read_text()
    headings = {h.text: h.level for h in extract_headings(text, masked_spans(text))}
    assert headings == {"A": 1, "Merged from Other": 2, "Other title": 3, "Sub": 4, "Deep": 6}
    resolver = LinkResolver([f.path for f in scan_vault(vault, 10_000_000).files])
    links = [loc.link for loc in located_links((vault / "L.md").read_text(), "L.md")]
    assert [(resolver.resolve(k.target, "L.md").path, k.heading in headings) for k in links] == [
        ("A.md", True)
    ] * 3


def test_undoing_a_merge_removes_the_trash_folder_it_created_and_only_while_empty(tmp_path: Path) -> None:
    """The vault's whole tree (folders included) is as before after merge + undo: no empty ``.trash/``
    left. A ``.trash/`` that existed before stays, and one holding a file added since is never removed."""
    vault = vault_of(tmp_path)
    original = snapshot(vault)
    for keep_something in (False, True):
        done = run_cli(["merge", KEEP, OTHER, "--yes", "--json", "--vault", str(vault)])
        assert done.exit_code == 0, done.output
        if keep_something:
            (vault / ".trash/kept.txt").write_text("mine\n")
        undone = run_cli(["undo", json.loads(done.stdout)["plan"]["op_id"], "--yes", "--vault", str(vault)])
        assert undone.exit_code == 0, undone.output
        if not keep_something:
            assert snapshot(vault) == original, "every file and folder as before: no .trash/ left behind"
    assert (vault / ".trash/kept.txt").read_text() == "mine\n", "a folder with anything in it stays"
    (vault / ".trash/kept.txt").unlink()
    done = run_cli(["merge", KEEP, OTHER, "--yes", "--json", "--vault", str(vault)])
    undone = run_cli(["undo", json.loads(done.stdout)["plan"]["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert (vault / ".trash").is_dir(), "a .trash/ the merge did not create stays, empty or not"


def test_move_repoints_every_link_and_undo_restores(tmp_path: Path) -> None:
    vault = vault_of(tmp_path)
    original = snapshot(vault)
    moved = run_cli(["move", OTHER, "archive/Renamed B.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    data = json.loads(moved.stdout)
    assert data["applied"]["state"] == "applied"
    check_shape("write_move", data)
    after = resolved_targets(vault)
    for path in LINKING:
        assert after[path] and all(t == "archive/Renamed B.md" for t in after[path]), (path, after[path])
    assert (vault / "F.md").read_bytes().count(b"[[notes/My B") == 0
    assert b"[[archive/Renamed B|by path]]" in (vault / "F.md").read_bytes(), "a path stays a path"
    assert (vault / "C.md").read_text() == "See [[Renamed B]] and [[Renamed B|the B note]].\n"
    assert not (vault / OTHER).exists()
    undone = run_cli(["undo", data["plan"]["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)


def test_moving_a_note_to_another_folder_under_its_own_name_applies_and_undo_restores(tmp_path: Path) -> None:
    """The commonest move: the same file name in another folder. The apply's check for a name taken
    since the plan must not count the note the move itself removes (it refused every such move)."""
    vault = vault_of(tmp_path)
    original = snapshot(vault)
    moved = run_cli(["move", OTHER, "archive/My B.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    data = json.loads(moved.stdout)
    assert data["applied"]["state"] == "applied"
    assert not (vault / OTHER).exists() and (vault / "archive/My B.md").read_bytes() == FILES[OTHER].encode()
    after = resolved_targets(vault)
    for path in LINKING:
        assert after[path] and all(t == "archive/My B.md" for t in after[path]), (path, after[path])
    undone = run_cli(["undo", data["plan"]["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)


def test_a_link_to_a_heading_not_carried_over_refuses_the_merge(tmp_path: Path) -> None:
    files = dict(FILES)
    files[OTHER] += "\n## Left out\n\nNot carried.\n"
    files["C.md"] = "[[My B#Left out]]\n"
    vault = write_vault(tmp_path / "v", files)
    before = snapshot(vault)
    with pytest.raises(PlanRefused, match=r"C.md:1 .*heading 'Left out' of notes/My B.md is not in A.md"):
        restructuring.write_merge(App.open(vault), KEEP, OTHER, sections=["Extra"])
    assert snapshot(vault) == before


def test_a_vault_that_deletes_for_good_refuses_the_merge(tmp_path: Path) -> None:
    vault = vault_of(tmp_path)
    write_vault(vault, {".obsidian/app.json": '{"trashOption": "none"}'})
    done = run_cli(["merge", KEEP, OTHER, "--plan-only", "--json", "--vault", str(vault)])
    assert done.exit_code != 0 and "never deletes a note" in done.output


def test_kill_9_in_the_middle_of_a_merge_is_undone_by_the_documented_command(
    tmp_path: Path, isolated_env: Path
) -> None:
    vault = vault_of(tmp_path)
    original = snapshot(vault)
    planned = restructuring.write_merge(App.open(vault), KEEP, OTHER).plan
    group_id = planned.entry.op_id
    child = run_child(tmp_path, isolated_env, vault, planned, "kill-before-4")
    kill_9_when_ready(child, tmp_path)
    assert (vault / OTHER).read_text() == FILES[OTHER], "OTHER is removed last"
    assert (vault / ".trash/My B.md").exists(), "its copy in the trash was written first"
    undone = run_cli(["undo", group_id, "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)


def test_a_moved_notes_own_relative_links_keep_their_notes(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "v", {"deep/er/N.md": "[up](../../C.md) [[C]]\n", "C.md": "[n](deep/er/N.md)\n"}
    )
    moved = run_cli(["move", "deep/er/N.md", "N2.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    assert (vault / "N2.md").read_text() == "[up](./C.md) [[C]]\n", "only the link that would break changes"
    assert (vault / "C.md").read_text() == "[n](N2.md)\n"


def test_merge_sections_picks_by_heading_from_the_cli(tmp_path: Path) -> None:
    files = dict(FILES)
    files[OTHER] += "\n## Left out\n\nNot carried.\n"
    vault = write_vault(tmp_path / "v", files)
    done = run_cli(
        ["merge", KEEP, OTHER, "--sections", "Extra", "--plan-only", "--json", "--vault", str(vault)]
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["carried"] == ["Extra"] and "Left out" in data["left_out"]
    assert "+Not carried." not in data["plan"]["diff"].split("--- a/A.md")[1].split("--- a/C.md")[0]


EVICTION = (
    "When the cache is full it drops the entry that was used least recently, so the hot keys stay in memory "
    "and a scan over cold data cannot flush them out. Entries also expire after ten minutes, and a key that "
    "is written again starts its ten minutes anew."
)
SMALL_CHUNKS = {"index.chunk_target": "200", "index.chunk_overlap": "0"}  # one chunk a section


@pytest.mark.slow
def test_with_an_index_the_duplicate_finders_coverage_decides_which_sections_are_carried(
    tmp_path: Path,
) -> None:
    """A section KEEP holds with small edits is covered by meaning (no line is copied); a new one is carried."""
    vault = write_vault(
        tmp_path / "v",
        {
            "Keep.md": f"# Cache\n\n## Eviction\n\n{EVICTION}\n",
            "Other.md": "# Cache notes\n\n## Evicting\n\n"
            + EVICTION.replace("drops", "throws away").replace("stay in memory", "remain in memory")
            + "\n\n## Warm-up\n\nAfter a deploy the service replays yesterday's top thousand queries to fill the "
            "cache before it takes traffic, which keeps the first minutes from hammering the database.\n",
        },
    )
    lines_only = restructuring.write_merge(App.open(vault), "Keep.md", "Other.md")
    assert lines_only.plan_of.coverage == "lines" and "Evicting" in lines_only.plan_of.carried
    sets = [a for k, v in SMALL_CHUNKS.items() for a in ("--set", f"{k}={v}")]
    indexed = run_cli(["index", "--vault", str(vault), *sets])
    assert indexed.exit_code == 0, indexed.output
    result = restructuring.write_merge(App.open(vault, SMALL_CHUNKS), "Keep.md", "Other.md")
    assert result.plan_of.coverage == "index"
    assert result.plan_of.carried == ["Warm-up"] and "Evicting" in result.plan_of.left_out


def test_the_page_api_plans_a_merge_and_writes_it_only_with_the_diffs_token(page: Page) -> None:
    """POST /ui/api/merge plans the group; /ui/api/apply proposes its exact diff, then writes it with that token."""
    write_vault(
        page.vault,
        {"Keep m.md": "# K\n\nkept\n", "Other m.md": "# O\n\nonly here\n", "L.md": "[[Other m]]\n"},
    )
    before = snapshot(page.vault)
    forged = httpx.post(
        page.url + "/ui/api/merge", json={"keep": "Keep m.md", "other": "Other m.md"}, timeout=30
    )
    assert forged.status_code == 403 and forged.json()["error"]["code"] == "page_key_required"
    outside = post(page, "/ui/api/merge", {"keep": "Keep m.md", "other": "../x.md"})
    assert outside.status_code >= 400 and snapshot(page.vault) == before
    planned = post(page, "/ui/api/merge", {"keep": "Keep m.md", "other": "Other m.md"})
    assert planned.status_code == 200, planned.text
    plan = planned.json()["plan"]
    assert "-[[Other m]]\n+[[Keep m]]\n" in plan["diff"] and snapshot(page.vault) == before
    shown = post(page, "/ui/api/apply", {"op_id": plan["op_id"]})
    assert shown.status_code == 409 and shown.json()["error"]["proposal"]["preview"] == plan["diff"]
    token = shown.json()["error"]["proposal"]["token"]
    applied = post(page, "/ui/api/apply", {"op_id": plan["op_id"], "token": token})
    assert applied.status_code == 200, applied.text
    assert (page.vault / "L.md").read_text() == "[[Keep m]]\n" and not (page.vault / "Other m.md").exists()
    assert (page.vault / ".trash/Other m.md").read_text() == "# O\n\nonly here\n"


@pytest.mark.slow
def test_a_section_kept_word_for_word_is_not_carried_when_the_index_compares_the_note_as_one_chunk(
    tmp_path: Path,
) -> None:
    """Short sections make one chunk of the whole note (default settings): the index rates OTHER as one
    row, uncovered because of its new section; the section KEEP already holds line for line is still
    covered and not copied into KEEP a second time."""
    shared = "Caching notes: a cache keeps values close to the reader."
    vault = write_vault(
        tmp_path / "v",
        {
            "A.md": f"# A\n\n{shared}\n\n## TTL\n\nEntries expire after their TTL.\n",
            "B.md": f"# B\n\n{shared}\n\n## Warmup\n\nWarm the cache before the traffic arrives.\n",
            "C.md": "See [[B]] and [[B#Warmup|warming]].\n",
        },
    )
    indexed = run_cli(["index", "--vault", str(vault)])
    assert indexed.exit_code == 0, indexed.output
    result = restructuring.write_merge(App.open(vault), "A.md", "B.md")
    assert result.plan_of.coverage == "index"
    assert result.plan_of.carried == ["Warmup"] and result.plan_of.left_out == ["B"]
    added = result.plan.diff.split("+++ b/A.md")[1].split("--- a/")[0]
    assert f"+{shared}" not in added and "+Warm the cache before the traffic arrives." in added
    assert "-See [[B]] and [[B#Warmup|warming]]." in result.plan.diff


def test_an_exact_copy_of_the_same_name_merges_into_a_keep_left_as_it_is_and_undo_puts_it_back(
    tmp_path: Path,
) -> None:
    """Exact copies (the finder's first kind): KEEP already holds all of OTHER, so the group moves
    OTHER to the trash and leaves KEEP untouched instead of refusing a change to KEEP that changes nothing."""
    copy = "# Tomatoes\n\nWater them at the roots.\n"
    vault = write_vault(tmp_path / "v", {"Tomatoes.md": copy, "a/Tomatoes.md": copy})
    original = snapshot(vault)
    done = run_cli(["merge", "Tomatoes.md", "a/Tomatoes.md", "--yes", "--json", "--vault", str(vault)])
    assert done.exit_code == 0, done.output
    assert (vault / "Tomatoes.md").read_text() == copy and not (vault / "a/Tomatoes.md").exists()
    assert (vault / ".trash/Tomatoes.md").read_text() == copy
    group = json.loads(done.stdout)["plan"]["op_id"]
    undone = run_cli(["undo", group, "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)


def test_a_path_link_to_other_is_repointed_to_a_keep_at_the_vault_root_whose_name_other_notes_share(
    tmp_path: Path,
) -> None:
    """Exact copies in three folders: merging a/Tomatoes.md into the root Tomatoes.md rewrites the
    links written as paths to the root form (``/Tomatoes``), since the bare name is ambiguous."""
    copy = "# Tomatoes\n\nWater them at the roots.\n"
    vault = write_vault(
        tmp_path / "v",
        {
            "Tomatoes.md": copy,
            "a/Tomatoes.md": copy,
            "b/Tomatoes.md": copy,
            "L.md": "[[a/Tomatoes]], [[a/Tomatoes#Tomatoes|care]] and [m](a/Tomatoes.md)\n",
        },
    )
    done = run_cli(["merge", "Tomatoes.md", "a/Tomatoes.md", "--yes", "--json", "--vault", str(vault)])
    assert done.exit_code == 0, done.output
    assert (
        vault / "L.md"
    ).read_text() == "[[/Tomatoes]], [[/Tomatoes#Tomatoes|care]] and [m](/Tomatoes.md)\n"
    assert resolved_targets(vault)["L.md"] == ["Tomatoes.md"] * 3


@pytest.mark.parametrize(
    "name", ["Odd#x.md", "Odd|x.md", "Odd]]x.md", "Odd^x.md", "Odd:x.md", "new|folder/N.md"]
)
def test_a_move_to_a_name_links_cannot_carry_is_refused_before_anything_is_planned(
    tmp_path: Path, name: str
) -> None:
    vault = vault_of(tmp_path)
    before = snapshot(vault)
    done = run_cli(["move", OTHER, name, "--plan-only", "--json", "--vault", str(vault)])
    assert done.exit_code != 0, done.output
    assert json.loads(done.stdout)["error"]["code"] == "invalid_input"
    assert "is not a name Obsidian accepts" in done.output
    assert snapshot(vault) == before
    assert not writes.history(vault), "nothing planned"


def test_a_merge_into_a_note_whose_name_would_cut_a_wikilink_is_refused_naming_the_link(
    tmp_path: Path,
) -> None:
    # [[My B]] rewritten to [[K#1]] would be the heading "1" of a note K: every link must still land on KEEP
    vault = write_vault(
        tmp_path / "v", {"K#1.md": "# K\n", "notes/My B.md": "# My B\n\nbee\n", "C.md": "see [[My B]]\n"}
    )
    before = snapshot(vault)
    with pytest.raises(PlanRefused, match=r"C.md:1 '\[\[My B\]\]': no link text resolves to K#1.md"):
        restructuring.write_merge(App.open(vault), "K#1.md", "notes/My B.md")
    assert snapshot(vault) == before


def test_a_note_that_is_not_utf8_elsewhere_in_the_vault_does_not_block_a_merge_or_a_move(
    tmp_path: Path,
) -> None:
    vault = vault_of(tmp_path)
    write_vault(vault, {"old/latin1.md": "caf\xe9 and [[A]]".encode("latin-1")})  # the index skips it too
    merged = run_cli(["merge", KEEP, OTHER, "--plan-only", "--json", "--vault", str(vault)])
    assert merged.exit_code == 0, merged.output
    assert sorted(json.loads(merged.stdout)["relinked"]) == sorted(LINKING)
    moved = run_cli(["move", OTHER, "Renamed.md", "--plan-only", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output


def test_a_note_that_is_not_utf8_and_names_the_note_refuses_the_move_naming_it(tmp_path: Path) -> None:
    vault = vault_of(tmp_path)
    write_vault(vault, {"old/latin1.md": "caf\xe9 and [[My B]]".encode("latin-1")})
    before = snapshot(vault)
    moved = run_cli(["move", OTHER, "Renamed.md", "--plan-only", "--json", "--vault", str(vault)])
    assert moved.exit_code != 0
    error = json.loads(moved.stdout)["error"]
    assert error["code"] == "plan_refused" and "old/latin1.md is not text" in error["message"]
    assert snapshot(vault) == before


def test_links_in_notes_excluded_from_the_index_are_repointed_too(tmp_path: Path) -> None:
    # Obsidian's "Excluded files" and .vaultlensignore keep notes out of the index, not out of Obsidian:
    # their links resolve there and must follow a move or a merge like any other
    vault = vault_of(tmp_path)
    write_vault(
        vault,
        {
            ".obsidian/app.json": '{"userIgnoreFilters": ["Archive/"]}',
            ".vaultlensignore": "*.tmp.md\n",
            "Archive/Old.md": "old [[My B#Extra]]\n",
            "drafts/x.tmp.md": "draft ![[My B]]\n",
        },
    )
    original = snapshot(vault)
    moved = run_cli(["move", OTHER, "Renamed B.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    assert (vault / "Archive/Old.md").read_text() == "old [[Renamed B#Extra]]\n"
    assert (vault / "drafts/x.tmp.md").read_text() == "draft ![[Renamed B]]\n"
    undone = run_cli(["undo", json.loads(moved.stdout)["plan"]["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)
    merged = restructuring.write_merge(App.open(vault), KEEP, OTHER)
    assert {"Archive/Old.md", "drafts/x.tmp.md"} <= set(merged.plan_of.relinked)


def test_a_link_to_other_written_after_the_plan_refuses_the_apply_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    vault = vault_of(tmp_path)
    planned = restructuring.write_merge(App.open(vault), KEEP, OTHER).plan
    write_vault(vault, {"inbox/New.md": "typed since: [[My B#Extra]] and [m](<../notes/My B.md>)\n"})
    before = snapshot(vault)
    with pytest.raises(WriteRefused, match=r"inbox/New.md links notes/My B.md since operation group"):
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    assert snapshot(vault) == before, "no note of the group written, OTHER not removed"
    again = restructuring.write_merge(App.open(vault), KEEP, OTHER)  # the new plan repoints it too
    assert "inbox/New.md" in again.plan_of.relinked
    writes.apply(vault, again.plan.entry.op_id, again.plan.proposal)
    assert (vault / "inbox/New.md").read_text() == "typed since: [[A#Extra]] and [m](<../A.md>)\n"


def test_a_templates_property_links_are_repointed_though_its_front_matter_is_no_valid_yaml(
    tmp_path: Path,
) -> None:
    # `created: {{date}}` makes the YAML invalid until the template is used; every note made from it
    # then carries `[[My B]]`, so the link must follow the move (kepano's vault has three such templates)
    vault = vault_of(tmp_path)
    template = '---\ncategories:\n  - "[[My B]]"\ncreated: {{date}}\n---\n## Log\n'
    write_vault(vault, {"Templates/B Template.md": template})
    original = snapshot(vault)
    moved = run_cli(["move", OTHER, "Renamed B.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    assert (vault / "Templates/B Template.md").read_text() == template.replace("[[My B]]", "[[Renamed B]]")
    undone = run_cli(["undo", json.loads(moved.stdout)["plan"]["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)


# A canvas showing OTHER: a file card, and a text card linking into it
CANVAS_CARDS = [
    {"id": "f1", "type": "file", "file": OTHER, "x": 0, "y": 0, "width": 400, "height": 400},
    {"id": "t1", "type": "text", "text": "see [[My B#Extra]]", "x": 0, "y": 0, "width": 9, "height": 9},
]


@pytest.mark.parametrize("node", CANVAS_CARDS)
def test_a_canvas_showing_the_note_refuses_the_move_and_the_merge_naming_it(
    tmp_path: Path, node: dict[str, object]
) -> None:
    # Obsidian's rename updates a canvas's file cards and text-card links; vaultlens never edits a canvas,
    # so going ahead would leave that card pointing at nothing
    vault = vault_of(tmp_path)
    write_vault(vault, {"Boards/map.canvas": json.dumps({"nodes": [node], "edges": []})})
    before = snapshot(vault)
    for args in (["move", OTHER, "Renamed B.md"], ["merge", KEEP, OTHER]):
        done = run_cli([*args, "--plan-only", "--json", "--vault", str(vault)])
        assert done.exit_code != 0, done.output
        error = json.loads(done.stdout)["error"]
        assert (
            error["code"] == "plan_refused"
            and f"the canvas Boards/map.canvas shows {OTHER}" in error["message"]
        )
    assert snapshot(vault) == before and not writes.history(vault)


def test_a_move_that_only_changes_letter_case_says_so_instead_of_claiming_the_note_exists(
    tmp_path: Path,
) -> None:
    vault = vault_of(tmp_path)
    done = run_cli(["move", OTHER, "notes/my b.md", "--plan-only", "--json", "--vault", str(vault)])
    assert done.exit_code != 0
    error = json.loads(done.stdout)["error"]
    assert "only in letter case" in error["message"] and "already exists" not in error["message"], error
    assert "two steps" in error["hint"]
    assert not (vault / "notes/my b.md").exists() and not writes.history(vault)


def test_a_link_to_a_carried_heading_or_block_that_keep_also_has_refuses_the_merge(tmp_path: Path) -> None:
    # Obsidian takes the first heading or block of that name: KEEP's own, not the text carried from OTHER
    vault = write_vault(
        tmp_path / "v",
        {
            "K.md": "# K\n\n## Setup\n\nKeep setup text. ^b1\n",
            "O.md": "# O\n\n## Setup\n\nTotally different setup of the other note. ^b1\n",
            "L.md": "see [[O#^b1]]\n",
            "M.md": "and [[O#Setup]]\n",
        },
    )
    before = snapshot(vault)
    block = r"L.md:1 '\[\[O#\^b1\]\]': the block \^b1 of O.md is carried over, but K.md has a block \^b1 of its own"
    with pytest.raises(PlanRefused, match=block):
        restructuring.write_merge(App.open(vault), "K.md", "O.md")
    assert snapshot(vault) == before
    (vault / "L.md").unlink()
    heading = r"M.md:1 '\[\[O#Setup\]\]': the heading 'Setup' of O.md is carried over, but K.md has its own"
    with pytest.raises(PlanRefused, match=heading):
        restructuring.write_merge(App.open(vault), "K.md", "O.md")


def test_moving_a_note_named_in_nfd_on_disk_by_its_nfc_name_repoints_its_links(tmp_path: Path) -> None:
    # macOS writes names decomposed (NFD); the user types them composed (NFC): the note is found, and
    # its links (which resolve to the name on disk) must follow it, not be left pointing at nothing
    on_disk = unicodedata.normalize("NFD", "Café.md")
    vault = write_vault(
        tmp_path / "v", {on_disk: "# Café\n\ntext\n", "L.md": "[[Café]] and [x](Caf%C3%A9.md)\n"}
    )
    original = snapshot(vault)
    moved = run_cli(["move", "Café.md", "Bistro.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.stdout)["relinked"] == ["L.md"]
    assert (vault / "L.md").read_text() == "[[Bistro]] and [x](Bistro.md)\n"
    undone = run_cli(["undo", json.loads(moved.stdout)["plan"]["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert files_of(snapshot(vault)) == files_of(original)


def test_an_encoded_link_to_a_non_ascii_name_written_after_the_plan_refuses_the_apply(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"A.md": "# A\n", "Café.md": "# Café\n\ncafé text\n"})
    planned = restructuring.write_move(App.open(vault), "Café.md", "Bistro.md").plan
    write_vault(vault, {"New.md": "written since: [m](Caf%C3%A9.md)\n"})
    before = snapshot(vault)
    with pytest.raises(WriteRefused, match=r"New.md links Café.md since operation group"):
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    assert snapshot(vault) == before


@pytest.mark.parametrize(
    ("keep_fm", "merged_fm"),
    [
        (
            "Aliases: [Ay]\nTAGS: [a]\nstatus: open\n",
            'Aliases:\n  - "Ay"\n  - "O"\n  - "Oh"\nTAGS:\n  - "a"\n  - "o"\nstatus: open\n',
        ),
        ("Alias: Ay\nTags:\n  - a\n", 'Alias:\n  - "Ay"\n  - "O"\n  - "Oh"\nTags:\n  - "a"\n  - "o"\n'),
    ],
)
def test_merged_tags_and_aliases_go_into_the_key_keep_has_under_its_spelling(
    tmp_path: Path, keep_fm: str, merged_fm: str
) -> None:
    # Obsidian reads `Aliases:` and `TAGS:` as the note's aliases and tags: a second lowercase key
    # beside them would be a duplicate property, and KEEP's own values must not be lost
    vault = write_vault(
        tmp_path / "v",
        {"K.md": f"---\n{keep_fm}---\n# K\n", "O.md": "---\ntags: [o]\naliases: [Oh]\n---\n# O\n"},
    )
    merged = run_cli(["merge", "K.md", "O.md", "--yes", "--json", "--vault", str(vault)])
    assert merged.exit_code == 0, merged.output
    assert (vault / "K.md").read_text() == f"---\n{merged_fm}---\n# K\n"


def test_a_keep_with_two_spellings_of_one_key_refuses_the_merge_naming_both(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "v",
        {"K.md": "---\ntags: [a]\nTags: [b]\n---\n# K\n", "O.md": "---\ntags: [o]\n---\n# O\n"},
    )
    before = snapshot(vault)
    done = run_cli(["merge", "K.md", "O.md", "--yes", "--json", "--vault", str(vault)])
    assert done.exit_code != 0
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "plan_refused" and "has both 'tags' and 'Tags'" in error["message"], error
    assert snapshot(vault) == before and not writes.history(vault)


@pytest.mark.parametrize("link", ["[[#Setup]]", "[[O#Setup]]", "[[#^s1]]", "[[O#^s1|the step]]"])
def test_a_link_in_carried_text_to_a_part_of_other_left_out_refuses_the_merge_naming_it(
    tmp_path: Path, link: str
) -> None:
    # OTHER's Usage section is carried, its Setup is not (KEEP has none, --sections leaves it out):
    # in KEEP the link would point at nothing
    vault = write_vault(
        tmp_path / "v",
        {
            "K.md": "# K\n\nkeep text\n",
            "O.md": f"# O\n\n## Setup\n\nInstall it. ^s1\n\n## Usage\n\nAfter {link}, run it.\n",
        },
    )
    before = snapshot(vault)
    done = run_cli(["merge", "K.md", "O.md", "--sections", "Usage", "--yes", "--json", "--vault", str(vault)])
    assert done.exit_code != 0, done.output
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "plan_refused", error
    assert f"O.md:9 {link!r}" in error["message"] and "is not in K.md after the merge" in error["message"]
    assert snapshot(vault) == before and not writes.history(vault)
    carried = run_cli(["merge", "K.md", "O.md", "--sections", "Usage", "--sections", "Setup", "--yes",
                       "--json", "--vault", str(vault)])  # fmt: skip
    assert carried.exit_code == 0, carried.output
    assert link.replace("[[O#", "[[K#") in (vault / "K.md").read_text(), "carried with it: still lands"


@pytest.mark.parametrize("node", CANVAS_CARDS)
def test_a_canvas_showing_the_note_made_after_the_plan_refuses_the_apply_before_anything_is_written(
    tmp_path: Path, node: dict[str, object]
) -> None:
    vault = vault_of(tmp_path)
    for planned in (
        restructuring.write_merge(App.open(vault), KEEP, OTHER).plan,
        restructuring.write_move(App.open(vault), OTHER, "Renamed B.md").plan,
    ):
        write_vault(vault, {"Boards/map.canvas": json.dumps({"nodes": [node], "edges": []})})
        before = snapshot(vault)
        with pytest.raises(
            WriteRefused, match=rf"Boards/map.canvas links {OTHER} since operation group"
        ) as got:
            writes.apply(vault, planned.entry.op_id, planned.proposal)
        assert "Plan the move or merge again" in (got.value.hint or "")
        assert snapshot(vault) == before, "no note of the group written, OTHER not removed"
        (vault / "Boards/map.canvas").unlink()


def test_a_note_path_typed_with_dot_slash_moves_and_merges_like_the_bare_path(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "v",
        {"K.md": "# K\n\nkeep\n", "sub/Note.md": "# Note\n\nnote text\n", "L.md": "[[Note]] and [[K]]\n"},
    )
    moved = run_cli(["move", "./sub/Note.md", "./New.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output
    assert (
        json.loads(moved.stdout)["new"] == "New.md" and (vault / "L.md").read_text() == "[[New]] and [[K]]\n"
    )
    merged = run_cli(["merge", "./K.md", "./New.md", "--yes", "--json", "--vault", str(vault)])
    assert merged.exit_code == 0, merged.output
    assert (
        json.loads(merged.stdout)["other"] == "New.md" and (vault / "L.md").read_text() == "[[K]] and [[K]]\n"
    )
    before = snapshot(vault)
    for args in (["move", "./../v/K.md", "X.md"], ["move", "K.md", "./../X.md"]):
        done = run_cli([*args, "--yes", "--json", "--vault", str(vault)])
        assert (
            done.exit_code != 0
            and "'..' segments are not allowed" in json.loads(done.stdout)["error"]["message"]
        )
    assert snapshot(vault) == before


@pytest.mark.parametrize(
    "args",
    [
        ["write", "continue", "{}N.md"],
        ["write", "flashcards", "{}N.md"],
        ["write", "split", "{}N.md"],
        ["write", "transform", "{}N.md", "--lines", "1-1", "--prompt", "shorter"],
        ["review", "{}N.md", "{}M.md"],
    ],
)
def test_every_command_taking_a_note_reads_dot_slash_as_the_bare_path(
    tmp_path: Path, args: list[str]
) -> None:
    vault = write_vault(tmp_path / "v", {"N.md": "# N\n\nSome text here.\n", "M.md": "# M\n\nOther text.\n"})
    closed = ["--set", "llm.endpoint=http://127.0.0.1:9", "--json", "--vault", str(vault)]  # nothing listens
    typed = run_cli([a.format("./") for a in args] + closed)
    bare = run_cli([a.format("") for a in args] + closed)
    assert "'.' path segments" not in typed.stdout, typed.stdout
    assert json.loads(typed.stdout) == json.loads(bare.stdout)  # the same step refuses both, or none


def test_the_audits_map_saved_in_the_vault_refuses_a_move_saying_to_delete_it_and_then_it_moves(
    tmp_path: Path,
) -> None:
    """`audit structure --out Audits` (README) saves a canvas showing every note: a move or merge is
    then refused for every note, and the refusal says what that canvas is and how to go on."""
    vault = vault_of(tmp_path)
    saved = run_cli(["audit", "structure", "--out", "Audits", "--yes", "--vault", str(vault)])
    assert saved.exit_code == 0, saved.output
    assert (vault / "Audits/vault-map.canvas").is_file()
    refused = run_cli(["move", OTHER, "archive/Renamed B.md", "--yes", "--json", "--vault", str(vault)])
    error = json.loads(refused.stdout)["error"]
    assert refused.exit_code != 0 and "Audits/vault-map.canvas" in error["message"], error
    assert "vaultlens audit structure" in error["hint"] and "delete Audits/vault-map.canvas" in error["hint"]
    (vault / "Audits/vault-map.canvas").unlink()
    moved = run_cli(["move", OTHER, "archive/Renamed B.md", "--yes", "--json", "--vault", str(vault)])
    assert moved.exit_code == 0, moved.output


def test_a_merge_rewrites_only_the_front_matter_list_that_changes(tmp_path: Path) -> None:
    """Same tags on both sides, a new alias: KEEP's `tags: [a, b]` stays byte for byte (it was
    rewritten as a block list, a change in the diff that changed nothing)."""
    keep = (
        "---\ntags: [health, rest]\naliases: [Bedtime]\ncreated: 2024-02-11\n---\n# Wind-down\n\nSame line.\n"
    )
    other = "---\ntags: [health, rest]\n---\n# Wind-down copy\n\nSame line.\n"
    vault = write_vault(tmp_path / "v", {"Wind-down.md": keep, "Wind-down copy.md": other})
    merged = run_cli(["merge", "Wind-down.md", "Wind-down copy.md", "--yes", "--json", "--vault", str(vault)])
    assert merged.exit_code == 0, merged.output
    text = (vault / "Wind-down.md").read_text(encoding="utf-8")
    assert text.startswith("---\ntags: [health, rest]\naliases:\n"), text
    assert '"Wind-down copy"' in text and "created: 2024-02-11\n---\n" in text, text
