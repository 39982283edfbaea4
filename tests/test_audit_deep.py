"""`audit deep` with a model: per-note map requests cached by content, one reduce, resumable, consent first.

The model is DeepModel (tests/scripted_audit_model.py), a ScriptedChatServer on loopback. Requests are counted
from what the server received, not from what the code under test says it sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import vaultlens as services
import vaultlens.testing  # registers the deterministic "fake" provider
from scripted_audit_model import DeepModel, analysis
from scripted_chat_server import ChatStep, ScriptedChatServer
from vaultlens.services.app import App
from vaultlens.services.auditing.deep import DeepReport, audit_llm, plan_deep, run_deep
from vaultlens.services.auditing.deep_report import deep_markdown
from vaultlens.vault.links import LinkResolver
from vl_support import check_shape, run_cli, write_vault

TOPICS = {
    "Kitchen": "sourdough starter flour water bake bread oven crust loaf rye dough knead proof",
    "Sky": "telescope star planet orbit galaxy nebula lens night observe comet moon eclipse",
}


def _files() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for folder, words in TOPICS.items():
        w = words.split()
        for i in range(4):
            body = " ".join(w[(i + k) % len(w)] for k in range(10))
            files[f"{folder}/{folder} {i}.md"] = f"# {folder} {i}\n\n{body}. {body}.\n"
    files["Misc/Shopping.md"] = "# Shopping\n\nbuy socks umbrella batteries stamps envelope\n"
    files["Audit.md"] = "---\nvaultlens-report: deep-audit\n---\n# A saved report\n\nsourdough telescope\n"
    return files


ELIGIBLE = sorted(p for p in _files() if p != "Audit.md")


def settings(server: ScriptedChatServer, batch: int = 2, parallel: int = 2) -> dict[str, str]:
    return {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "deep-test",
            "llm.endpoint": server.url + "/v1", "llm.max_retries": "0", "llm.read_timeout_s": "5",
            "audit.batch_notes": str(batch), "audit.parallel": str(parallel)}  # fmt: skip


def args(vault: Path, s: dict[str, str]) -> list[str]:
    return ["--vault", str(vault), *[a for k, v in s.items() for a in ("--set", f"{k}={v}")]]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    v = write_vault(tmp_path / "vault", _files())
    services.index(App.open(v, {"embedding.provider": "fake"}))
    return v


def _deep(vault: Path, server: DeepModel, *extra: str) -> dict[str, Any]:
    result = run_cli(["audit", "deep", "--yes", "--json", *args(vault, settings(server)), *extra])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_rerun_sends_only_the_changed_note(vault: Path) -> None:
    with DeepModel() as server:
        first = _deep(vault, server)
        check_shape("audit_deep", first)
        assert sorted(p for r in server.map_requests() for p in r) == ELIGIBLE  # the report note is left out
        assert len(server.map_requests()) == 5 and server.reduce_requests() == 1  # 9 notes, 2 a request
        assert {k: first["run"][k] for k in ("sent", "from_cache")} == {"sent": 9, "from_cache": 0}
        assert (
            first["run"]["usage"]["prompt_tokens"] == 50 * 6
        )  # as the server reported it: 5 maps + the reduce

        changed = "Sky/Sky 2.md"
        (vault / changed).write_text("# Sky 2\n\nA comet crossed the night sky.\n", encoding="utf-8")
        server.requests.clear()
        second = _deep(vault, server)
        assert server.map_requests() == [[changed]]  # exactly one map request, for the changed note only
        assert server.reduce_requests() == 1
        assert {k: second["run"][k] for k in ("sent", "from_cache")} == {"sent": 1, "from_cache": 8}

        server.requests.clear()
        _deep(vault, server)
        assert server.map_requests() == [] and server.reduce_requests() == 1

        server.requests.clear()
        _deep(vault, server, "--full")
        assert len(server.map_requests()) == 5
    assert sorted(second["notes"]) == ELIGIBLE
    clustered = [p for c in second["clusters"] for p in c["notes"]] + second["unclustered"]
    assert "Audit.md" not in clustered and set(clustered) <= set(ELIGIBLE)
    assert second["notes"][changed] == analysis(changed)
    report = Path(second["files"]["vault-deep-audit.md"]).read_text(encoding="utf-8")
    assert "Named by the model" in report and "Add a MOC." in report
    assert not Path(second["files"]["vault-deep-audit.md"]).is_relative_to(vault)


def test_a_malformed_entry_fails_only_its_note(vault: Path) -> None:
    bad = "Kitchen/Kitchen 1.md"
    with DeepModel(broken={bad}) as server:
        data = _deep(vault, server)
    assert list(data["failed"]) == [bad]
    assert "main_idea" in data["failed"][bad]
    assert sorted(data["notes"]) == [p for p in ELIGIBLE if p != bad]
    report = Path(data["files"]["vault-deep-audit.md"]).read_text(encoding="utf-8")
    assert "## Failed notes" in report and "[[Kitchen/Kitchen 1]]: invalid model answer" in report
    with DeepModel() as server:  # the others were cached; the failed note is asked for again
        again = _deep(vault, server)
        assert server.map_requests() == [[bad]]
    assert again["failed"] == {} and sorted(again["notes"]) == ELIGIBLE


def test_the_report_shows_model_text_as_text_and_marks_links_to_no_note(vault: Path) -> None:
    hostile = {
        "main_idea": "<script>alert(1)</script>\n## Injected heading & more",
        "suggested_links": ["Sky 1", "[[Kitchen/Kitchen 2]]", "Nowhere <b>"],
    }
    with DeepModel(says={"Kitchen/Kitchen 0.md": hostile}) as server:
        data = _deep(vault, server)
    assert (
        data["notes"]["Kitchen/Kitchen 0.md"]["main_idea"] == hostile["main_idea"]
    )  # the JSON keeps it as said
    report = Path(data["files"]["vault-deep-audit.md"]).read_text(encoding="utf-8")
    assert "<script>" not in report and "\n## Injected" not in report
    assert "&lt;script&gt;alert(1)&lt;/script&gt; ## Injected heading &amp; more" in report
    assert "Suggested links: [[Sky/Sky 1]], [[Kitchen/Kitchen 2]], Nowhere &lt;b&gt; (no such note)" in report


def test_an_answer_that_is_not_json_fails_its_batch_after_one_retry(vault: Path) -> None:
    with DeepModel() as server:
        server.script.extend([ChatStep(reply="not json"), ChatStep(reply="still not json")])
        data = _deep(vault, server, "--set", "audit.parallel=1")
    assert len(data["failed"]) == 2 and all("not valid JSON" in why for why in data["failed"].values())
    assert len(data["notes"]) == len(ELIGIBLE) - 2  # the run went on


def test_a_run_where_no_note_could_be_analysed_is_a_failure(vault: Path) -> None:
    """Every answer broken: the report of nothing is still written, but the exit code says so."""
    with DeepModel(broken=set(ELIGIBLE)) as server:
        result = run_cli(["audit", "deep", "--yes", "--json", *args(vault, settings(server))])
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["notes"] == {} and sorted(data["failed"]) == ELIGIBLE
    assert "No note could be analysed" in " ".join(result.stderr.split())


class Stop(Exception):
    pass


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, Stop])
def test_an_interrupted_run_resumes_to_the_same_report(vault: Path, interrupt: type[BaseException]) -> None:
    def run(app: App, full: bool = False, stop_after: int | None = None) -> tuple[DeepReport, int]:
        provider = audit_llm(app.settings)
        done: list[int] = []

        def on_batch(n: int) -> None:
            done.append(n)
            if stop_after is not None and len(done) >= stop_after:
                raise interrupt()

        try:
            plan = plan_deep(app, app.files(), provider, app.settings.audit.batch_notes, full)
            return run_deep(app.files(), plan, 1, consent=True, on_batch=on_batch), plan.to_send
        finally:
            provider.close()

    with DeepModel() as server:
        app = App.open(vault, settings(server, batch=1, parallel=1))
        with pytest.raises(interrupt):
            run(app, stop_after=2)
        resumed, sent = run(app)
        assert sent == len(ELIGIBLE) - 2  # the two finished notes were kept
        reference, _ = run(app, full=True)
    assert resumed.as_dict() == reference.as_dict()
    resolver = LinkResolver(ELIGIBLE)
    assert deep_markdown(resumed, resolver) == deep_markdown(reference, resolver)


def test_nothing_is_sent_without_agreement_and_notes_stay_in_the_data_part(vault: Path) -> None:
    with DeepModel() as server:
        refused = run_cli(["audit", "deep", *args(vault, settings(server))])
        assert refused.exit_code == 7 and "Nothing was sent" in refused.stderr
        assert server.chats() == []
        assert "9 notes" in refused.stderr and "tokens" in refused.stderr  # what goes where, shown first
        _deep(vault, server)
        for body in server.chats():
            system, user = body["messages"][0]["content"], body["messages"][1]["content"]
            nonce = re.search(r"NONCE is ([0-9a-f]+)\.", user)
            assert nonce is not None
            inside = user[user.index(f"<data-{nonce.group(1)}>") : user.index(f"</data-{nonce.group(1)}>")]
            assert "flour" not in system and "flour" not in user.replace(inside, "")
    assert any("flour" in b["messages"][1]["content"] for b in server.chats())


def test_ctrl_c_in_the_cli_says_the_run_can_go_on(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import vaultlens.services.verbs.auditing as auditing

    def ctrl_c(_: int) -> None:
        raise KeyboardInterrupt

    def interrupted(
        files: Any, plan: Any, parallel: int, consent: bool = False, on_batch: Any = None
    ) -> DeepReport:
        return real(files, plan, parallel, consent, ctrl_c)  # Ctrl-C as the first batch finishes

    real = auditing.run_deep
    monkeypatch.setattr(auditing, "run_deep", interrupted)
    with DeepModel() as server:
        stopped = run_cli(["audit", "deep", "--yes", *args(vault, settings(server, batch=1, parallel=1))])
        assert stopped.exit_code == 130 and "audit deep` again" in stopped.stderr
        monkeypatch.setattr(auditing, "run_deep", real)
        server.requests.clear()
        data = _deep(vault, server)
    assert data["run"]["from_cache"] == 1 and sorted(data["notes"]) == ELIGIBLE
