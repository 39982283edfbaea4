"""Asking the vault: one question (Ask) or a conversation (chat), answered only from the notes.

The pipeline lives in :mod:`vaultlens.services.asking.ask` and :mod:`vaultlens.services.asking.chat`; these
verbs wire it to an App: the index and the files to read, the configured model, and consent
before a remote model receives note text (:class:`~vaultlens.errors.ConsentRequired` otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vaultlens.errors import translated_errors
from vaultlens.llm.base import LLMProvider, OnText, prompt_text
from vaultlens.services.app import App
from vaultlens.services.asking import ask as asking
from vaultlens.services.asking import chat
from vaultlens.services.asking.ask import AskAnswer, Source
from vaultlens.services.asking.chat import ChatSession, ChatTurn, Exchange
from vaultlens.services.consent import require_llm_consent, require_llm_consent_shown

__all__ = [
    "AskAnswer",
    "ChatSession",
    "ChatTurn",
    "Exchange",
    "Source",
    "ask",
    "ask_turn",
    "chat_turn",
    "open_chat",
]


def ask(
    app: App,
    question: str,
    on_text: OnText | None = None,
    consent: bool = False,
    extractive: bool = False,
    provider: LLMProvider | None = None,
    remember: bool = True,
    untrusted: bool = False,
) -> AskAnswer:
    """Answer ``question`` from the vault only, citing sources (``extractive``: passages, no model).

    ``provider``: a model to use instead of the configured one (the caller closes it).
    ``remember=False`` (a server's request): ``consent`` covers this call only; it is not stored
    and a grant remembered from the command line does not count. ``untrusted``: a program's
    question, refused when longer than search.max_query_chars rather than cut."""
    if untrusted:
        app.settings.search.refuse_long_query(question)
    with translated_errors(path=app.index_dir):
        files = app.files()
        if extractive:
            return asking.extractive(asking.gather(app, files, app.settings.search, question))
        model = provider or app.llm()
        try:
            require_llm_consent(files, model, consent, asking.WHAT_IS_SENT, remember)
            context = asking.gather(app, files, app.settings.search, question)  # index released here
            return asking.answer(context, model, on_text)
        finally:
            if provider is None:
                model.close()


@translated_errors()
def open_chat(app: App, extractive: bool = False) -> ChatSession:
    """A conversation over Ask with the configured model (none when ``extractive``); close it when done."""
    model = None if extractive else app.llm()

    def answer(question: str, on_text: OnText | None, consent: bool) -> AskAnswer:
        return ask(app, question, on_text, consent, extractive=model is None, provider=model)

    def require(consent: bool) -> None:
        if model is not None:
            require_llm_consent(app.files(), model, consent, asking.WHAT_IS_SENT)

    return ChatSession(answer, require, model, app.settings.llm.history_turns)


@translated_errors()
def chat_turn(
    session: ChatSession, question: str, on_text: OnText | None = None, consent: bool = False
) -> ChatTurn:
    """One follow-up: rewritten into a standalone question (with the model), searched, answered."""
    return session.ask(question, on_text, consent)


def ask_turn(
    app: App,
    question: str,
    history: Sequence[Exchange] = (),
    on_text: OnText | None = None,
    *,
    consent: bool = False,
    accepted: str | None = None,
    standalone: str | None = None,
    extractive: bool = False,
    provider: LLMProvider | None = None,
    on_question: Callable[[str], None] | None = None,
) -> ChatTurn:
    """One turn of a conversation its client keeps (the page, the Obsidian plugin): nothing of it is
    kept here. A follow-up is rewritten into a standalone question with the model (the last
    llm.history_turns exchanges of ``history``), searched, then answered from the vault.

    A program's request: its texts are checked, never cut, and its consent is its own (never
    stored). Each model call with a remote model asks first (ConsentRequired), the rewrite showing
    the conversation, the answer listing its passages (``proposal.passages``) and the question as
    it will be asked (``proposal.question``); a yes is ``consent`` or ``accepted``, the token of
    exactly that prompt. A call after a rewrite's proposal brings its ``standalone`` question back,
    so the rewrite is not sent again. When retrieval finds nothing, no model is called and nothing
    is asked. ``on_question`` gets a follow-up's standalone question before the answer streams."""
    search = app.settings.search
    search.refuse_long_query(question)
    if standalone is not None:
        search.refuse_long_query(standalone)
    earlier = chat.checked_history(history, app.settings.llm.history_turns)
    with translated_errors(path=app.index_dir):
        files = app.files()
        model = None if extractive else provider or app.llm()
        try:
            if standalone is not None and standalone.strip():
                alone = standalone.strip()
            elif model is None or not earlier:
                alone = chat.joined(earlier, question)
            else:
                messages = chat.rewrite_messages(earlier, question)
                what = chat.rewrite_what(earlier)
                require_llm_consent_shown(files, model, consent, accepted, what, prompt_text(messages))
                alone = chat.rewritten(model, messages, question)
            context = asking.gather(app, files, search, alone)  # index released here
            if model is not None and not context.not_found:
                require_llm_consent_shown(
                    files,
                    model,
                    consent,
                    accepted,
                    asking.what_is_sent(context),
                    prompt_text(context.messages),
                    alone,
                    asking.passages(context),
                )
            if on_question is not None and alone != question.strip():
                on_question(alone)
            got = asking.extractive(context) if model is None else asking.answer(context, model, on_text)
            return ChatTurn(alone, got)
        finally:
            if provider is None and model is not None:
                model.close()
