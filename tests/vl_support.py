"""Helpers shared by the test modules: vault builders, snapshots, an in-process CLI runner."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vaultlens.config.settings import IndexSettings, Settings, load_settings
from vaultlens.embedding.base import EmbeddingProvider, EmbeddingSpace, Vectors
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.index.backends import get_backend
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.index.runs import RunStats
from vaultlens.index.sqlite.schema import DB_NAME
from vaultlens.index.store import FileRecord, Store
from vaultlens.services.app import App
from vaultlens.vault.parse import line_starts

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
VAULTLENS_BIN = VENV_BIN / "vaultlens"
# Rich wraps at the terminal's width (80 without one), so a test reading CLI text would depend on the
# length of its temporary path: every CLI run in the tests gets a console wider than any path
CLI_COLUMNS = 10_000


def write_vault(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Create files under ``root`` (text is written as UTF-8 with the newlines given)."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (hidden ones included) -> SHA-256 of its bytes, or its link target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = "symlink -> " + os.readlink(full)
            elif full.is_dir():
                out[rel] = "dir"
            else:
                try:
                    out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
                except PermissionError:
                    st = full.stat()
                    out[rel] = f"unreadable size={st.st_size} mtime={st.st_mtime_ns}"
    return out


class RecordingProvider:
    """Delegates to a real provider and records every text it was asked to embed."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.space: EmbeddingSpace = inner.space
        self.batch_size = inner.batch_size
        self.remote = inner.remote
        self.calls_in_flight = inner.calls_in_flight
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def reset(self) -> None:
        self.calls.clear()


def settings(vault: Path | None = None, /, **overrides: str) -> Settings:
    return load_settings(vault, dict(overrides)).settings


# ---- the store backend seam: tests of service behaviour reach a store only through these -----------
def default_backend() -> str:
    """The store a test that does not take the ``backend`` fixture gets: ``index.backend`` as the
    environment sets it (conftest's ``test_store`` does, with VAULTLENS_TEST_STORE=postgres), else the default."""
    return os.environ.get("VAULTLENS_INDEX__BACKEND") or IndexSettings.backend


def open_app(
    vault: Path,
    backend: str,
    overrides: dict[str, str] | None = None,
    *,
    provider: EmbeddingProvider | None = None,
) -> App:
    """An App on the named store backend, injected through ``App.open`` as any other backend would be."""
    return App.open(vault, overrides, provider=provider, backend=get_backend(backend))


def backend_args(backend: str) -> list[str]:
    """``--set index.backend=NAME``: how a CLI run, in this process or a child one, gets the backend."""
    return ["--set", f"index.backend={backend}"]


@contextlib.contextmanager
def opened_store(location: Path, backend: str | None = None, *, create: bool = False) -> Iterator[Store]:
    """The store at ``location`` opened through its backend (IndexNotFound if absent, unless ``create``)."""
    store = get_backend(backend or default_backend()).open(location, create)
    try:
        yield store
    finally:
        store.close()


def run_index(
    vault: Path,
    store_dir: Path,
    provider: EmbeddingProvider,
    s: Settings | None = None,
    backend: str | None = None,
) -> RunStats:
    """One indexing run with the real Indexer on a real store of ``backend`` at ``store_dir`` (the
    store opened with ``s`` too, as the App opens it: its ANN threshold is the writer's)."""
    s = s or settings(vault)
    store = get_backend(backend or default_backend(), s).open(store_dir, True)
    try:
        return Indexer(vault, store, provider, s).run()
    finally:
        store.close()


def chunk_keys(store_dir: Path, backend: str | None = None) -> set[tuple[str, str]]:
    """(id, content hash) of every stored chunk, orphans included: two indexes of one vault compare equal."""
    with opened_store(store_dir, backend) as store, store.snapshot():
        keys, _, _ = store.chunk_layout()
        return {(c.id, c.content_hash) for c in store.chunks(keys.tolist()).values()}


def db_rows(store_dir: Path, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
    """SQLite-specific: read the SQLite backend's file directly (read-only), as an outside observer."""
    con = sqlite3.connect(f"file:{store_dir / DB_NAME}?mode=ro", uri=True)
    try:
        return list(con.execute(sql, params))
    finally:
        con.close()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = field(default=None)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(args: Sequence[str], stdin: str = "") -> CliResult:
    """Run ``vaultlens ARGS`` in this process through the console script's own entry point."""
    from vaultlens.cli import render
    from vaultlens.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv, sys.stdin
    sys.argv = ["vaultlens", *args]
    sys.stdin = io.StringIO(stdin)
    widths = render.out.width, render.err.width
    render.out.width = render.err.width = CLI_COLUMNS
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, sys.stdin = old
        render.out.width, render.err.width = widths
    return CliResult(code, out.getvalue(), err.getvalue())


# The quality tier (default auto) would load and run a second model in every test that indexes;
# the suite runs without it, and the tier's own tests (test_tier*.py) turn it on by name.
TIER_OFF = ("VAULTLENS_EMBEDDING__TIER", "off")


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a real `vaultlens` subprocess: this test's home, no other VAULTLENS_* vars but
    the store backend a test runs on (conftest's ``test_store``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTLENS_")}
    if backend := os.environ.get("VAULTLENS_INDEX__BACKEND"):
        env["VAULTLENS_INDEX__BACKEND"] = backend
    env["VAULTLENS_HOME"] = str(home)
    env["COLUMNS"] = str(CLI_COLUMNS)
    env[TIER_OFF[0]] = TIER_OFF[1]
    env.update(extra)
    return env


# ---- a small bilingual vault written for these tests -------------------------------------------------

BILINGUAL: dict[str, str] = {
    "Кулинария/Закваска.md": """---
tags: [выпечка, хлеб]
aliases: [Ржаная закваска]
---
# Закваска

Ржаная закваска живёт в банке на кухне уже третий год. Её нужно регулярно подкармливать:
раз в сутки добавляю равные по весу муку и тёплую воду, перемешиваю и оставляю под крышкой.

## Подкормка

Соотношение один к одному к одному: десять граммов старой закваски, десять граммов обдирной
ржаной муки и десять граммов воды. Через шесть-восемь часов при комнатной температуре она
удваивается в объёме и покрывается пузырьками. Это значит, что закваска активна и готова для теста.

## Хранение

Если печь хлеб редко, банку можно держать в холодильнике и кормить раз в неделю. После отпуска
закваску оживляют двумя-тремя подкормками подряд в тепле. Серая жидкость сверху — признак голода,
а не порчи: её сливают и кормят.
""",
    "Tech/HTTP caching.md": """---
tags: [web, performance]
---
# HTTP caching

Browsers and CDNs keep copies of responses so that the same bytes are not downloaded twice. The
rules live in response headers, and getting them wrong either serves stale pages or wastes bandwidth
on every single visit. This note collects what I actually use in production.

## Cache-Control

`Cache-Control: max-age=31536000, immutable` is for fingerprinted static assets such as
`app.3f9c2.js`: the file name changes whenever the content changes, so the old copy can live for a
year. HTML documents get `no-cache`, which means the browser must revalidate before reusing its copy,
not that it must never store it. Private user pages add `private` so shared proxies do not keep them.

## Validators

An `ETag` or `Last-Modified` header lets the browser ask "has this changed?" with `If-None-Match`
or `If-Modified-Since`. The server answers `304 Not Modified` with an empty body when nothing changed,
which saves the transfer but still costs a round trip. Weak ETags are fine for compressed variants.

## CDN purge

After a deploy, purge only the HTML and the service worker; fingerprinted assets never need a purge.
Purging everything at once sends a thundering herd of requests to the origin servers and makes the
first minutes after a release slower for every visitor around the world.
""",
    "Tech/Deploy runbook.md": """# Deploy runbook

Steps for shipping the billing service. Run them in order and stop at the first red check.

```bash
./scripts/preflight.sh --env prod
kubectl rollout restart deploy/billing
export KX_ROLLOUT_GUARD=kx_rollout_guard_7731
./scripts/verify.sh --guard "$KX_ROLLOUT_GUARD"
```

| Environment | Cluster | Approver |
|-------------|---------|----------|
| staging     | eu-1    | anyone   |
| prod        | eu-2    | on-call  |

If verification fails, roll back with the previous image tag and open an incident.
""",
    "Путешествия/Грузия 2023.md": """# Грузия 2023

Десять дней в Грузии в октябре. Прилетели в Тбилиси, жили в старом городе рядом с серными банями.
Потом поехали на север по Военно-Грузинской дороге в Казбеги и поднялись к церкви Гергети.

## Еда

Хачапури по-аджарски с яйцом и маслом, хинкали, которые едят руками, и чурчхела на рынке.
В Кахетии попробовали вино, выдержанное в квеври, — больших глиняных кувшинах, закопанных в землю.
""",
    "Health/Marathon training.md": """# Marathon training

Sixteen weeks from a half to a full marathon. Most runs are easy, in heart-rate zone two, slow enough
to hold a conversation. One session a week is intervals or tempo, and the long run on Sunday grows
by about two kilometres every week until it reaches thirty-two.

## Taper

The last three weeks cut the volume by a third each week while keeping a little intensity. Sleep,
carbohydrates and no new shoes on race day.
""",
    "Финансы/Личный бюджет.md": """# Личный бюджет

Каждый месяц записываю все траты в таблицу по категориям: жильё, еда, транспорт, развлечения.
Правило пятьдесят на тридцать на двадцать: половина дохода на необходимое, треть на желания,
пятая часть откладывается.

## Подушка безопасности

Сначала копим резерв на шесть месяцев расходов на отдельном счёте, к которому нет карты.
Только потом начинаем инвестировать. Резерв не трогаем ради покупок и отпуска.
""",
    "Дом/Комнатные растения.md": """# Комнатные растения

Монстера и фикус стоят у восточного окна: много рассеянного света, но без прямого полуденного солнца.
Поливаю, когда верхние два сантиметра земли просохли, летом примерно раз в неделю, зимой реже.
Пересаживаю весной в горшок на пару сантиметров шире, если корни вылезают из дренажных отверстий.
""",
    "Books/Thinking in Systems.md": """# Thinking in Systems

Donella Meadows describes systems as stocks and flows connected by feedback loops. A balancing loop
pushes a stock toward a goal, like a thermostat; a reinforcing loop makes it grow or collapse, like
compound interest. Delays in feedback cause oscillation, which is why over-correcting makes things worse.
""",
}


class InterruptingTier:
    """A real tier model, with Ctrl-C arriving during its ``after``-th call."""

    def __init__(self, inner: TierProvider, after: int) -> None:
        self.inner, self.after, self.calls = inner, after, 0
        self.space, self.batch_size = inner.space, inner.batch_size

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.calls == self.after:
            raise KeyboardInterrupt
        return self.inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_queries(texts)


def bilingual_vault(root: Path) -> Path:
    return write_vault(root, BILINGUAL)


def without_root_file_access() -> None:
    """``preexec_fn`` for a child that must feel file permissions even when the tests run as root:
    drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set before exec."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def run_without_file_access(
    args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` in a child that file permissions apply to even when the tests run as root;
    the test is skipped, with the reason, where the capabilities cannot be dropped."""
    try:
        return subprocess.run(
            list(args),
            env=env,
            preexec_fn=without_root_file_access if os.geteuid() == 0 else None,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE here ({exc})")


def line_of(text: str, offset: int) -> int:
    """0-based line number of a character offset (the reference the chunker's lines are checked against)."""
    return bisect_right(line_starts(text), offset) - 1


def file_records(app: App) -> dict[str, FileRecord]:
    """The live index's file records, read in one snapshot."""
    with app.reading() as store:
        return store.file_records()


# ---- JSON shapes (tests/golden/): what the CLI's --json, the API and MCP print, per verb ----------

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = (
    os.environ.get("VAULTLENS_UPDATE_GOLDEN") == "1"
)  # read at import: tests run without VAULTLENS_*


def shape(value: object) -> object:
    """The JSON with every value replaced by its type name (a list by the shape of its first item)."""
    if isinstance(value, dict):
        return {str(k): shape(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shape(value[0])] if value else []
    return "null" if value is None else type(value).__name__


def check_shape(name: str, data: object) -> None:
    """``data`` has the shape pinned in tests/golden/<name>.json (VAULTLENS_UPDATE_GOLDEN=1 rewrites it)."""
    golden = GOLDEN / f"{name}.json"
    got = shape(data)
    if UPDATE_GOLDEN:
        golden.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert golden.is_file(), f"no golden shape for {name}: run with VAULTLENS_UPDATE_GOLDEN=1 and review it"
    assert json.loads(golden.read_text(encoding="utf-8")) == got, f"the JSON shape of {name} changed"
