"""The transform presets: one table, shared by `write transform --preset` and `write batch --preset`.

Each preset is an instruction for the model about the selected text only; the prompt frames the
selection as untrusted data, so these sentences are the only orders the model gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultlens.errors import InvalidInput

__all__ = ["PRESETS", "Preset", "instruction_for", "preset"]


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    title: str  # a few words for lists and journal summaries
    instruction: str


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "summarize",
            "summarize",
            "Summarize the text in a few sentences. Keep its key facts, names and numbers; add nothing.",
        ),
        Preset(
            "simplify",
            "simplify",
            "Rewrite the text in simpler, shorter sentences with plain words. Keep every fact and its meaning.",
        ),
        Preset(
            "expand",
            "expand",
            "Expand the text: explain its points more fully and make implicit steps explicit. Add no facts "
            "that the text does not support.",
        ),
        Preset(
            "fix-grammar",
            "fix grammar",
            "Fix spelling, grammar and punctuation only. Keep the wording, the meaning, the language and "
            "the Markdown formatting otherwise unchanged.",
        ),
        Preset(
            "translate-en",
            "translate to English",
            "Translate the text into English. Keep the Markdown formatting, links, tags and code unchanged.",
        ),
        Preset(
            "translate-ru",
            "translate to Russian",
            "Translate the text into Russian. Keep the Markdown formatting, links, tags and code unchanged.",
        ),
        Preset(
            "to-list",
            "to a list",
            "Turn the text into a Markdown bullet list, one point per item. Keep every fact; add none.",
        ),
        Preset(
            "to-table",
            "to a table",
            "Turn the text into a Markdown table with a header row. Keep every fact; add none.",
        ),
    )
}


def preset(name: str) -> Preset:
    """The preset called ``name``, or :class:`InvalidInput` listing the known ones."""
    found = PRESETS.get(name.strip().lower())
    if found is None:
        raise InvalidInput(
            f"No preset {name!r}.",
            hint="Choose one of: " + ", ".join(PRESETS) + ', or give your own with --prompt "...".',
        )
    return found


def instruction_for(preset_name: str | None, prompt: str | None) -> tuple[str, str]:
    """(instruction, short title) from exactly one of a preset name and a user's own prompt."""
    if (preset_name is None) == (prompt is None):
        raise InvalidInput(
            "Give exactly one of --preset NAME and --prompt TEXT.",
            hint="Presets: " + ", ".join(PRESETS) + ".",
        )
    if preset_name is not None:
        chosen = preset(preset_name)
        return chosen.instruction, chosen.title
    assert prompt is not None
    text = prompt.strip()
    if not text:
        raise InvalidInput("The --prompt is empty.", hint='Say what to do, e.g. --prompt "make it formal".')
    return text, "custom prompt"
