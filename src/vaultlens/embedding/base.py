"""The embedding provider interface and the identity of an embedding space.

A provider only turns a batch of texts into unit vectors; batching, progress and
cancellation live in the indexer, retries and timeouts in :mod:`vaultlens.embedding.http`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from vaultlens.errors import ProviderError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# numpy is imported where vectors are computed: a command that never touches one (status, --help)
# does not pay for it
Vectors: TypeAlias = "npt.NDArray[np.float32]"


@dataclass(frozen=True, slots=True)
class EmbeddingSpace:
    """Vectors are comparable only inside one space; the index stores it and refuses to mix."""

    provider: str
    model: str
    endpoint: str
    dimensions: int
    normalized: bool = True

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> EmbeddingSpace:
        return cls(**json.loads(raw))

    def describe(self) -> str:
        where = f" at {self.endpoint}" if self.endpoint else ""
        size = f"{self.dimensions}-d" if self.dimensions else "dimensions not known yet"
        return f"{self.provider}:{self.model}{where} ({size})"


class EmbeddingProvider(Protocol):
    space: EmbeddingSpace
    batch_size: int
    remote: bool  # True when texts leave this machine
    # calls the indexer keeps running at once: more than one where the provider has idle workers
    # at the end of each call that the next call's texts could use (the bundled model's pool)
    calls_in_flight: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 vectors, one row per text, in order."""
        ...


def remote_destination(provider: EmbeddingProvider) -> str | None:
    """Where ``provider`` sends texts, in words a user can judge; None when they stay on this machine.

    This string is what consent is granted for (see :mod:`vaultlens.config.consent`), so it
    names everything that changes where text goes: provider, model and endpoint.
    """
    if not provider.remote:
        return None
    space = provider.space
    return f"{space.provider} model {space.model} at {space.endpoint}"


def normalize_rows(matrix: npt.ArrayLike, expected_rows: int, dimensions: int, source: str) -> Vectors:
    """Check a provider's output and L2-normalise it; garbage becomes a clear ProviderError."""
    import numpy as np

    try:
        arr = np.asarray(matrix, dtype=np.float32)
    except (TypeError, ValueError):
        raise ProviderError(f"{source} returned embeddings that are not numeric arrays.") from None
    if arr.ndim != 2 or arr.shape[0] != expected_rows:
        raise ProviderError(
            f"{source} returned {arr.shape[0] if arr.ndim else 0} embeddings for {expected_rows} texts."
        )
    if dimensions and arr.shape[1] != dimensions:
        raise ProviderError(f"{source} returned {arr.shape[1]}-d vectors, expected {dimensions}-d.")
    if not np.isfinite(arr).all():
        raise ProviderError(f"{source} returned NaN or infinite values.")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: Vectors = (arr / norms).astype(np.float32, copy=False)
    return normalized
