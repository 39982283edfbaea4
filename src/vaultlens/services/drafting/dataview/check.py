"""A DQL check in code, run on every generated query before anyone sees it.

Not a full Dataview parser: it tokenises the query and checks what a model gets wrong. The query
type (TABLE [WITHOUT ID], LIST, TASK, CALENDAR); the clauses (FROM, WHERE, SORT, GROUP BY, FLATTEN,
LIMIT); FROM sources that exist in the vault (``"folder"`` or note path, ``#tag``, ``[[link]]``,
``outgoing([[link]])``, joined by and / or / ``-`` and parentheses); and every field a query names
exists: a front-matter key of the vault, an implicit ``file.*`` field (task fields in TASK
queries), or a name the query defines itself (``AS name``, ``GROUP BY`` → ``key`` / ``rows``,
lambda parameters). Function names are not fields; ``date(...)`` and ``dur(...)`` hold literals.
"""

from __future__ import annotations

import re

from vaultlens.services.drafting.dataview.fields import VaultFields

__all__ = ["QUERY_TYPES", "query_problems"]

QUERY_TYPES = ("TABLE", "LIST", "TASK", "CALENDAR")
CLAUSES = ("FROM", "WHERE", "SORT", "GROUP", "FLATTEN", "LIMIT")
FILE_FIELDS = frozenset(
    [
        "name",
        "folder",
        "path",
        "ext",
        "link",
        "size",
        "ctime",
        "cday",
        "mtime",
        "mday",
        "tags",
        "etags",
        "inlinks",
        "outlinks",
        "aliases",
        "tasks",
        "lists",
        "frontmatter",
        "day",
        "starred",
    ]
)
TASK_FIELDS = frozenset(
    "status checked completed fullyCompleted text visual line lineCount path section tags outlinks link "
    "children task annotated parent blockId created due completion start scheduled header subtasks real "
    "list".casefold().split()
)
WORDS = frozenset(
    [
        "and",
        "or",
        "not",
        "asc",
        "desc",
        "ascending",
        "descending",
        "as",
        "true",
        "false",
        "null",
        "without",
        "id",
        "by",
    ]
)
LITERAL_CALLS = frozenset({"date", "dur"})
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'  # a string
    r"|\[\[[^\]\n]*\]\]"  # a link
    r"|#[^\s,()\"]+"  # a tag
    r"|=>|!=|<=|>="
    r"|[^\W\d](?:[\w-]*\w)?(?:\.[^\W\d](?:[\w-]*\w)?)*"  # an identifier, dotted
    r"|\d+(?:\.\d+)?"
    r"|\S"
)


def _tokens(query: str) -> list[str]:
    return _TOKEN.findall(query)


def _is_name(tok: str) -> bool:
    return bool(re.match(r"[^\W\d]", tok))


def _clauses(tokens: list[str]) -> list[tuple[str, list[str]]]:
    """(clause keyword, its tokens); the first item is the query type with its own expressions."""
    out: list[tuple[str, list[str]]] = [(tokens[0].upper(), [])]
    i = 1
    while i < len(tokens):
        word = tokens[i].upper()
        if word in CLAUSES:
            if word == "GROUP" and i + 1 < len(tokens) and tokens[i + 1].upper() == "BY":
                i += 1
            out.append((word, []))
        else:
            out[-1][1].append(tokens[i])
        i += 1
    return out


def _defined(tokens: list[str]) -> set[str]:
    """Names the query defines: after AS, and lambda parameters (``x =>``, ``(a, b) =>``)."""
    names = {
        tokens[i + 1].casefold()
        for i, t in enumerate(tokens[:-1])
        if t.upper() == "AS" and _is_name(tokens[i + 1])
    }
    for i, t in enumerate(tokens):
        j = i - 1
        if t != "=>" or j < 0:
            continue
        if tokens[j] != ")":
            names.add(tokens[j].casefold())
            continue
        while j > 0 and tokens[j - 1] != "(":
            j -= 1
            names.add(tokens[j].casefold())
    return names


def _closing(tokens: list[str], opening: int) -> int:
    """The index of the ``)`` matching the ``(`` at ``opening`` (the last token when unbalanced)."""
    depth = 0
    for k in range(opening, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[k], 0)
        if depth == 0:
            return k
    return len(tokens) - 1


def _source_problems(tokens: list[str], vault: VaultFields) -> list[str]:
    problems = []
    for tok in tokens:
        if tok.startswith('"'):
            if not vault.has_folder(tok[1:-1]):
                problems.append(f"FROM {tok}: no such folder or note in the vault")
        elif tok.startswith("#"):
            if not vault.has_tag(tok):
                problems.append(f"FROM {tok}: no note has this tag")
        elif tok.startswith("[["):
            if not vault.has_link(tok[2:-2]):
                problems.append(f"FROM {tok}: the link resolves to no note of the vault")
        elif tok.casefold() not in ("and", "or", "outgoing", "-", "(", ")"):
            problems.append(
                f'FROM accepts only "folders", #tags and [[links]] (joined by and, or, -), not {tok!r}'
            )
    if not tokens:
        problems.append("FROM names no source")
    return problems


def _field_problem(name: str, vault: VaultFields, defined: set[str], task: bool) -> str | None:
    parts = name.split(".")
    if parts[0].casefold() == "this":
        parts = parts[1:] or ["file"]
    elif parts[0].casefold() in ("row", "rows") and len(parts) > 1:
        parts = parts[1:]
    head = parts[0]
    if head.casefold() == "file":
        if len(parts) > 1 and parts[1] not in FILE_FIELDS:
            return f"file.{parts[1]} is not a Dataview file field"
        return None
    if head.casefold() in defined or head.casefold() in ("key", "rows", "row"):
        return None
    if task and head.casefold() in TASK_FIELDS:
        return None
    if vault.has_field(head):
        return None
    return f"field {head!r} is not a front-matter key of any note in the vault"


def _expression_problems(tokens: list[str], vault: VaultFields, defined: set[str], task: bool) -> list[str]:
    problems: list[str] = []
    i = 0
    while i < len(tokens):
        tok, i = tokens[i], i + 1
        if not _is_name(tok) or tok.casefold() in WORDS:
            continue
        if i < len(tokens) and tokens[i] == "(":  # a function: its name is no field
            if tok.casefold() in LITERAL_CALLS:  # date(today), dur(1 day): literals inside
                i = _closing(tokens, i) + 1
            continue
        if i >= 2 and tokens[i - 2].upper() == "AS":
            continue
        why = _field_problem(tok, vault, defined, task)
        if why and why not in problems:
            problems.append(why)
    return problems


def query_problems(query: str, vault: VaultFields) -> list[str]:
    """Everything wrong with ``query`` for this vault (empty: it passes the check)."""
    tokens = _tokens(query)
    if not tokens or tokens[0].upper() not in QUERY_TYPES:
        first = tokens[0] if tokens else ""
        return [f"a query starts with {', '.join(QUERY_TYPES)}, not {first!r}"]
    if "```" in query:
        return ["a query cannot contain ``` (it would end its dataview block)"]
    clauses = _clauses(tokens)
    kind, head = clauses[0]
    task = kind == "TASK"
    defined = _defined(tokens)
    problems: list[str] = []
    if kind == "CALENDAR" and not head:
        problems.append("CALENDAR needs a date field, e.g. CALENDAR file.ctime")
    if kind == "TASK" and head:
        problems.append("TASK takes no expression before FROM")
    problems += _expression_problems(head, vault, defined, task)
    seen: set[str] = set()
    for word, body in clauses[1:]:
        if word in seen and word in ("FROM",):
            problems.append("FROM appears twice")
        seen.add(word)
        if word == "FROM":
            problems += _source_problems(body, vault)
        elif word == "LIMIT":
            if len(body) != 1 or not body[0].isdigit():
                problems.append("LIMIT takes one whole number")
        else:
            if not body:
                problems.append(f"{word} has no expression")
            problems += [p for p in _expression_problems(body, vault, defined, task) if p not in problems]
    return problems
