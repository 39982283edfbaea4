"""A Dataview query for a question: the vault's facts to the model, its DQL checked before it is shown.

Only names leave the machine here (front-matter keys with their value types, tags, folders) and
the question; no note text. A query that fails :func:`query_problems` is refused with
:class:`~vaultlens.errors.InvalidQuery` listing what is wrong; one that passes can be placed in a
```` ```dataview ```` block of a note (:func:`placed`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import InvalidInput, InvalidQuery
from vaultlens.llm.base import LLMProvider, Usage
from vaultlens.services.context import VaultFiles
from vaultlens.services.drafting.dataview.check import query_problems
from vaultlens.services.drafting.dataview.fields import VaultFields
from vaultlens.services.drafting.draft import (
    Prompt,
    Splice,
    ask_json,
    build_prompt,
    insert_block,
    insertion_point,
    object_schema,
)

__all__ = ["Generated", "generate", "placed", "prepare"]

MAX_QUESTION = 1_000
SCHEMA = object_schema(query={"type": "string", "minLength": 4}, explanation={"type": "string"})
RULES = """- Write one Dataview query (DQL) that answers the user's question about their vault. It starts \
with TABLE, LIST, TASK or CALENDAR; FROM names only folders, #tags and [[notes]] listed in the vault \
facts; it uses only the fields listed there and Dataview's implicit file.* fields (file.name, \
file.folder, file.ctime, file.mtime, file.tags, file.inlinks, ...). Never invent a field, tag or folder.
- "query" holds the DQL only (no code fence); "explanation" says in one sentence what it lists."""
_FENCE = re.compile(r"^```(?:dataview)?\s*\n?(.*?)\n?```$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Generated:
    query: str
    explanation: str
    usage: Usage | None


def prepare(question: str, fields: VaultFields) -> Prompt:
    """The vault's facts as data and the question as the task."""
    q = " ".join(question.split())
    if not q:
        raise InvalidInput("The question is empty.", hint='Try: vaultlens write dataview "books I rated 5"')
    if len(q) > MAX_QUESTION:
        raise InvalidInput(f"The question has {len(q):,} characters; at most {MAX_QUESTION:,} are accepted.")
    facts = json.dumps(fields.facts(), ensure_ascii=False, indent=1)
    parts = [("Vault facts (front-matter fields with value types, tags, folders), JSON:", facts)]
    task = f'Question: {q}\nReturn {{"query": "...", "explanation": "..."}}.'
    return build_prompt(RULES, parts, task)


def generate(
    files: VaultFiles,
    provider: LLMProvider,
    prompt: Prompt,
    fields: VaultFields,
    consent: bool,
    remember: bool = True,
) -> Generated:
    """Send the prompt (after consent) and return the query, refused when it fails the check."""
    what = "the names of your vault's front-matter fields (with value types), tags and folders, and your question"
    answer, usage = ask_json(files, provider, prompt, SCHEMA, what, consent, remember)
    query = str(answer["query"]).strip()
    fenced = _FENCE.match(query)
    if fenced:
        query = fenced.group(1).strip()
    problems = query_problems(query, fields)
    if problems:
        raise InvalidQuery(
            "The model's Dataview query was refused: " + "; ".join(problems) + f".\nQuery:\n{query}",
            hint="Nothing was shown as an answer or written. Ask again in other words, name the field "
            "you mean, or try a larger model (--set llm.model=...).",
        )
    return Generated(query, str(answer["explanation"]).strip(), usage)


def placed(source: NoteSource, after_line: int | None, query: str) -> Splice:
    """The query as a ```` ```dataview ```` block at the end of the note (or after ``after_line``)."""
    return insert_block(source, insertion_point(source, after_line), f"```dataview\n{query}\n```")
