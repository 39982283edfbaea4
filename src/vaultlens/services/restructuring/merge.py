"""Move a note, or merge one note into another, with every link of the vault repointed: one operation group.

``move OLD NEW``: the note's bytes at NEW (its own links kept pointing where they did), every link to
it rewritten (:mod:`.relink`), OLD removed. ``merge KEEP OTHER``: OTHER's sections that KEEP does not
cover are added to KEEP under a heading naming OTHER (their headings moved below it, text as
written); front matter merged (tags united; OTHER's
title and aliases become KEEP's aliases: the old name still finds KEEP in a search or a picker; under
the key KEEP has, as it spells it); every link to OTHER
repointed to KEEP (refused where its heading or block is not in KEEP after the merge); OTHER moved to
the trash the vault's Obsidian settings name (a copy at ``.trash/`` created, then OTHER removed: the
group writes new notes first and removals last, so a kill never loses it). Either is one diff, one
confirmation, applied together and undone together.

Which sections KEEP already covers is the duplicate finder's coverage where the index holds both
notes as they are now (:meth:`~vaultlens.services.finding.duplicates.coverage.Compared.sections_against`:
each compared section's best match in KEEP, by cosine or copied lines, at the duplicate threshold
less its slack); otherwise, and for a section the index does not compare, copied text alone: every
content line of the section is already a line of KEEP (a heading alone carries nothing). ``--sections`` picks OTHER's sections by heading instead.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import InvalidInput, PlanRefused
from vaultlens.safewrite import TRASH, Change
from vaultlens.services.auditing.report_files import MAP
from vaultlens.services.changing.writes import Planned
from vaultlens.services.context import VaultFiles
from vaultlens.services.drafting import draft
from vaultlens.services.restructuring.relink import (
    Edit,
    FragmentCheck,
    Repoint,
    apply_edits,
    refused,
    repoint,
)
from vaultlens.services.restructuring.split import encoded, name_problem
from vaultlens.vault.canvas import card_showing
from vaultlens.vault.hidden import visible
from vaultlens.vault.links import LinkResolver, masked_spans
from vaultlens.vault.model import Link
from vaultlens.vault.outline import extract_block_ids, extract_headings, located_links
from vaultlens.vault.parse import NotText, note_aliases, note_tags, split_front_matter
from vaultlens.vault.safepath import check_relative

__all__ = ["IndexCoverage", "MergePlan", "MovePlan", "plan_merge", "plan_move", "trash_folder"]

_LIST_KEYS = ("tags", "tag", "aliases", "alias")
_SINGULAR = {"tags": "tag", "aliases": "alias"}

# OTHER's compared sections as (first line, last line, 1-based, covered) from the index; None: not indexed as it is
IndexCoverage = Callable[[NoteSource, NoteSource], "list[tuple[int, int, bool]] | None"]


@dataclass(frozen=True, slots=True)
class MovePlan:
    old: str
    new: str
    relinked: list[str]  # the other notes whose links change
    changes: list[Change]


@dataclass(frozen=True, slots=True)
class MergePlan:
    keep: str
    other: str
    carried: list[str]  # OTHER's sections added to KEEP (their headings; "" the text before the first)
    left_out: list[str]  # OTHER's sections not carried (KEEP covers them, or --sections did not pick them)
    relinked: list[str]
    trash: str  # where OTHER goes
    trash_note: str | None  # why the trash is not the one Obsidian names (system trash unreachable)
    coverage: (
        str  # what decided the sections: "index" (the duplicate finder's), "lines", or "sections" (picked)
    )
    changes: list[Change] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MoveResult:
    plan_of: MovePlan
    plan: Planned

    def as_dict(self) -> dict[str, Any]:
        p = self.plan_of
        return {"old": p.old, "new": p.new, "relinked": p.relinked, "plan": self.plan.as_dict()}


@dataclass(frozen=True, slots=True)
class MergeResult:
    plan_of: MergePlan
    plan: Planned

    def as_dict(self) -> dict[str, Any]:
        p = self.plan_of
        return {
            "keep": p.keep,
            "other": p.other,
            "carried": p.carried,
            "left_out": p.left_out,
            "relinked": p.relinked,
            "trash": p.trash,
            "trash_note": p.trash_note,
            "coverage": p.coverage,
            "plan": self.plan.as_dict(),
        }


def _spliced(source: NoteSource, edits: Sequence[Edit]) -> bytes:
    """The note's exact bytes with only the edited link spans changed."""
    raw = source.raw
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        start, end = source.byte_span(e.start, e.end)
        raw = raw[:start] + e.new.encode("utf-8") + raw[end:]
    return raw


def _relink_vault(files: VaultFiles, notes: Sequence[str], change: Repoint, skip: set[str]) -> list[Change]:
    """Every other note whose links must change, as exact byte edits of those links."""
    out: list[Change] = []
    for path in notes:
        if path in skip:
            continue
        try:
            source = files.load(path)
        except NotText as exc:  # the index skips it too; refused only where it may link the note
            _check_unreadable(files.read(path).raw, path, str(exc), change.old)
            continue
        if b"[" not in source.raw:
            continue
        edits = repoint(source.text, path, path, change)
        if edits:
            summary = f"{len(edits)} link(s) to {change.old} now go to {change.new}"
            out.append(Change(path, _spliced(source, edits), summary, source.raw))
    return out


def _check_unreadable(raw: bytes, path: str, why: str, old: str) -> None:
    """A note that is not UTF-8 text cannot be relinked; :class:`PlanRefused` when its bytes name
    ``old`` (as written or %-encoded), since Obsidian may read a link to it there."""
    stem = _name(old).removesuffix(".md")
    names = {stem.encode("utf-8").lower(), quote(stem).encode("ascii").lower()}
    if any(name in raw.lower() for name in names):
        raise PlanRefused(
            f"Nothing planned: {path} is not text vaultlens can read ({why}) and may link {old}, so its "
            "links cannot be checked or repointed.",
            hint=f"Save {path} as UTF-8 (or move it out of the vault), then run the command again.",
            path=path,
        )


def _refuse_canvases(files: VaultFiles, everything: Sequence[str], old: str, before: LinkResolver) -> None:
    """:class:`PlanRefused` when a canvas shows ``old`` (a file card, or a link in a text card):
    vaultlens never edits a canvas, so the card would point at nothing once ``old`` is gone."""
    for path in everything:
        if not path.lower().endswith(".canvas"):
            continue
        try:
            shown = card_showing((files.root / path).read_bytes(), path, {old}, before)
        except OSError:
            continue  # unreadable: Obsidian cannot open it either
        if shown:
            audit_map = posixpath.basename(path) == MAP  # every note is a card of it
            raise PlanRefused(
                f"Nothing planned: the canvas {path} shows {old} (card {shown[0]!r}), and vaultlens "
                "never edits a canvas, so that card would point at nothing.",
                hint=f"It is the map `vaultlens audit structure` saved into the vault: delete {path}, run this "
                "again, then the audit (it writes the map anew)."
                if audit_map
                else "Move or merge the note in Obsidian, which updates the canvas too, or take it off the "
                "canvas first.",
                path=path,
            )


def _paths(files: VaultFiles) -> tuple[list[str], list[str]]:
    """Every file and note Obsidian links, the ones its settings or .vaultlensignore exclude too."""
    scan = files.scan(obsidian_sees=True)
    return [f.path for f in scan.files], [f.path for f in scan.notes]


def _name(path: str) -> str:
    return path.rpartition("/")[2]


def plan_move(files: VaultFiles, old: str, new: str) -> MovePlan:
    """The changes that move ``old`` to ``new`` with every link repointed (nothing is written)."""
    source = draft.load(files, old)
    old = source.path  # as spelled on disk (an NFC name typed for an NFD one): what links resolve to
    check_relative(new)
    if not new.lower().endswith(".md"):
        raise InvalidInput(f"The new path must be a note ending in .md, got {new!r}.")
    parts = new.split("/")
    created = [p for i, p in enumerate(parts[:-1]) if not (files.root / "/".join(parts[: i + 1])).is_dir()]
    for part in [*created, _name(new)[:-3]]:  # a folder the vault has is the user's own choice
        why = name_problem(part)
        if why:
            raise InvalidInput(
                f"Not moved: {visible(part)!r} in {visible(new)!r} is not a name Obsidian accepts ({why}).",
                hint='Obsidian refuses * " \\ / < > : | ? in a name, and links cannot name one holding # ^ [ ].',
            )
    everything, notes = _paths(files)
    before = LinkResolver(everything)
    if new != old and new.casefold() == old.casefold():  # one file on a case-insensitive disk
        raise InvalidInput(
            f"Not moved: {new} differs from {old} only in letter case, and on a disk that ignores case "
            "(macOS, Windows) the new note would be the old one.",
            hint="Move it in two steps, through another name.",
        )
    if before.resolve("/" + new, old).status != "unresolved" or os.path.lexists(files.root / new):
        raise InvalidInput(
            f"Not moved: {new} already exists.", hint="Pick a new path the vault does not have."
        )
    _refuse_canvases(files, everything, old, before)
    taken = [p for p in before.paths_by_name(_name(new)) if p != old]
    if taken:
        raise PlanRefused(
            f"Not moved: {taken[0]} already has the name {_name(new)!r}, so [[links]] by name would be ambiguous.",
            hint="Pick another name, or rename that note first.",
            path=old,
        )
    after = LinkResolver([p for p in everything if p != old] + [new])
    change = Repoint(old, new, before, after)
    moved = _spliced(source, repoint(source.text, old, new, change))
    relinked = _relink_vault(files, notes, change, {old})
    changes = [
        Change(new, moved, f"moved from {old}", None, unique_name=True),
        *relinked,
        Change(old, None, f"moved to {new}", source.raw),
    ]
    return MovePlan(old, new, [c.path for c in relinked], changes)


def trash_folder(files: VaultFiles) -> tuple[str, str | None]:
    """Where a removed note goes by ``.obsidian/app.json`` ``trashOption``: ``local`` → ``.trash/``;
    ``system`` (Obsidian's default) → ``.trash/`` as well, said in the note (vaultlens does not reach
    the desktop's trash), ``none`` (delete) → refused: a merge never deletes a note silently."""
    try:
        settings = json.loads((files.root / ".obsidian" / "app.json").read_text("utf-8"))
    except (OSError, ValueError):
        settings = {}
    option = settings.get("trashOption", "system") if isinstance(settings, dict) else "system"
    if option == "none":
        raise PlanRefused(
            'Not merged: the vault\'s Obsidian settings delete removed files for good (trashOption "none"), '
            "and a merge never deletes a note without a copy.",
            hint="Set Settings → Files and links → Deleted files to the Obsidian trash (.trash folder) or "
            "the system trash, then run the merge again.",
        )
    if option == "local":
        return TRASH, None
    return TRASH, "the system trash is not reachable from vaultlens: the note goes to .trash/ in the vault"


def _trash_path(files: VaultFiles, path: str) -> str:
    """``.trash/<name>``, or ``.trash/<stem> N.md`` when the trash already holds that name."""
    stem = _name(path).removesuffix(".md")
    n = 0
    while True:
        rel = f"{TRASH}/{stem}{f' {n}' if n else ''}.md"
        if not os.path.lexists(files.root / rel):
            return rel
        n += 1


@dataclass(frozen=True, slots=True)
class _Section:
    heading: str  # "" for the text before the first heading
    level: int  # its heading's number of ``#`` (0: the text before the first heading)
    start: int  # its lines in the note: [start, end)
    end: int
    lines: list[str]


def _sections(source: NoteSource) -> list[_Section]:
    """The note's body cut at every heading (the front matter left out)."""
    _, _, body_start, body_line = split_front_matter(source.text)
    body = source.text[body_start:]
    lines = source.text.split("\n")
    heads = extract_headings(body, masked_spans(body), body_line)
    starts = [body_line] + [h.line for h in heads]
    names = [""] + [h.text for h in heads]
    levels = [0] + [h.level for h in heads]
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        part = lines[start:end]
        if names[i] or any(line.strip() for line in part):
            out.append(_Section(names[i], levels[i], start, end, part))
    return out


def _covered(section: _Section, keep_lines: set[str], indexed: list[tuple[int, int, bool]]) -> bool:
    """By copied text where KEEP holds every line of it (a chunk of the index may span several short
    sections and be rated as a whole, new ones with copied ones), else by the index where it compares
    the section's lines (every section overlapping them covered), else by copied text."""
    content = [ln.strip() for ln in section.lines[1 if section.heading else 0 :] if ln.strip()]
    if content and all(ln in keep_lines for ln in content):
        return True
    rows = [ok for first, last, ok in indexed if first - 1 < section.end and last - 1 >= section.start]
    if rows:
        return all(rows)
    return not content  # a heading alone carries nothing


def _pick(
    other: NoteSource, keep: NoteSource, wanted: Sequence[str] | None, coverage: IndexCoverage | None
) -> tuple[list[_Section], list[str], str]:
    sections = _sections(other)
    if wanted is not None:
        names = {s.heading.casefold(): s for s in sections if s.heading}
        missing = [w for w in wanted if w.casefold() not in names]
        if missing:
            raise InvalidInput(
                f"{other.path} has no section headed {missing[0]!r}.",
                hint="Its sections: " + ", ".join(repr(s.heading) for s in sections if s.heading),
            )
        keys = {w.casefold() for w in wanted}
        carried = [s for s in sections if s.heading.casefold() in keys]
        how = "sections"
    else:
        indexed = coverage(other, keep) if coverage is not None else None
        keep_lines = {ln.strip() for ln in keep.text.split("\n") if ln.strip()}
        carried = [s for s in sections if not _covered(s, keep_lines, indexed or [])]
        how = "lines" if indexed is None else "index"
    return carried, [s.heading for s in sections if s not in carried], how


def _fragments(text: str) -> tuple[set[str], set[str]]:
    _, _, body_start, body_line = split_front_matter(text)
    body = text[body_start:]
    masked = masked_spans(body)
    heads = {h.text.casefold() for h in extract_headings(body, masked, body_line)}
    return heads, {b.casefold() for b in extract_block_ids(body, masked)}


def _yaml_list(key: str, values: Sequence[str]) -> str:
    return f"{key}:\n" + "".join(f"  - {json.dumps(v, ensure_ascii=False)}\n" for v in values)


def _list_props(fm: dict[str, Any]) -> dict[str, list[str]]:
    """The tag and alias properties under their lowercase names, every spelling's values together:
    Obsidian reads ``Tags:`` and ``Aliases:`` as ``tags`` and ``aliases``."""
    out: dict[str, list[str]] = {}
    for key, value in fm.items():
        if key.casefold() in _LIST_KEYS:
            out.setdefault(key.casefold(), []).extend(note_aliases({"aliases": value}))
    return out


def _list_keys(keep: NoteSource, lines: Sequence[str]) -> dict[str, str]:
    """KEEP's spelling of the key each list is written under (``tags``/``aliases``: plural, else
    singular, as KEEP has it); :class:`PlanRefused` where two keys differ only in letter case, since
    Obsidian reads one of them and vaultlens cannot tell which."""
    spelled: dict[str, str] = {}
    for ln in lines:
        top = re.match(r"([^\s#:][^:]*):", ln)
        key = top.group(1).strip() if top else ""
        if key.casefold() not in _LIST_KEYS:
            continue
        if key.casefold() in spelled:
            raise PlanRefused(
                f"Not merged: the front matter of {keep.path} has both {spelled[key.casefold()]!r} and "
                f"{key!r}, and Obsidian reads only one of them, so the merge cannot tell which to add to.",
                hint=f"Keep one of the two in {keep.path} (its values united), then run the merge again.",
                path=keep.path,
            )
        spelled[key.casefold()] = key
    return {group: spelled.get(group, spelled.get(one, group)) for group, one in _SINGULAR.items()}


def _merged_front_matter(keep: NoteSource, other: NoteSource, text: str) -> str:
    """``text`` (KEEP's) with tags united and OTHER's title and aliases among the aliases, written
    where KEEP has them and under its spelling of the key; the other properties stay as written."""
    fm_keep, _, body_start, _ = split_front_matter(text)
    fm_other, _, _, _ = split_front_matter(other.text)
    lines = text[:body_start].split("\n")
    closing = max((i for i, ln in enumerate(lines) if ln.rstrip() in ("---", "...")), default=0)
    spelling = _list_keys(keep, lines[1:closing] if body_start else [])
    props_keep = _list_props(fm_keep)
    had_tags, had_aliases = note_tags(props_keep, "", []), note_aliases(props_keep)
    tags = _united(had_tags, note_tags(_list_props(fm_other), "", []))
    own = _name(keep.path).removesuffix(".md").casefold()
    titles = [other.note.title, _name(other.path).removesuffix(".md"), *note_aliases(_list_props(fm_other))]
    aliases = _united(list(had_aliases), [t for t in titles if t.casefold() != own])
    changed = {"tags": tags != list(had_tags), "aliases": aliases != list(had_aliases)}
    if not any(changed.values()):
        return text
    # only a list that changes is written anew: the other stays as KEEP wrote it (`tags: [a, b]`)
    blocks = {
        group: _yaml_list(spelling[group], values)
        for group, values in (("tags", tags), ("aliases", aliases))
        if changed[group]
    }
    if not body_start:
        return "---\n" + "".join(blocks.values()) + f"---\n{text}"
    kept: list[str] = []
    skipping = False
    for ln in lines[1:closing]:
        top = re.match(r"([^\s#:][^:]*):", ln)
        if top:
            key = top.group(1).strip().casefold()
            group = "tags" if key in ("tags", "tag") else "aliases"
            skipping = key in _LIST_KEYS and changed[group]
            if skipping and blocks.get(group):  # the list goes where KEEP had it
                kept.append(blocks.pop(group))
        elif not (ln.startswith((" ", "\t", "-")) or not ln.strip()):
            skipping = False
        if not skipping:
            kept.append(ln + "\n")
    rest = "".join(b for b in blocks.values())
    return lines[0] + "\n" + "".join(kept) + rest + "\n".join(lines[closing:]) + text[body_start:]


def _united(first: Sequence[str], second: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for v in [*first, *second]:
        if v and v.casefold() not in seen:
            seen.add(v.casefold())
            out.append(v)
    return out


def plan_merge(
    files: VaultFiles,
    keep_path: str,
    other_path: str,
    sections: Sequence[str] | None,
    coverage: IndexCoverage | None = None,
) -> MergePlan:
    """The changes that merge ``other_path`` into ``keep_path`` (nothing is written)."""
    keep, other = draft.load(files, keep_path), draft.load(files, other_path)
    if keep.path == other.path:
        raise InvalidInput("KEEP and OTHER are the same note.")
    folder, trash_note = trash_folder(files)
    everything, notes = _paths(files)
    before = LinkResolver(everything)
    _refuse_canvases(files, everything, other.path, before)
    after = LinkResolver([p for p in everything if p != other.path])
    carried, left_out, how = _pick(other, keep, sections, coverage)
    own = Repoint(other.path, keep.path, before, after)
    other_text = apply_edits(other.text, repoint(other.text, other.path, keep.path, own))
    added = _carried_text(other.path, other_text.split("\n"), carried)  # an edit never spans a line break
    heads, blocks = _fragments(keep.text + added)
    own_heads, own_blocks = _fragments(keep.text)  # KEEP's own come first: Obsidian takes the first
    new_heads, new_blocks = _fragments(added)

    def lacks(link: Link) -> str | None:
        if link.heading is not None:
            last = link.heading.split("#")[-1].strip()
            if last.casefold() not in heads:
                return f"the heading {last!r} of {other.path} is not in {keep.path} after the merge"
            if last.casefold() in new_heads and last.casefold() in own_heads:
                return (
                    f"the heading {last!r} of {other.path} is carried over, but {keep.path} has its own "
                    f"{last!r} first, where the link would land"
                )
        if link.block is not None:
            if link.block.casefold() not in blocks:
                return f"the block ^{link.block} of {other.path} is not in {keep.path} after the merge"
            if link.block.casefold() in new_blocks and link.block.casefold() in own_blocks:
                return (
                    f"the block ^{link.block} of {other.path} is carried over, but {keep.path} has a block "
                    f"^{link.block} of its own, where the link would land"
                )
        return None

    _check_own_links(other, carried, before, lacks)
    change = Repoint(other.path, keep.path, before, after, lacks)
    keep_text = apply_edits(keep.text, repoint(keep.text, keep.path, keep.path, change))
    if added:
        keep_text += ("" if keep_text.endswith("\n") else "\n") + added
    keep_text = _merged_front_matter(keep, other, keep_text)
    relinked = _relink_vault(files, notes, change, {keep.path, other.path})
    trash = _trash_path(files, other.path) if folder == TRASH else folder
    summary = f"{other.path} merged in ({len(carried)} section(s) added, front matter merged)"
    keep_raw = encoded(keep_text, keep, keep.bom)
    changes = [
        Change(trash, other.raw, f"{other.path} moved to the trash", None),
        # KEEP already holds all of OTHER (an exact copy of the same name): it is left as it is
        *([Change(keep.path, keep_raw, summary, keep.raw)] if keep_raw != keep.raw else []),
        *relinked,
        Change(other.path, None, f"merged into {keep.path}; its copy is {trash}", other.raw),
    ]
    return MergePlan(
        keep.path, other.path, [s.heading for s in carried], left_out, [c.path for c in relinked], trash,
        trash_note, how, changes,
    )  # fmt: skip


def _check_own_links(
    other: NoteSource, carried: list[_Section], before: LinkResolver, lacks: FragmentCheck
) -> None:
    """:class:`PlanRefused` naming each link of OTHER's carried text to a heading or block of OTHER
    itself (``[[#Setup]]``, ``[[OTHER#^b]]``) that would not land on it in KEEP: the same rule as for
    links from other notes (a section left out is not there, and KEEP's own of that name comes first)."""
    problems = []
    for loc in located_links(other.text, other.path):
        link = loc.link
        if link.heading is None and link.block is None:
            continue
        if not any(s.start <= link.line < s.end for s in carried):
            continue  # in a section left out: it goes to the trash with OTHER
        if link.target:
            was = before.resolve(link.target, other.path)
            if was.status != "resolved" or was.path != other.path:
                continue
        missing = lacks(link)
        if missing:
            problems.append(f"{other.path}:{link.line + 1} {other.text[loc.start : loc.end]!r}: {missing}")
    if problems:
        raise refused(problems, other.path)


_MERGED_LEVEL = 2  # the level of the heading that names OTHER in KEEP


def _carried_text(path: str, lines: list[str], carried: list[_Section]) -> str:
    """OTHER's carried sections (from its repointed lines), under a heading naming where they came
    from, their headings moved below it (an ``# H1`` of OTHER is not a second title of KEEP)."""
    if not carried:
        return ""
    levels = [s.level for s in carried if s.level]
    shift = max(0, _MERGED_LEVEL + 1 - min(levels)) if levels else 0
    parts = []
    for s in carried:
        part = lines[s.start : s.end]
        if s.level:
            part = [_deeper(part[0], s.level, shift), *part[1:]]
        parts.append("\n".join(part).strip("\n"))
    folder = posixpath.dirname(path)
    where = _name(path).removesuffix(".md") + (f" ({folder})" if folder else "")
    return f"\n{'#' * _MERGED_LEVEL} Merged from {where}\n\n" + "\n\n".join(parts) + "\n"


def _deeper(line: str, level: int, shift: int) -> str:
    """An ATX heading line ``shift`` levels deeper (6 at most): only its run of ``#`` changes, so
    its text, and every ``[[KEEP#Heading]]`` link to it, stays as written."""
    indent = len(line) - len(line.lstrip(" "))
    return line[:indent] + "#" * min(level + shift, 6) + line[indent + level :]
