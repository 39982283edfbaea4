"""A second embedding space for tests and benches: the scripted loopback server speaking Ollama.

The bundled local model is one space; this server (deterministic hash vectors, optional delay per
request) is another, so a model change and a rebuild cost seconds instead of minutes.
"""

from __future__ import annotations

from scripted_server import ScriptedEmbeddingServer, Step

DIMS = 8


def scripted_overrides(server: ScriptedEmbeddingServer, batch_size: int = 16) -> dict[str, str]:
    """Settings overrides (as --set pairs) that point vaultlens at the scripted server."""
    return {
        "embedding.provider": "ollama",
        "embedding.endpoint": server.url,
        "embedding.model": "scripted",
        "embedding.dimensions": str(DIMS),
        "embedding.batch_size": str(batch_size),
    }


def scripted_env(server: ScriptedEmbeddingServer, batch_size: int = 16) -> dict[str, str]:
    """The same settings as VAULTLENS_* environment variables, for subprocesses."""
    return {
        "VAULTLENS_" + key.replace(".", "__").upper(): value
        for key, value in scripted_overrides(server, batch_size).items()
    }


def set_args(overrides: dict[str, str]) -> list[str]:
    return [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]


def slow_server(delay: float) -> ScriptedEmbeddingServer:
    """A server that waits ``delay`` seconds before every answer (makes a rebuild last long enough)."""
    server = ScriptedEmbeddingServer(dims=DIMS)
    server.script = _Forever(Step(delay=delay))  # type: ignore[assignment]
    return server


class _Forever(list[Step]):
    """A script that never runs out: every request gets the same step."""

    def __init__(self, step: Step) -> None:
        super().__init__([step])
        self.step = step

    def pop(self, index: int = -1) -> Step:  # type: ignore[override]
        return self.step
