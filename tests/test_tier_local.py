"""The user's own model as the quality tier (``embedding.tier = "local:PATH"``): the form and its
checks (a missing folder, a folder that is not a sentence-transformers layout, the optional packages
missing: each a clear error naming the fix), the prompts read from the folder, and, where torch and a
real model folder are present (``VAULTLENS_TEST_LOCAL_MODEL``), the whole path: fill, search, prompts,
the dtype the CPU calls for and OpenMP's passive waiting set before torch is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vaultlens as services
from vaultlens.config.settings import Settings
from vaultlens.embedding.tiers import local
from vaultlens.embedding.tiers.auto import choose_tier
from vaultlens.embedding.tiers.local import LocalTier, declared_prompts, fingerprint, tier_prompts
from vaultlens.embedding.tiers.registry import check_tier, make_tier
from vaultlens.errors import ConfigError
from vl_support import cli_env, run_cli, settings, write_vault

INSTALL_HINT = "pip install 'vaultlens[local-model]'"
MODEL_ENV = "VAULTLENS_TEST_LOCAL_MODEL"
MODEL = os.environ.get(MODEL_ENV, "")
needs_model = pytest.mark.skipif(
    bool(local.missing_packages()) or not MODEL or not Path(MODEL).is_dir(),
    reason=f"needs torch and sentence-transformers ({INSTALL_HINT}) and a sentence-transformers "
    f"model folder named by {MODEL_ENV}",
)
GEMMA_PROMPTS = {"query": "task: search result | query: ", "document": "title: none | text: "}


def st_folder(root: Path, prompts: dict[str, str] | None = None) -> Path:
    """A folder with a sentence-transformers layout's description (no weights: enough for the checks)."""
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    files = {"modules.json": json.dumps(modules), "config.json": "{}"}
    if prompts is not None:
        files["config_sentence_transformers.json"] = json.dumps({"prompts": prompts})
    return write_vault(root, files)  # files on disk, written as a vault's would be


def tier_settings(value: str, **more: str) -> Settings:
    return settings(**{"embedding.tier": f"local:{value}", **{f"embedding.{k}": v for k, v in more.items()}})


def test_the_local_form_is_registered_and_accepted_by_the_settings(tmp_path: Path) -> None:
    check_tier("local:/models/embeddinggemma")  # a registered kind: no error, nothing built
    assert settings(**{"embedding.tier": "local:~/models/gemma"}).embedding.tier == "local:~/models/gemma"


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=f"there is no folder at {missing}") as caught:
        make_tier(tier_settings(str(missing)).embedding)
    assert "embedding.tier=off" in (caught.value.hint or "")


def test_a_relative_path_is_refused_with_the_absolute_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="a relative path") as caught:
        make_tier(tier_settings("models/gemma").embedding)
    assert str(Path.cwd() / "models/gemma") in (caught.value.hint or "")


def test_a_folder_that_is_not_a_sentence_transformers_layout_is_refused(tmp_path: Path) -> None:
    plain = write_vault(tmp_path / "plain", {"config.json": "{}", "model.safetensors": b"\0" * 16})
    with pytest.raises(ConfigError, match="is not a sentence-transformers model folder"):
        make_tier(tier_settings(str(plain)).embedding)
    broken = write_vault(tmp_path / "broken", {"modules.json": "{not json"})
    with pytest.raises(ConfigError, match="no readable modules.json"):
        make_tier(tier_settings(str(broken)).embedding)


def test_without_torch_the_error_gives_the_exact_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec says: not installed (as in CI's venv)
    with pytest.raises(ConfigError, match="the optional package torch is not installed") as caught:
        make_tier(tier_settings(str(st_folder(tmp_path / "model", GEMMA_PROMPTS))).embedding)
    assert (caught.value.hint or "").startswith(INSTALL_HINT + ",")


def test_the_cli_reports_a_bad_folder_without_a_traceback(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nSome text to index.\n"})
    result = run_cli(["index", "--vault", str(vault), "--set", f"embedding.tier=local:{tmp_path}/nothing"])
    assert result.exit_code == 2, result.output
    assert "there is no folder at" in result.output and "Traceback" not in result.output


def test_prompts_come_from_the_folder_unless_the_settings_name_them(tmp_path: Path) -> None:
    gemma = st_folder(tmp_path / "gemma", GEMMA_PROMPTS)
    e5_style = st_folder(tmp_path / "e5", {"query": "query: ", "passage": "passage: "})
    bare = st_folder(tmp_path / "bare")
    s = tier_settings(str(gemma)).embedding
    assert declared_prompts(gemma) == local.Prefixes(GEMMA_PROMPTS["query"], GEMMA_PROMPTS["document"])
    assert declared_prompts(e5_style) == local.Prefixes("query: ", "passage: ")
    assert declared_prompts(bare) == local.Prefixes()
    own = tier_settings(str(gemma), tier_query_prefix="q: ", tier_passage_prefix="").embedding
    assert tier_prompts(gemma, own) == local.Prefixes("q: ", "")
    assert tier_prompts(gemma, s) == declared_prompts(gemma)


def test_another_model_in_the_same_folder_is_another_fingerprint(tmp_path: Path) -> None:
    folder = st_folder(tmp_path / "model", GEMMA_PROMPTS)
    (folder / "model.safetensors").write_bytes(b"\0" * 32)
    before = fingerprint(folder)
    assert fingerprint(folder) == before
    (folder / "model.safetensors").write_bytes(b"\0" * 64)
    assert fingerprint(folder) != before


def test_auto_never_picks_a_local_folder() -> None:
    from vaultlens.chunking.scripts import script_mix

    for text in ("English words only here", "Только русский текст", "mixed смешанный text текст"):
        assert not choose_tier("auto", script_mix(text)).name.startswith("local:")


# ---- the real model (torch and a model folder on this machine) ---------------------------------------


@pytest.mark.slow
@needs_model
def test_a_real_model_fills_the_tier_and_finds_across_languages(tmp_path: Path) -> None:
    notes = {
        "Сертификаты.md": "# Продление сертификата\n\nСертификат HTTPS продлевается автоматически за "
        "30 дней до окончания срока.\n",
        "Backlinks.md": "# Backlinks\n\nThe backlinks pane lists every note that links to the note you are "
        "reading, with the line around each link.\n",
        "Garden.md": "# Tomatoes\n\nWater tomato plants deeply at the base twice a week.\n",
    }
    vault = write_vault(tmp_path / "vault", notes)
    app = services.App.open(
        vault,
        {"embedding.tier": f"local:{MODEL}", "search.max_lexical_weight": "0", "search.tier_weight": "1"},
    )
    try:
        services.index(app)
        tier = app.tier()
        assert isinstance(tier, LocalTier)
        assert tier.dtype == ("bfloat16" if local.bf16_native() else "float32")
        assert tier.space.dimensions > 0 and tier.space.endpoint == str(Path(MODEL).resolve())
        status = services.status(app).as_dict()["tier"]
        assert status["covered"] == status["total"] > 0
        # a Russian question, an English note: no word in common
        hits = services.search(app, "какая панель показывает заметки, ссылающиеся на текущую")
        assert hits[0].path == "Backlinks.md"
        text = "The backlinks pane lists every note that links here."
        same = tier.embed([text]) @ tier.embed_queries([text]).T
        prompts = declared_prompts(Path(MODEL))
        assert (same[0, 0] < 0.999) == (prompts.query != prompts.passage)  # each kind gets its prompt
        assert np.allclose(np.linalg.norm(tier.embed([text, "x"]), axis=1), 1.0, atol=1e-4)
        import torch

        seen: list[int] = []
        real = tier._model.encode

        def counting(*args: object, **kwargs: object) -> object:
            seen.append(torch.get_num_threads())
            return real(*args, **kwargs)

        tier._model.encode = counting
        tier.embed_queries([text])
        tier.embed([text])
        # a query on embedding.query_threads (1), passages on embedding.threads, restored after
        assert seen == [1, tier._threads] and torch.get_num_threads() == tier._threads
    finally:
        app.close()


@pytest.mark.slow
@needs_model
def test_passive_openmp_is_set_before_torch_loads_unless_the_user_chose(tmp_path: Path) -> None:
    probe = (
        "import os, sys\n"
        "from vaultlens.embedding.tiers.local import _import_torch\n"
        "before = 'torch' in sys.modules\n"
        "_import_torch()\n"
        "print(before, os.environ['OMP_WAIT_POLICY'], os.environ['HF_HUB_OFFLINE'])\n"
    )
    env = cli_env(tmp_path / "home")
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("HF_HUB_OFFLINE", None)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "PASSIVE", "1"]
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "ACTIVE", "1"]


def test_the_ollama_route_to_embeddinggemma_gets_the_prompts_its_folder_declares(tmp_path: Path) -> None:
    from vaultlens.embedding.tiers.remote import declared_prefixes

    gemma = st_folder(tmp_path / "embeddinggemma", GEMMA_PROMPTS)
    assert declared_prefixes("embeddinggemma:latest") == declared_prompts(gemma)
    assert declared_prefixes("embeddinggemma:300m").query == "task: search result | query: "
