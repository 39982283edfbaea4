"""What switching to another embedding space costs, said before any work starts.

Every distinct embedded text needs a new vector. Time uses the rate this machine measured on
its recent index runs (chunks embedded per second of run time); tokens for a remote provider
are approximated as characters / 4, because the real tokenizer is the provider's.
"""

from __future__ import annotations

from dataclasses import dataclass

CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class RebuildEstimate:
    chunks: int  # distinct embedded texts to re-embed
    chars: int  # characters of those texts
    rate: float | None  # chunks/s measured on recent runs; None when nothing was measured yet
    remote: bool  # the target provider is reached over HTTP (tokens are billed or metered)

    @property
    def seconds(self) -> float | None:
        return None if not self.rate else self.chunks / self.rate

    @property
    def approx_tokens(self) -> int | None:
        return self.chars // CHARS_PER_TOKEN if self.remote else None

    def describe(self) -> str:
        parts = [f"Re-embedding means {self.chunks:,} chunks"]
        if self.seconds is not None and self.rate:
            parts.append(
                f", about {_duration(self.seconds)} at the {self.rate:.1f} chunks/s measured on recent runs"
                " (the new model may be faster or slower)"
            )
        else:
            parts.append(" (no embedding rate measured yet, so no time estimate)")
        if self.approx_tokens is not None:
            parts.append(
                f", and approximately {self.approx_tokens:,} tokens sent to the provider (characters/4)"
            )
        return "".join(parts) + "."

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "chunks": self.chunks,
            "chars": self.chars,
            "rate_chunks_per_s": None if self.rate is None else round(self.rate, 2),
            "seconds": None
            if self.seconds is None
            else float(f"{self.seconds:.3g}"),  # a small vault at a fast rate is not 0.0
            "approx_tokens": self.approx_tokens,
        }


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
