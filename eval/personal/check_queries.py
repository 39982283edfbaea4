#!/usr/bin/env python3
"""Checks for a bilingual queries file in ``eval queries`` form (stdlib only).

    python3 eval/personal/check_queries.py                     # eval/personal/queries.jsonl
    python3 eval/personal/check_queries.py eval/examples/queries.jsonl

``vault`` is relative to the folder above the queries file's folder (as ``vaultlens eval
queries`` resolves it); ``relevant`` and ``primary`` are relative to the vault.

Checks (exit 0 when all pass, 1 otherwise):
  1. schema: unique ids, the fields present, lang in {en, ru} and matching the query's script,
     primary first in relevant, split in {tune, held}, no absolute path or ``..`` in note paths;
  2. every relevant note exists;
  3. directions: ``cross_lingual`` is true exactly when the primary note's language (its
     Cyrillic/Latin letter mix) differs from the query's;
  4. no title word: no content word of a query may share a stem with a word of its primary
     note's title (file name, front matter ``title`` and every alias), where a stem drops
     common Russian or English endings and keeps the first 5 (Cyrillic) or 4 (Latin) letters,
     and a word of 3+ letters that begins another (``кот``/``котик``) counts as the same;
  5. counts: each group (en, ru, en→ru, ru→en) holds ``--min-group`` queries or more
     (18 by default), cross-language queries are at least a third of the file, and each group
     splits evenly between tune and held (at most one apart).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

WORD = re.compile(r"[0-9A-Za-zÀ-ɏЀ-ӿ]+")
CYR = re.compile(r"[Ѐ-ӿ]")
LAT = re.compile(r"[A-Za-z]")

_STOP_RU = """
и в во не что он на я с со как а то все всё она так его но да ты к у же вы за бы по только ее её мне было
вот от меня еще ещё нет о об из ему теперь когда даже ну ли если уже или ни быть был до вас нибудь опять уж
вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без
будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой какие какая каких совсем ним
здесь этом один почти мой моя моё мои моём моей тем чтобы нее сейчас были куда зачем всех никогда можно при
наконец два об другой хоть после над больше тот через эти нас про всего них много разве три эту впрочем
хорошо свою этой перед иногда лучше чуть том нельзя такой им более всегда конечно всю между это
который которая которые которых либо вроде типа вообще очень просто
"""
_STOP_EN = """
a an the and or of to in on for with without at by from into about as is are was were be been being it its
this that these those i me my we our you your he she they them their his her what which who whom how why when
where there here do does did can could should would will shall may might must not no yes so than then too very
just also any some all each every more most other such only own same both few again once up down out over under
vs via per like one s t
"""
_RU_ENDINGS = """
ами ями ого его ому ему ыми ими ией иям иях ать ять ить еть ешь ишь ете ите ует уют ают яют
ой ей ий ый ая яя ое ее ые ие ых их ым им ом ем ам ям ах ях ов ев ью ия ию ье ья ть ся сь
а я о е ы и у ю ь й
"""
STOP_RU, STOP_EN = set(_STOP_RU.split()), set(_STOP_EN.split())
RU_ENDINGS = sorted(_RU_ENDINGS.split(), key=len, reverse=True)
EN_ENDINGS = ["ing", "ies", "ed", "es", "s"]
GROUPS = ("en→en", "ru→ru", "en→ru", "ru→en")


def norm(word: str) -> str:
    return word.lower().replace("ё", "е")


def stem(word: str) -> str:
    """The crude stem compared: endings dropped (keeping 3 letters), then a 5/4-letter prefix."""
    w = norm(word)
    cyr = bool(CYR.search(w))
    for end in RU_ENDINGS if cyr else EN_ENDINGS:
        if w.endswith(end) and len(w) - len(end) >= 3:
            w = w[: -len(end)]
            break
    return w[:5] if cyr else w[:4]


def content_words(text: str) -> list[str]:
    return [w for w in (norm(x) for x in WORD.findall(text)) if w not in STOP_RU and w not in STOP_EN]


def same_word(a: str, b: str) -> bool:
    """Whether two words count as one title word: equal stems, or a 3+ letter word (or stem)
    beginning the other (``кот``/``котёнок``, ``tea``/``teapot``); words under 3 letters only
    when equal."""
    if min(len(a), len(b)) < 3:
        return a == b
    if bool(CYR.search(a)) != bool(CYR.search(b)):
        return False
    sa, sb = stem(a), stem(b)
    short, other = sorted((a, b), key=len)
    return sa == sb or other.startswith(short) or sb.startswith(sa) or sa.startswith(sb) and len(sb) >= 3


def front_matter(text: str) -> tuple[str | None, list[str]]:
    """(title, aliases) from a YAML front matter, crudely (flow and block lists)."""
    m = re.match(r"---\r?\n(.*?)\r?\n---", text, re.S)
    if not m:
        return None, []
    title, aliases = None, []
    lines = m.group(1).splitlines()
    for i, line in enumerate(lines):
        if mm := re.match(r"title:\s*(.*)$", line):
            title = mm.group(1).strip().strip("\"'")
        if mm := re.match(r"aliases:\s*(.*)$", line):
            rest = mm.group(1).strip()
            if rest.startswith("["):
                aliases += [x.strip().strip("\"'") for x in rest.strip("[]").split(",") if x.strip()]
            elif rest:
                aliases.append(rest.strip("\"'"))
            else:
                for nxt in lines[i + 1 :]:
                    if not (m2 := re.match(r"\s+-\s*(.*)$", nxt)):
                        break
                    aliases.append(m2.group(1).strip().strip("\"'"))
    return title, aliases


def note_language(text: str) -> str:
    body = re.sub(r"^---\r?\n.*?\r?\n---", "", text, flags=re.S)
    body = re.sub(r"```.*?```", "", body, flags=re.S)
    return "ru" if len(CYR.findall(body)) > len(LAT.findall(body)) else "en"


def query_language(text: str) -> str:
    return "ru" if len(CYR.findall(text)) > len(LAT.findall(text)) else "en"


def check(path: Path, min_group: int) -> list[str]:
    errors: list[str] = []
    base = path.resolve().parent.parent
    rows = [
        (n, json.loads(line))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.strip()
    ]
    ids: set[str] = set()
    groups: Counter[str] = Counter()
    splits: Counter[tuple[str, str]] = Counter()
    for n, q in rows:
        where = f"line {n} ({q.get('id')})"
        missing = [
            k
            for k in ("id", "vault", "lang", "query", "relevant", "primary", "cross_lingual", "split")
            if k not in q
        ]
        if missing:
            errors.append(f"{where}: missing {', '.join(missing)}")
            continue
        if q["id"] in ids:
            errors.append(f"{where}: duplicate id")
        ids.add(q["id"])
        if q["lang"] not in ("en", "ru") or query_language(q["query"]) != q["lang"]:
            errors.append(f"{where}: lang {q['lang']!r} does not match the query's script")
        if q["split"] not in ("tune", "held"):
            errors.append(f"{where}: split must be tune or held")
        if not q["relevant"] or q["relevant"][0] != q["primary"]:
            errors.append(f"{where}: primary must be the first relevant note")
        vault = base / q["vault"]
        texts = {}
        for rel in q["relevant"]:
            if rel.startswith("/") or ".." in Path(rel).parts:
                errors.append(f"{where}: note path {rel!r} must be relative, inside the vault")
            elif not (vault / rel).is_file():
                errors.append(f"{where}: {rel} does not exist in {vault}")
            else:
                texts[rel] = (vault / rel).read_text(encoding="utf-8-sig")
        if q["primary"] not in texts:
            continue
        text = texts[q["primary"]]
        title, aliases = front_matter(text)
        title_words = content_words(" ".join([Path(q["primary"]).stem, title or "", *aliases]))
        for w in content_words(q["query"]):
            if hits := [t for t in title_words if same_word(w, t)]:
                errors.append(f"{where}: query word {w!r} matches title word {hits[0]!r} of {q['primary']}")
        direction = f"{q['lang']}→{note_language(text)}"
        if (direction in ("en→ru", "ru→en")) != bool(q["cross_lingual"]):
            errors.append(f"{where}: cross_lingual is {q['cross_lingual']} but the direction is {direction}")
        groups[direction] += 1
        splits[(direction, q["split"])] += 1
    for g in GROUPS:
        if groups[g] < min_group:
            errors.append(f"group {g}: {groups[g]} queries, fewer than {min_group}")
        if abs(splits[(g, "tune")] - splits[(g, "held")]) > 1:
            errors.append(f"group {g}: tune {splits[(g, 'tune')]} vs held {splits[(g, 'held')]}")
    cross = groups["en→ru"] + groups["ru→en"]
    if rows and cross * 3 < len(rows):
        errors.append(f"{cross} of {len(rows)} queries cross languages, under a third")
    summary = ", ".join(f"{g} {groups[g]} (tune {splits[(g, 'tune')]})" for g in GROUPS)
    print(f"{path}: {len(rows)} queries: {summary}")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=Path(__file__).with_name("queries.jsonl"))
    parser.add_argument("--min-group", type=int, default=18, help="fewest queries a group may hold")
    args = parser.parse_args()
    errors = check(args.file, args.min_group)
    for e in errors:
        print(e)
    print("all checks passed" if not errors else f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
