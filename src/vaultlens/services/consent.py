"""Before note text leaves this machine: the two checks every sending verb makes.

Privacy is enforced in the services, not in an interface: a verb that would send note text to a
remote embedding provider or LLM raises :class:`~vaultlens.errors.ConsentRequired` (a proposal
naming what and where) unless the caller passes ``consent=True`` for this call or, for the
command line and scripts, the destination was granted before (a server's request counts only its
own ``consent``: see :func:`~vaultlens.config.consent.require_consent`). While the vault's ignore rules cannot be applied, nothing is
sent at all: notes the user excluded could be among it.
"""

from __future__ import annotations

from typing import Any

from vaultlens.config.consent import granted, require_consent
from vaultlens.embedding.base import EmbeddingProvider, remote_destination
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.embedding.tiers.remote import tier_destination
from vaultlens.errors import ConsentRequired, VaultlensError, token_of
from vaultlens.llm.base import LLMProvider, llm_destination
from vaultlens.services.context import VaultFiles


def refuse_with_broken_rules(files: VaultFiles, destination: str) -> None:
    """Notes the user excluded could be sent while the vault's ignore rules cannot be applied: refuse."""
    problems = files.rule_problems()
    if problems:
        raise VaultlensError(
            f"Not sending note text to {destination} while the vault's ignore rules are broken: "
            + "; ".join(problems),
            hint="Fix .obsidian/app.json (Settings → Files and links → Excluded files), so notes you "
            "excluded are not sent.",
        )


def require_embedding_consent(
    files: VaultFiles,
    provider: EmbeddingProvider,
    chunk_max: int,
    consent: bool,
    tier: TierProvider | None = None,
) -> None:
    """Refuse (ConsentRequired) before note text goes to a remote embedding provider, or to the quality
    tier's server (``tier``), nobody agreed to. When both are new, the one question names both (the
    second in its remarks): a yes covers exactly what the user was shown."""
    chunks = (
        f"the text of your notes, in chunks of up to {chunk_max} characters"
        " (a single longer table row stays whole)"
    )
    sends: dict[str, tuple[str, str]] = {}
    for destination, what, hint in (
        (remote_destination(provider), chunks, EMBEDDING_HINT),
        (tier_destination(tier), f"{chunks} and your search queries (embedding.tier)", TIER_HINT),
    ):
        if destination is not None:
            sends.setdefault(destination, (what, hint))  # one destination for both: asked once
    if not sends:
        return
    refuse_with_broken_rules(files, "a remote provider")
    waiting = [] if consent else [(d, *sends[d]) for d in sends if not granted(d)]
    if waiting:
        (destination, what, hint), *more = waiting
        also = tuple(f"The same yes also sends {w} to {d}." for d, w, _ in more)
        raise ConsentRequired(destination, what, hint=hint, remarks=also)
    for destination, (what, hint) in sends.items():
        require_consent(destination, what, granted_now=consent, hint=hint)


def require_tier_query_consent(tier: TierProvider) -> None:
    """Refuse (ConsentRequired) before a search query goes to a remote tier's server the user did not
    agree to. A search asks nothing itself: the yes is the one remembered when an index run first
    sent notes there (its question names the queries too); without it the search runs without the tier."""
    destination = tier_destination(tier)
    if destination is not None:
        require_consent(destination, "your search queries", hint=TIER_HINT)


EMBEDDING_HINT = (
    "Nothing was sent. Agree once for this destination (the CLI asks, or pass --yes), "
    "or choose the bundled local model with --set embedding.provider=local."
)
TIER_HINT = (
    "Nothing was sent. Agree once for this destination (`vaultlens index` asks, or pass --yes), "
    "or search with the bundled model alone: --set embedding.tier=off."
)


def require_llm_consent(
    files: VaultFiles, llm: LLMProvider, consent: bool, what: str, remember: bool = True
) -> None:
    """Refuse (ConsentRequired) before note text goes to a remote LLM nobody agreed to (same
    mechanism and file as the embedding grants; the destination names the LLM). ``remember``:
    see :func:`~vaultlens.config.consent.require_consent` (False: ``consent`` covers this call only)."""
    destination = llm_destination(llm)
    if destination is None:
        return
    refuse_with_broken_rules(files, "a remote LLM")
    require_consent(
        destination, what, granted_now=consent, remember=remember, hint=LLM_HINT if remember else PER_REQUEST
    )


LLM_HINT = (
    "Nothing was sent. Agree once for this destination (the CLI asks, or pass --yes), use a local "
    "model (--set llm.provider=ollama), or answer without a model: --extractive."
)
# the way on for a program (a server's request): its own flag, which covers that request only
PER_REQUEST = (
    'Nothing was sent. Ask the user, then send the request again with "consent": true (it covers '
    'that request only), or with "extractive": true to answer without a model.'
)


def require_llm_consent_shown(
    files: VaultFiles,
    llm: LLMProvider,
    consent: bool,
    accepted: str | None,
    what: str,
    preview: str,
    question: str = "",
    passages: tuple[dict[str, Any], ...] = (),
) -> None:
    """:func:`require_llm_consent` for a server's request (never remembered) whose proposal shows
    the exact prompt: a yes is ``consent`` (this request) or ``accepted``, the token of exactly this
    prompt (a prompt that changed since it was shown asks again)."""
    granted = consent or (accepted is not None and accepted == token_of(preview))
    try:
        require_llm_consent(files, llm, granted, what, remember=False)
    except ConsentRequired as exc:
        raise ConsentRequired(
            exc.destination, what, hint=SHOWN_HINT, preview=preview, question=question, passages=passages
        ) from None


SHOWN_HINT = (
    'Nothing was sent. Show the user the proposal, then send the request again with its "token" '
    '(exactly this text is sent) or with "consent": true (this request only); "extractive": true '
    "answers without a model."
)
