"""Asking the vault: one question (Ask) or a conversation (chat), answered only from the notes.

The pipeline lives in :mod:`vaultlens.services.asking.ask` and :mod:`vaultlens.services.asking.chat`; these
verbs wire it to an App: the index and the files to read, the configured model, and consent
before a remote model receives note text (:class:`~vaultlens.errors.ConsentRequired` otherwise).
"""

from __future__ import annotations

from vaultlens.errors import translated_errors
from vaultlens.llm.base import LLMProvider, OnText
from vaultlens.services.app import App
from vaultlens.services.asking import ask as asking
from vaultlens.services.asking.ask import AskAnswer, Source
from vaultlens.services.asking.chat import ChatSession, ChatTurn
from vaultlens.services.consent import require_llm_consent

__all__ = ["AskAnswer", "ChatSession", "ChatTurn", "Source", "ask", "chat_turn", "open_chat"]


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
