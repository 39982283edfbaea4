"""Before note text leaves this machine: the two checks every sending verb makes.

Privacy is enforced in the services, not in an interface: a verb that would send note text to a
remote embedding provider or LLM raises :class:`~vaultlens.errors.ConsentRequired` (a proposal
naming what and where) unless the caller passes ``consent=True`` for this call or, for the
command line and scripts, the destination was granted before (a server's request counts only its
own ``consent``: see :func:`~vaultlens.config.consent.require_consent`). While the vault's ignore rules cannot be applied, nothing is
sent at all: notes the user excluded could be among it.
"""

from __future__ import annotations

from vaultlens.config.consent import require_consent
from vaultlens.embedding.base import EmbeddingProvider, remote_destination
from vaultlens.errors import VaultlensError
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
    files: VaultFiles, provider: EmbeddingProvider, chunk_max: int, consent: bool
) -> None:
    """Refuse (ConsentRequired) before note text goes to a remote embedding provider nobody agreed to."""
    destination = remote_destination(provider)
    if destination is None:
        return
    refuse_with_broken_rules(files, "a remote provider")
    what = (
        f"the text of your notes, in chunks of up to {chunk_max} characters"
        " (a single longer table row stays whole)"
    )
    require_consent(
        destination,
        what,
        granted_now=consent,
        hint="Nothing was sent. Agree once for this destination (the CLI asks, or pass --yes), "
        "or choose the bundled local model with --set embedding.provider=local.",
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
