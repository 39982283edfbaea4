"""Crash soak: SIGKILL `index`, `rebuild --background`, `watch` and a `rebuild` racing with searches.

A seeded vault (300 notes) is indexed in embedding space A (the scripted loopback server in its own
process). Each round picks one of four kinds with a fixed seed, starts it and SIGKILLs it after a
random delay (a round whose command finished first counts as a completion, not a kill):

- ``index``: edit 60 notes, then `vaultlens index` in the live space.
- ``rebuild``: `vaultlens rebuild --background` into the other space.
- ``watch``: `vaultlens watch` in the live space (debounce 300 ms); while it runs, a few notes are
  written, renamed (also across folders), deleted or created at seeded moments. `watch` never ends on
  its own, so one that exited before its kill is a finding.
- ``rebuild-race``: a foreground `vaultlens rebuild` (it makes a new, empty folder live, deletes
  the old store and builds in the new folder) into the same or the other space, while two threads run `vaultlens search` processes in a
  loop, one configured for the old space and one for the new. A search may fail with a vaultlens
  error (non-zero exit, a message on stderr); it must never print a Traceback, die on a signal or
  hang, return a note that is not in the vault, or return hits in the old space after this script
  saw the live index already in the new one (a wrong-space result).

After every round: the live index and any unfinished background rebuild pass their integrity and
consistency checks (SQLite, full text, vector cache), the live index answers a search in its own
space, and no file in the vault differs from what this script wrote (SHA-256). A killed foreground
rebuild may leave the live index missing or empty (it makes a new, empty folder live before it builds); only then (or when
the round started from such an index) may that search fail, and only with IndexNotFound /
IndexEmpty matching what is on disk. At the end one rebuild and one index run complete, and the
live index must hold exactly the chunk IDs and hashes a clean full index of the same vault gives.

Usage: .venv/bin/python bench/crash_soak.py [--quick] [--kills N] [--seed S]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import cli, machine, save, temp_home, verdict
from _spaces import WORDS, env_for, space, start_server, write_notes

DIMS = 64
N_NOTES = 300
MODELS = ("space-a", "space-b")
KINDS = ("index", "rebuild", "watch", "rebuild-race")
LABELS = {
    "index": "index",
    "rebuild": "rebuild --background",
    "watch": "watch",
    "rebuild-race": "rebuild racing searches",
}
WATCH_DEBOUNCE_MS = "300"
SEARCH_TIMEOUT_S = 120.0


def vault_hashes(vault: Path) -> dict[str, str]:
    return {
        p.relative_to(vault).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(vault.rglob("*"))
        if p.is_file()
    }


def home_of(root: Path) -> Any:
    """The index lifecycle of one vault's index root (where the live store is, the staging folders)."""
    from vaultlens.index.backends import get_backend
    from vaultlens.index.lifecycle import IndexHome

    return IndexHome(root, get_backend())


def numbered_dirs(root: Path) -> list[Path]:
    """Every ``r<k>`` folder under the index root: the live one, unfinished rebuilds, leftovers."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"r\d+", p.name))


def live_state(root: Path) -> tuple[str | None, int | None]:
    """(model of the live store's space, its chunk count); (None, None) when there is no live store.

    The model is None when no space is recorded yet. Read-only: never creates or changes a file."""
    from vaultlens.index.sqlite.schema import DB_NAME

    db = home_of(root).live_dir() / DB_NAME
    if not db.exists():
        return None, None
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"meta", "chunks"} <= tables:  # created, but killed before its schema was committed
            return None, 0
        row = con.execute("SELECT value FROM meta WHERE key = 'space'").fetchone()
        chunks = int(con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
    finally:
        con.close()
    return (str(json.loads(row[0])["model"]) if row else None), chunks


def live_model(root: Path) -> str:
    """The live store's model; space A when there is no store or no space yet (any space fits it)."""
    return live_state(root)[0] or MODELS[0]


def observed_model(root: Path) -> str:
    """What the live store's space is right now, as seen from outside while a rebuild may be writing:
    a model name, "none" (no store or no space yet) or "?" (it could not be read at this moment)."""
    try:
        return live_state(root)[0] or "none"
    except (sqlite3.Error, OSError, ValueError, KeyError):
        return "?"


def other(model: str) -> str:
    return MODELS[1 - MODELS.index(model)]


def chunk_keys(directory: Path) -> set[tuple[str, str]]:
    from vaultlens.index.sqlite.schema import DB_NAME

    con = sqlite3.connect(f"file:{directory / DB_NAME}?mode=ro", uri=True)
    try:
        return {(str(a), str(b)) for a, b in con.execute("SELECT id, content_hash FROM chunks")}
    finally:
        con.close()


def describe_state(root: Path) -> str:
    """The live index in a few words, for the report of a bad round."""
    live = home_of(root).live_dir()
    where = "root" if live == root else live.name
    try:
        model, chunks = live_state(root)
    except (sqlite3.Error, OSError, ValueError, KeyError) as exc:
        return f"live {where}: unreadable ({exc!r})"
    if chunks is None:
        return f"live {where}: no store"
    others = [d.name for d in numbered_dirs(root) if d != live]
    return f"live {where}: {model or 'no space'}, {chunks} chunks; other folders {others or 'none'}"


def findings(
    root: Path, vault: Path, url: str, expected: dict[str, str], may_be_empty: bool = False
) -> list[str]:
    """Everything wrong after a round; empty means the round passed.

    ``may_be_empty``: the round may legitimately leave no live store or an empty one (a killed
    foreground rebuild, or a round that started from such a state); the live index must then say so
    with IndexNotFound / IndexEmpty rather than answer."""
    import vaultlens as services
    from vaultlens.errors import IndexEmpty, IndexNotFound
    from vaultlens.index.sqlite.schema import DB_NAME
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.app import App

    found: list[str] = []
    live = home_of(root).live_dir()
    for d in [live, *numbered_dirs(root)]:
        if (d / DB_NAME).exists():
            store = SQLiteStore(d)
            try:
                found += [f"{d.name}: {p}" for p in store.problems()]
            finally:
                store.close()
    _, chunks = live_state(root)
    app = App.open(vault, space(url, live_model(root), DIMS))
    try:
        if not services.search(app, "unique5 river", limit=3):
            found.append("the live index answered nothing")
    except IndexNotFound as exc:
        if not (may_be_empty and chunks is None):
            found.append(f"search failed: {exc!r}")
    except IndexEmpty as exc:
        if not (may_be_empty and chunks == 0):
            found.append(f"search failed: {exc!r}")
    except Exception as exc:  # noqa: BLE001 - any other failure is a finding of the soak, listed with the rest
        found.append(f"search failed: {exc!r}")
    finally:
        app.close()
    if vault_hashes(vault) != expected:
        found.append("a vault file changed")
    return found


@dataclass
class Vault:
    """The seeded vault, the notes this script has put in it (sorted, so seeded picks repeat) and the
    SHA-256 every file must have: only this script's own edits change it."""

    root: Path
    notes: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)
    drift: list[str] = field(default_factory=list)  # files found changed when this script touched them
    serial: int = 0

    @classmethod
    def load(cls, root: Path) -> Vault:
        return cls(
            root, sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md")), vault_hashes(root)
        )

    def pick(self, rng: random.Random) -> str:
        return self.notes[rng.randrange(len(self.notes))]

    def new_name(self, rng: random.Random, stem: str) -> str:
        self.serial += 1
        return f"topic{rng.randrange(20)}/{stem}{self.serial:05d}.md"

    def _checked(self, rel: str) -> bytes:
        """The file's bytes, noting it when they are not what this script last wrote."""
        data = (self.root / rel).read_bytes()
        if hashlib.sha256(data).hexdigest() != self.hashes.get(rel):
            self.drift.append(f"{rel} changed before this script edited it")
        return data

    def append(self, rel: str, line: str) -> None:
        data = self._checked(rel) + line.encode()
        (self.root / rel).write_bytes(data)
        self.hashes[rel] = hashlib.sha256(data).hexdigest()

    def rename(self, rel: str, new: str) -> None:
        self._checked(rel)
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.root / rel, self.root / new)
        self.hashes[new] = self.hashes.pop(rel)

    def delete(self, rel: str) -> None:
        self._checked(rel)
        (self.root / rel).unlink()
        del self.hashes[rel]

    def create(self, rel: str, text: str) -> None:
        data = text.encode()
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_bytes(data)
        self.hashes[rel] = hashlib.sha256(data).hexdigest()

    def plan_edit(self, rng: random.Random) -> tuple[str, Callable[[], None]]:
        """One seeded edit (write, rename, delete or create), planned now and applied later."""
        op = rng.choice(("write", "write", "rename", "delete", "create"))
        if op == "delete" and len(self.notes) <= N_NOTES // 2:
            op = "create"
        rel = self.pick(rng) if op != "create" else ""
        if op == "write":
            apply = functools.partial(self.append, rel, f"\nwatch edit {rng.random()}\n")
        elif op == "rename":
            new = self.new_name(rng, "moved")
            self.notes[self.notes.index(rel)] = new
            apply = functools.partial(self.rename, rel, new)
        elif op == "delete":
            self.notes.remove(rel)
            apply = functools.partial(self.delete, rel)
        else:
            new = self.new_name(rng, "new")
            body = " ".join(rng.choice(WORDS) for _ in range(80))
            self.notes.append(new)
            apply = functools.partial(self.create, new, f"# New {self.serial}\n\nfresh{self.serial} {body}\n")
        self.notes.sort()
        return op, apply


@dataclass
class Round:
    killed: bool
    problems: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def kill_after(proc: subprocess.Popen[Any], deadline: float) -> bool:
    """SIGKILL ``proc`` at ``deadline`` (monotonic) unless it ended first; True when it was killed."""
    time.sleep(max(0.0, deadline - time.monotonic()))
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return killed


def simple_round(kind: str, rng: random.Random, v: Vault, url: str, current: str) -> Round:
    """``index`` after editing 60 notes, or ``rebuild --background`` into the other space."""
    if kind == "index":
        model = current
        for rel in rng.sample(v.notes, 60):
            v.append(rel, f"\nedit {rng.random()}\n")
        argv = [cli(), "index", "--vault", str(v.root)]
        delay = rng.uniform(0.3, 1.2)
    else:
        model = other(current)
        argv = [cli(), "rebuild", "--background", "--vault", str(v.root)]
        delay = rng.uniform(0.3, 2.5)
    env = env_for(space(url, model, DIMS, batch=16), VAULTLENS_INDEX__BATCH_FILES="20")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killed = kill_after(proc, time.monotonic() + delay)
    problems = []
    if not killed and proc.returncode != 0:
        problems.append(
            f"{kind} failed (exit {proc.returncode}): {(proc.stderr.read() if proc.stderr else '')[-300:]}"
        )
    return Round(killed, problems, {"model": model, "delay_s": round(delay, 2)})


def watch_round(rng: random.Random, v: Vault, url: str, current: str, work: Path) -> Round:
    """`vaultlens watch` in the live space, notes edited while it runs, SIGKILLed at a seeded moment."""
    delay = rng.uniform(1.0, 8.0)  # `watch` reconciles at start after ~2-4 s of imports here
    times = sorted(rng.uniform(0.2, delay) for _ in range(rng.randint(2, 5)))
    edits = [v.plan_edit(rng) for _ in times]
    env = env_for(
        space(url, current, DIMS, batch=16),
        VAULTLENS_INDEX__BATCH_FILES="20",
        VAULTLENS_WATCH__DEBOUNCE_MS=WATCH_DEBOUNCE_MS,
    )
    out, err = work / "watch.out", work / "watch.err"
    with out.open("wb") as fo, err.open("wb") as fe:
        proc = subprocess.Popen(
            [cli(), "watch", "--json", "--vault", str(v.root)], env=env, stdout=fo, stderr=fe
        )
    t0 = time.monotonic()
    try:
        for at, (_, apply) in zip(times, edits, strict=True):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            apply()
        killed = kill_after(proc, t0 + delay)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    errors = err.read_text(encoding="utf-8", errors="replace")
    flushes: Counter[str] = Counter()
    for line in out.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            flushes[str(json.loads(line).get("kind"))] += 1
        except (ValueError, AttributeError):
            flushes["unparsed"] += 1
    problems = []
    if not killed:
        problems.append(f"watch exited on its own (exit {proc.returncode}): {errors[-300:]}")
    if "Traceback" in errors:
        problems.append(f"watch printed a Traceback: {errors[-300:]}")
    info = {
        "model": current,
        "delay_s": round(delay, 2),
        "edits": [op for op, _ in edits],
        "flushes": dict(flushes),
    }
    return Round(killed, problems, info)


@dataclass
class SearchRecord:
    model: str  # the space the search was configured for
    seen: str  # the live store's space as observed just before the search started
    returncode: int | None  # None: it hung past SEARCH_TIMEOUT_S
    stdout: str
    stderr: str


def judge_search(r: SearchRecord, old: str, new: str, vault: Path) -> tuple[str, str | None]:
    """(outcome, problem or None) of one search that ran beside a foreground rebuild."""
    paths = re.findall(r"^\d+\. .*?\s(\S+\.md)\s", r.stdout, re.M)
    if r.returncode is None:
        return "hung", f"a search in {r.model} did not answer within {SEARCH_TIMEOUT_S:.0f}s"
    if "Traceback" in r.stderr or "Traceback" in r.stdout:
        return "traceback", f"a search in {r.model} printed a Traceback: {r.stderr[-400:]}"
    if r.returncode < 0:
        return "signal", f"a search in {r.model} died on signal {-r.returncode}"
    if r.returncode != 0:
        first = r.stderr.strip().splitlines()[0] if r.stderr.strip() else ""
        if not first:
            return (
                f"exit {r.returncode}",
                f"a search in {r.model} failed (exit {r.returncode}) without a message",
            )
        kind = re.sub(r"\d[\d.,]*", "N", first)[:70]
        return f"exit {r.returncode}: {kind}", None
    if old != new and r.model == old and r.seen == new and paths:
        return "wrong space", (
            f"a search in {old} returned {paths[:3]} after the live index was seen in {new} before it started"
        )
    missing = [p for p in paths if not (vault / p).is_file()]
    if missing:
        return "phantom", f"a search in {r.model} returned notes that are not in the vault: {missing[:3]}"
    return ("hits" if paths else "no hits"), None


def live_identity(root: Path) -> tuple[str, int] | None:
    """(store id of the live database, its chunk count), or None without one (or without its schema)."""
    from vaultlens.index.sqlite.schema import DB_NAME

    model, chunks = live_state(root)
    if chunks is None:
        return None
    con = sqlite3.connect(f"file:{home_of(root).live_dir() / DB_NAME}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
    except sqlite3.OperationalError:  # no schema yet
        row = None
    finally:
        con.close()
    return (str(row[0]) if row else ""), chunks


def race_outcome(root: Path, before: tuple[str, int] | None) -> str:
    """Where a foreground rebuild stopped: before it started over, or what it left of the new store."""
    after = live_identity(root)
    if after is None:
        return "no store"
    if before is not None and after[0] == before[0]:
        return "old store (killed before it started over)" if before[0] else "unknown"
    if after[1] == 0:
        return "new store, empty"
    full = before is not None and after[1] >= before[1]
    return "new store, as many chunks as before" if full else "new store, fewer chunks"


def race_round(rng: random.Random, v: Vault, url: str, current: str, root: Path) -> Round:
    """A foreground rebuild (same or other space) with searches beside it, SIGKILLed at a seeded moment."""
    new = current if rng.random() < 0.5 else other(current)
    delay = rng.uniform(2.0, 9.0)  # under the searches' load: start-over at ~3.5-6.5 s, done at ~7-8.5 s
    searcher_seed = rng.randrange(2**32)
    records: list[SearchRecord] = []
    stop = threading.Event()
    before = live_identity(root)

    def searcher(model: str, seed: int) -> None:
        srng = random.Random(seed)
        while not stop.is_set():
            query = f"unique{srng.randrange(N_NOTES)} river"
            seen = observed_model(root)
            argv = [cli(), "search", query, "-n", "3", "--vault", str(v.root)]
            env = env_for(space(url, model, DIMS), COLUMNS="250")
            try:
                p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=SEARCH_TIMEOUT_S)
                records.append(SearchRecord(model, seen, p.returncode, p.stdout, p.stderr))
            except subprocess.TimeoutExpired as exc:
                records.append(SearchRecord(model, seen, None, str(exc.stdout or ""), str(exc.stderr or "")))

    threads = [
        threading.Thread(target=searcher, args=(model, searcher_seed + k), daemon=True)
        for k, model in enumerate((current, new))
    ]
    for thread in threads:
        thread.start()
    env = env_for(space(url, new, DIMS, batch=16), VAULTLENS_INDEX__BATCH_FILES="20")
    proc = subprocess.Popen(
        [cli(), "rebuild", "--vault", str(v.root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        killed = kill_after(proc, time.monotonic() + delay)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    problems = []
    if not killed and proc.returncode != 0:
        problems.append(
            f"rebuild failed (exit {proc.returncode}): {(proc.stderr.read() if proc.stderr else '')[-300:]}"
        )
    outcomes: Counter[str] = Counter()
    for r in records:
        outcome, problem = judge_search(r, current, new, v.root)
        outcomes[outcome] += 1
        if problem:
            problems.append(problem)
    info = {
        "old": current,
        "new": new,
        "delay_s": round(delay, 2),
        "left": race_outcome(root, before),
        "searches": dict(outcomes),
    }
    return Round(killed, problems, info)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 kills")
    ap.add_argument("--kills", type=int, default=None, help="SIGKILLs to deliver (default 200)")
    ap.add_argument("--seed", type=int, default=20240613)
    args = ap.parse_args()
    target = args.kills or (20 if args.quick else 200)
    rng = random.Random(args.seed)

    from vaultlens.config.paths import index_dir

    with temp_home("crash") as tmp:
        vault = Path(tmp) / "vault"
        write_notes(vault, N_NOTES, args.seed)
        v = Vault.load(vault)
        server, url = start_server(DIMS, 0.01)
        bad: list[dict[str, Any]] = []
        kills = completions = 0
        counts = dict.fromkeys(KINDS, 0)  # kills per kind
        rounds = dict.fromkeys(KINDS, 0)
        bad_by_kind = dict.fromkeys(KINDS, 0)
        searches: Counter[str] = Counter()
        watch_flushes: Counter[str] = Counter()
        watch_edits: Counter[str] = Counter()
        race_left: Counter[str] = Counter()  # what each rebuild-race round left behind
        left_empty = 0  # rounds that ended with no live store or an empty one
        t0 = time.monotonic()
        try:
            subprocess.run(
                [cli(), "index", "--vault", str(vault)], env=env_for(space(url, MODELS[0], DIMS)), check=True
            )
            root = index_dir(vault)
            while kills < target:
                current = live_model(root)
                was_empty = not live_state(root)[1]
                x = rng.random()
                kind = KINDS[min(int(x * len(KINDS)), len(KINDS) - 1)]
                rounds[kind] += 1
                if kind == "watch":
                    rnd = watch_round(rng, v, url, current, Path(tmp))
                    watch_flushes.update(rnd.info["flushes"])
                    watch_edits.update(rnd.info["edits"])
                elif kind == "rebuild-race":
                    rnd = race_round(rng, v, url, current, root)
                    searches.update(rnd.info["searches"])
                    race_left[rnd.info["left"]] += 1
                else:
                    rnd = simple_round(kind, rng, v, url, current)
                if rnd.killed:
                    kills += 1
                    counts[kind] += 1
                else:
                    completions += 1
                problems = rnd.problems + v.drift
                v.drift.clear()
                problems += findings(
                    root, vault, url, v.hashes, may_be_empty=kind == "rebuild-race" or was_empty
                )
                if not live_state(root)[1]:
                    left_empty += 1
                if problems:
                    bad_by_kind[kind] += 1
                    bad.append(
                        {
                            "round": sum(rounds.values()),
                            "after_kill": kills,
                            "kind": kind,
                            "killed": rnd.killed,
                            **rnd.info,
                            "problems": problems[:5],
                            "state": describe_state(root),
                        }
                    )
                if rnd.killed and kills % 20 == 0:
                    print(
                        f"{kills} kills in {sum(rounds.values())} rounds, {completions} completions, "
                        f"{len(bad)} bad rounds ({time.monotonic() - t0:.0f}s)",
                        flush=True,
                    )

            final = other(live_model(root))
            env = env_for(space(url, final, DIMS))
            subprocess.run(
                [cli(), "rebuild", "--background", "--vault", str(vault)],
                env=env,
                check=True,
                capture_output=True,
            )
            subprocess.run([cli(), "index", "--vault", str(vault)], env=env, check=True, capture_output=True)
            converged_keys = chunk_keys(home_of(root).live_dir())
            problems = v.drift + findings(root, vault, url, v.hashes)
            os.environ["VAULTLENS_HOME"] = str(Path(tmp) / "clean-home")
            subprocess.run(
                [cli(), "index", "--vault", str(vault)],
                env=env_for(space(url, final, DIMS)),
                check=True,
                capture_output=True,
            )
            clean_keys = chunk_keys(home_of(index_dir(vault)).live_dir())
        finally:
            server.kill()
            server.wait()

    converged = converged_keys == clean_keys and not problems
    result = {
        "machine": machine(),
        "seed": args.seed,
        "notes": N_NOTES,
        "notes_at_end": len(v.notes),
        "rounds": sum(rounds.values()),
        "rounds_by_kind": rounds,
        "kills": kills,
        "kills_by_op": counts,
        "completions": completions,
        "bad_rounds": len(bad),
        "bad_by_kind": bad_by_kind,
        "bad": bad[:10],
        "rounds_leaving_no_or_empty_index": left_empty,
        "watch_flushes_seen": dict(watch_flushes),
        "watch_edits": dict(watch_edits),
        "race_searches": dict(searches.most_common()),
        "race_left": dict(race_left.most_common()),
        "final_problems": problems,
        "converged_to_clean_index": converged,
        "seconds": round(time.monotonic() - t0, 1),
        "pass": not bad and converged,
    }
    for kind in KINDS:
        print(
            f"  {LABELS[kind]:<24} {rounds[kind]:>4} rounds, {counts[kind]:>4} SIGKILLs, "
            f"{rounds[kind] - counts[kind]:>3} finished first, bad rounds: {bad_by_kind[kind]}"
        )
    n_search = sum(searches.values())
    failed_clearly = sum(n for k, n in searches.items() if k.startswith("exit "))
    print(
        f"  searches beside a foreground rebuild: {n_search} ({searches['hits']} with hits, "
        f"{searches['no hits']} without, {failed_clearly} clean vaultlens errors, "
        f"{searches['traceback']} tracebacks, {searches['wrong space']} wrong-space results); "
        f"the rebuild left: {dict(race_left.most_common())}"
    )
    print(
        f"  watch: edits {dict(watch_edits.most_common())}; flushes seen before the kills "
        f"{dict(watch_flushes.most_common())}"
    )
    print(
        f"{kills} SIGKILLs in {result['rounds']} rounds ({completions} runs finished before their kill) "
        f"in {result['seconds']:.0f}s; bad rounds: {len(bad)} "
        f"({', '.join(f'{k} {bad_by_kind[k]}' for k in KINDS)}); "
        f"converged to a clean index: {converged} -> {verdict(bool(result['pass']))}"
    )
    for b in bad[:5]:
        print("  ", b)
    print(f"results: {save('crash_soak' + ('_quick' if args.quick else ''), result)}")
    sys.exit(0 if result["pass"] else 1)


if __name__ == "__main__":
    main()
