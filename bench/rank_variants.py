"""Ranking variants for issue 10, measured without re-indexing: a re-implementation of
``services.search.rank_notes`` with switches for each idea (chunk aggregation, note-card vectors,
a second opinion on the top candidates, rank fusion of note views, a second model's vectors),
scored on ../shared/eval/queries.jsonl, queries-docs.jsonl and SciFact with tune (T) / held (H)
halves. Why a re-implementation: one run of a variant takes seconds instead of an index rebuild,
and ``check`` proves the baseline path ranks exactly as the product does.

Run after ``vaultlens eval queries`` (both files) and ``vaultlens eval beir`` indexed the data
under the same VAULTLENS_HOME::

    VAULTLENS_HOME=/tmp/vl-quality .venv/bin/python bench/rank_variants.py check
    VAULTLENS_HOME=/tmp/vl-quality .venv/bin/python bench/rank_variants.py grid bench/rank_variants.json
    VAULTLENS_HOME=/tmp/vl-quality .venv/bin/python bench/rank_variants.py grid FILE --no-sci

Split: a query with an even 0-based line index in its file is in the tune half (T, the CLI's
``h1``), odd in the held half (H, ``h2``); SciFact by the order of qrels/test.tsv. Query and
note-card vectors of the bundled model are cached in RANK_CACHE (default /tmp/vaultlens-rank).
Variants with a second model (``e5_*``, ``e5:`` views) take its chunk vectors from the index when
it was filled with ``embedding.tier = e5``, and embed anything else (queries, note cards, changed
texts) with the product's own ``E5Tier`` (the ``quality`` extra), cached in RANK_CACHE/e5.pkl;
``part-*.npy`` + ``part-*.json`` files in RANK_CACHE/e5out (the first research run's vectors) are
read into that cache too.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import pickle
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import vaultlens
from vaultlens.index.indexing.texts import embed_text
from vaultlens.index.lexical import query_terms, terms
from vaultlens.services.finding.search import NOTE_CANDIDATES, rank_notes

SH = Path(os.environ.get("VAULTLENS_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CACHE = Path(os.environ.get("RANK_CACHE", "/tmp/vaultlens-rank"))
CACHE.mkdir(parents=True, exist_ok=True)
VAULTS = {
    "ru-wiki": SH / "vaults/ru-wiki",
    "kepano": SH / "vaults/kepano",
    "docs-en": SH / "vaults/fastapi-docs/en",
    "docs-ru": SH / "vaults/fastapi-docs/ru",
    "docs": SH / "vaults/fastapi-docs",
    "scifact": Path(os.environ.get("VAULTLENS_HOME", "")) / "eval/scifact",  # written by `eval beir`
}
LEX_POOL_MAX = 1000  # lexical chunks fetched once per query; variants cut their own pool


# ---------------------------------------------------------------- embedding caches
class VecCache:
    """text -> vector, persisted (sha1 of the text as key)."""

    def __init__(self, name: str):
        self.path = CACHE / f"{name}.pkl"
        self.d: dict[str, np.ndarray] = pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        self.dirty = False

    @staticmethod
    def key(t: str) -> str:
        return hashlib.sha1(t.encode()).hexdigest()

    def missing(self, texts):
        return [t for t in dict.fromkeys(texts) if self.key(t) not in self.d]

    def get(self, texts) -> np.ndarray:
        return np.stack([self.d[self.key(t)] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def put(self, texts, vecs):
        for t, v in zip(texts, vecs, strict=True):
            self.d[self.key(t)] = np.asarray(v, dtype=np.float32)
        self.dirty = True

    def save(self):
        if self.dirty:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(self.d))
            tmp.replace(self.path)
            self.dirty = False


_use = None
USE_CACHE = VecCache("use")


def use_embed(texts: list[str]) -> np.ndarray:
    global _use
    miss = USE_CACHE.missing(texts)
    if miss:
        if _use is None:
            _use = vaultlens.App.open(VAULTS["kepano"]).provider()
        for i in range(0, len(miss), 64):
            USE_CACHE.put(miss[i : i + 64], _use.embed(miss[i : i + 64]))
        USE_CACHE.save()
    return USE_CACHE.get(texts)


E5_CACHE = VecCache("e5")  # filled from e5out/ (written by e5_embed.py in e5venv)


def load_e5_parts():
    import glob as _g

    seen = E5_CACHE.d
    for f in sorted(_g.glob(str(CACHE / "e5out/part-*.json"))):
        texts = json.loads(Path(f).read_text())
        if texts and VecCache.key(texts[-1]) in seen and VecCache.key(texts[0]) in seen:
            continue
        E5_CACHE.put(texts, np.load(f[:-5] + ".npy"))


load_e5_parts()
_e5 = None


def e5_fill(texts: list[str]) -> None:
    """Embed texts missing from the e5 cache with the product's tier (the [quality] extra)."""
    global _e5
    miss = E5_CACHE.missing(texts)
    if not miss:
        return
    if _e5 is None:
        from vaultlens.embedding.tiers.e5 import E5Tier

        _e5 = E5Tier()
    print(f"embedding {len(miss)} e5 texts", file=sys.stderr)
    for i in range(0, len(miss), 32):
        part = miss[i : i + 32]
        qs = [t for t in part if t.startswith("query: ")]
        ps = [t for t in part if not t.startswith("query: ")]
        if qs:
            E5_CACHE.put(qs, _e5.embed_queries([t.removeprefix("query: ") for t in qs]))
        if ps:
            E5_CACHE.put(ps, _e5.embed([t.removeprefix("passage: ") for t in ps]))
    E5_CACHE.save()


# ---------------------------------------------------------------- vault context
ANCHOR = re.compile(r"[ \t]*\{[ \t]*#[^}\n]*\}")  # anywhere: heading lines and heading paths
HEADING_ID = re.compile(r"\s*\{\s*#[^}]*\}\s*$")  # "Title { #anchor }" (mkdocs attr list)


@dataclass
class Vault:
    name: str
    app: object
    keys: np.ndarray
    vecs: np.ndarray
    cpath: list[str]
    notes: list[str]
    nidx: np.ndarray  # note index of each chunk
    nchunks: np.ndarray
    chunks: dict
    records: dict
    titles: dict
    key_pos: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)

    @classmethod
    def load(cls, name: str) -> Vault:
        app = vaultlens.App.open(VAULTS[name])
        with app.reading() as store:
            keys, vecs = store.matrix()
            keys = np.asarray(keys)
            vecs = np.asarray(vecs, dtype=np.float32)
            lk, lpaths, _ = store.chunk_layout()
            assert (np.asarray(lk) == keys).all()
            chunks = store.chunks(keys.tolist())
            records = {p: r for p, r in store.file_records().items() if r.status == "indexed"}
            notes = sorted(set(lpaths))
            titles = store.titles(notes)
        pos = {p: i for i, p in enumerate(notes)}
        nidx = np.array([pos[p] for p in lpaths], dtype=np.int64)
        v = cls(
            name,
            app,
            keys,
            vecs,
            list(lpaths),
            notes,
            nidx,
            np.bincount(nidx, minlength=len(notes)),
            chunks,
            records,
            titles,
        )
        v.key_pos = {int(k): i for i, k in enumerate(keys.tolist())}
        return v

    def centered(self, how: str, qvec: np.ndarray) -> np.ndarray:
        """Cosines after removing the vault's common direction(s) from chunk and query vectors."""
        if ("ctr", how) not in self.cache:
            mu = self.vecs.mean(axis=0)
            x = self.vecs - mu
            n = int(how[2:]) if how.startswith("pc") else 0
            pcs = np.linalg.svd(x, full_matrices=False)[2][:n] if n else np.zeros((0, x.shape[1]))
            x = x - (x @ pcs.T) @ pcs
            x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-9
            self.cache[("ctr", how)] = (mu, pcs, x.astype(np.float32))
        mu, pcs, x = self.cache[("ctr", how)]
        q = qvec - mu
        q = q - (q @ pcs.T) @ pcs
        return x @ (q / (np.linalg.norm(q) + 1e-9)).astype(np.float32)

    def vocab(self):
        if "vocab" not in self.cache:
            cnt: dict[str, int] = defaultdict(int)
            for ch in self.chunks.values():
                for w in re.findall(r"[^\W\d_]{3,}", ch.text.lower()):
                    cnt[w] += 1
            words = sorted(w for w, n in cnt.items() if n >= 2)
            vecs = use_embed(words)
            stems = [terms(w)[0] if terms(w) else w for w in words]
            self.cache["vocab"] = (words, vecs, stems)
        return self.cache["vocab"]

    def expansion_notes(self, qs: str, t: float, k: int, scope: str) -> dict:
        words, vecs, stems = self.vocab()
        qstems = set(query_terms(qs))
        qwords = [w for w in dict.fromkeys(re.findall(r"[^\W\d_]{3,}", qs.lower())) if terms(w)[0] in qstems]
        exp: set[str] = set()
        if qwords:
            sims = vecs @ use_embed(qwords).T
            for col in range(sims.shape[1]):
                for i in np.argsort(-sims[:, col])[: k + 8]:
                    if sims[i, col] < t:
                        break
                    if stems[i] not in qstems and len(exp) < 64:
                        exp.add(stems[i])
        key = ("qx", tuple(sorted(exp)), scope)
        if key not in self.cache:
            notes = {}
            if exp:
                with self.app.reading() as store:
                    notes = dict(store.lexical(sorted(exp), 200, NOTE_CANDIDATES).notes)
                if scope:
                    notes = {p: s for p, s in notes.items() if p.startswith(scope)}
            self.cache[key] = notes
        return self.cache[key]

    # ---- note-level texts ("what a note says about itself")
    def note_chunk_idx(self, j: int) -> np.ndarray:
        if "nci" not in self.cache:
            order = np.argsort(self.nidx, kind="stable")
            bounds = np.searchsorted(self.nidx[order], np.arange(len(self.notes) + 1))
            self.cache["nci"] = [order[bounds[i] : bounds[i + 1]] for i in range(len(self.notes))]
        return self.cache["nci"][j]

    def note_parts(self, j: int):
        p = self.notes[j]
        rec = self.records.get(p)
        title = self.titles.get(p) or Path(p).stem
        names = [title, *(rec.aliases if rec else [])]
        heads: list[str] = []
        body = ""
        for i in self.note_chunk_idx(j):
            c = self.chunks[int(self.keys[i])]
            if c.frontmatter:
                continue
            for h in c.heading_path[:2]:  # H1/H2 level
                h = HEADING_ID.sub("", h).strip()
                if h and h not in heads and h not in names:
                    heads.append(h)
            if len(body) < 400:
                body += " " + c.text
        return names, heads, body.strip()

    def note_text(self, j: int, kind: str) -> str:
        names, heads, body = self.note_parts(j)
        first = " / ".join(names + heads[:1])  # title, aliases and the first heading (the H1)
        if kind == "title":
            return first
        if kind == "heads":  # + further H1/H2 headings, up to ~400 characters
            out = [first]
            for h in heads[1:]:
                if sum(len(x) for x in out) + len(h) > 400:
                    break
                out.append(h)
            return "\n".join(out)
        if kind == "lead":  # + the first ~300 characters of the body
            return first + "\n" + body[:300]
        raise ValueError(kind)

    def note_vecs(self, kind: str) -> np.ndarray:
        k = ("nv", kind)
        if k not in self.cache:
            if kind.startswith("e5:"):
                texts = ["passage: " + self.note_text(j, kind[3:]) for j in range(len(self.notes))]
                e5_fill(texts)
                self.cache[k] = E5_CACHE.get(texts)
            elif kind == "centroid":
                m = np.zeros((len(self.notes), self.vecs.shape[1]), np.float64)
                np.add.at(m, self.nidx, self.vecs)
                m /= np.linalg.norm(m, axis=1, keepdims=True) + 1e-12
                self.cache[k] = m.astype(np.float32)
            else:
                texts = [self.note_text(j, kind) for j in range(len(self.notes))]
                self.cache[k] = use_embed(texts)
        return self.cache[k]

    def stripped_vecs(self) -> np.ndarray:
        if "strip" not in self.cache:
            texts = chunk_embed_texts(self)
            stripped = [ANCHOR.sub("", t) for t in texts]
            # a vault without anchors keeps its index vectors (SciFact would re-embed 6k chunks)
            self.cache["strip"] = use_embed(stripped) if stripped != texts else self.vecs
        return self.cache["strip"]

    # ---- title/heading lexical field (BM25 over title + aliases + headings per note)
    def title_bm25(self):
        if "tbm" not in self.cache:
            docs = []
            for p in self.notes:
                rec = self.records.get(p)
                parts = [
                    p.rsplit(".", 1)[0].replace("/", " "),
                    self.titles.get(p) or "",
                    *(rec.aliases if rec else []),
                ]
                docs.append(terms(" ".join(parts)))
            df = defaultdict(int)
            for d in docs:
                for t in set(d):
                    df[t] += 1
            avg = sum(len(d) for d in docs) / max(1, len(docs))
            tf = [defaultdict(int) for _ in docs]
            for i, d in enumerate(docs):
                for t in d:
                    tf[i][t] += 1
            self.cache["tbm"] = (docs, df, avg, tf)
        return self.cache["tbm"]

    def title_lex(self, q: str) -> np.ndarray:
        docs, df, avg, tf = self.title_bm25()
        n = len(docs)
        qt = query_terms(q)
        idf = {t: max(math.log((n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)), 1e-6) for t in qt}
        mass = sum(idf.values()) or 1.0
        out = np.zeros(n)
        k1, b = 1.2, 0.75
        for i in range(n):
            s = 0.0
            L = len(docs[i])
            for t in qt:
                f = tf[i].get(t, 0)
                if f:
                    s += idf[t] * f * (k1 + 1) / (f + k1 * (1 - b + b * L / avg))
            out[i] = s / mass
        return out

    # ---- per query: cosines and lexical hits (cached)
    def query_data(self, q: str, scope: str = ""):
        k = ("q", q, scope)
        if k in self.cache:
            return self.cache[k]
        lexfile = CACHE / f"lex-{self.name}.pkl"
        if "lexdisk" not in self.cache:
            self.cache["lexdisk"] = pickle.loads(lexfile.read_bytes()) if lexfile.exists() else {}
        lexd = self.cache["lexdisk"]
        qs = q.strip()[:2000]
        if qs not in lexd:
            with self.app.reading() as store:
                hits = store.lexical(query_terms(qs), LEX_POOL_MAX, NOTE_CANDIDATES)
            lexd[qs] = (dict(hits.chunks), dict(hits.notes))
            self.cache["lexdirty"] = True
        chunks, notes = lexd[qs]
        qvec = use_embed([qs])[0]
        dense = self.vecs @ qvec
        mask = None
        if scope:
            mask = np.array([p.startswith(scope) for p in self.cpath])
            chunks = {c: s for c, s in chunks.items() if self.cpath[self.key_pos[c]].startswith(scope)}
            notes = {p: s for p, s in notes.items() if p.startswith(scope)}
        self.cache[k] = (qs, qvec, dense, chunks, notes, mask)
        return self.cache[k]

    def save(self):
        if self.cache.get("lexdirty"):
            (CACHE / f"lex-{self.name}.pkl").write_bytes(pickle.dumps(self.cache["lexdisk"]))
            self.cache["lexdirty"] = False


# ---------------------------------------------------------------- ranking
BASE = dict(
    pool=200,  # dense candidates (search.candidates)
    lex_pool=200,  # lexical chunk candidates
    max_lw=0.8,  # search.max_lexical_weight
    agg="max",  # max | top2 | lenprior | softmax
    agg_w=0.0,  # weight of the aggregation term
    note="",  # note-level dense vector kind: "" | title | heads | lead | centroid
    note_w=0.0,  # its share of the dense part
    note_norm="pool",  # pool: same affine map as chunk cosines; own: min-max over candidate notes
    note_cands=0,  # extra candidate notes from the note vectors' top-k
    tlex_w=0.0,  # title/heading BM25 share (times the lexical weight's confidence-free form)
    conf="chunk",  # confidence source: chunk (today)
    e5_w=0.0,  # second opinion: weight of e5 max-chunk cosine over the top e5_k notes
    e5_k=30,
    e5_first=0.0,  # e5 cosine share in the FIRST stage dense part (optional tier: all chunks)
    e5_note="",  # "", "max" (e5 max chunk), for the second opinion
    notes=None,  # {kind: weight}: several note-level dense views at once (overrides note/note_w)
    fusion="mix",  # mix (today's weighted sum) | rrf (reciprocal ranks of D and L)
    rrf_k=60,
    prf=0.0,  # Rocchio: query vector + prf * mean of the top prf_k chunk vectors (dense side)
    prf_k=3,
    conf_floor=0.0,
    dnorm="minmax",
    dnorm_p=0.0,
    lex_level="note",
    strip_anchors=False,
    mrrf=None,
    mrrf_k=60,
    card="",  # note card view (title | heads) used as its own signal
    card_mode="max",
    card_margin=0.0,
    rr2=0,  # USE second opinion: rerank the top rr2 by card / centroid
    rr2_view="heads",
    lex_gate=0.0,  # lexical credit times the note's dense part ** lex_gate (0: today)
    center="",  # "" | "mean": chunk and query vectors minus the vault's mean | "pcN": also without the top N PCs
    qx=0.0,  # weight of BM25 over query-word neighbours in the vault's vocabulary (model-induced lexicon)
    qx_t=0.8,  # cosine a vocabulary word needs to a query word
    qx_k=3,  # neighbours per query word
    rr2_w=0.0,  # note (today) | chunk | max (max of note-normalised and chunk-normalised)
)


SDPOOL = [0.0]
SDALL = [0.0]


def blom(n: int) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def rank(v: Vault, q: str, cfg: dict, scope: str = "", limit: int = 20) -> list[str]:
    c = {**BASE, **cfg}
    qs, qvec, dense_all, lchunks, lnotes, mask = v.query_data(q, scope)
    if c["strip_anchors"]:  # chunk vectors re-embedded without mkdocs heading anchors "{ #id }"
        dense_all = v.stripped_vecs() @ qvec
    if c["center"]:
        dense_all = v.centered(c["center"], qvec)
    d_all = dense_all.astype(np.float32)
    if c["prf"]:
        dm = d_all if mask is None else np.where(mask, d_all, -np.inf)
        tk = np.argpartition(-dm, c["prf_k"])[: c["prf_k"]]
        q2 = qvec + c["prf"] * v.vecs[tk].mean(axis=0)
        qvec = (q2 / np.linalg.norm(q2)).astype(np.float32)
        d_all = v.vecs @ qvec
    if c["e5_first"]:
        e5all = e5_chunk_cos(v, qs, c["strip_anchors"])
        if c["e5_first"] >= 1:
            d_all = e5all.astype(np.float32)
        else:  # z-scores over the searched chunks, so the two models' cosine scales agree
            sel = mask if mask is not None else slice(None)

            def z(x: np.ndarray) -> np.ndarray:
                return (x - x[sel].mean()) / (x[sel].std() + 1e-9)

            d_all = ((1 - c["e5_first"]) * z(d_all) + c["e5_first"] * z(e5all)).astype(np.float32)
    d_masked = np.where(mask, d_all, -np.inf) if mask is not None else d_all
    k = min(c["pool"], int(np.isfinite(d_masked).sum()))
    top = np.argpartition(-d_masked, k - 1)[:k]
    dense_keys = set(v.keys[top].tolist())
    lex_sorted = sorted(lchunks.items(), key=lambda kv: -kv[1])[: c["lex_pool"]]
    lpool = dict(lex_sorted)
    extra = [v.key_pos[kk] for kk in lpool if kk not in dense_keys]
    pos = np.concatenate([top, np.array(extra, dtype=np.int64)]) if extra else top
    d = d_all[pos].astype(np.float64)
    dmin, dmax = d.min(), d.max()
    if c["dnorm"] == "topk":  # the floor is the k-th dense cosine; lexical extras below it clip to 0
        dmin = float(d[: len(top)].min())
    elif c["dnorm"] == "pct":  # floor at a percentile of the pool (robust to a few very low extras)
        dmin = float(np.percentile(d, c["dnorm_p"]))
    elif c["dnorm"] == "abs":  # fixed floor on the raw cosine
        dmin = c["dnorm_p"]
    scale = (dmax - dmin) if dmax > dmin else 1.0
    d_norm = np.clip((d - dmin) / scale, 0, None) if dmax > dmin else np.ones_like(d)
    SDPOOL[0] = float(d_norm[: len(top)].std())
    sel_all = d_all if mask is None else d_all[mask]
    SDALL[0] = float(sel_all.std() / scale)
    # confidence and lexical weight (today: max chunk score over the lexical pool)
    conf = min(1.0, max(lpool.values(), default=0.0))
    if c["conf"] == "note":
        conf = min(1.0, max(lnotes.values(), default=0.0))
    conf = max(conf, c["conf_floor"]) if lpool else conf
    a = c["max_lw"] * conf if lpool else 0.0
    best_note = max(lnotes.values(), default=0.0)
    # per note: chunk scores
    per: dict[int, list[float]] = defaultdict(list)
    for i, dn in zip(pos.tolist(), d_norm.tolist(), strict=True):
        per[int(v.nidx[i])].append(dn)
    cand = set(per)
    nv = None
    if c["note"] and (c["note_w"] or c["note_cands"]):
        nv = v.note_vecs(c["note"]) @ qvec
        if c["note_cands"]:
            sc = nv.copy()
            if scope:
                sc = np.where(np.array([p.startswith(scope) for p in v.notes]), sc, -np.inf)
            for j in np.argsort(-sc)[: c["note_cands"]].tolist():
                if np.isfinite(sc[j]) and j not in per:
                    # its chunks' cosines on the pool's scale
                    idx = v.note_chunk_idx(j)
                    per[j] = [max(0.0, float(x)) for x in ((d_all[idx] - dmin) / scale).tolist()]
                    cand.add(j)
    cl = sorted(cand)
    D = np.zeros(len(cl))
    for ii, j in enumerate(cl):
        s = sorted(per[j], reverse=True)
        if c["agg"] == "max":
            D[ii] = s[0]
        elif c["agg"] == "top2":
            D[ii] = s[0] + c["agg_w"] * (s[1] if len(s) > 1 else 0.0)
        elif c["agg"] == "lenprior":
            D[ii] = s[0] - c["agg_w"] * math.log(v.nchunks[j])
        elif c["agg"] == "mean2":  # mean of the best two (a lone chunk counts once)
            D[ii] = (s[0] + (s[1] if len(s) > 1 else s[0])) / 2 * c["agg_w"] + s[0] * (1 - c["agg_w"])
        elif c["agg"] == "lme":  # log-mean-exp over ALL the note's chunks (soft max, count does not help)
            tau = c["agg_w"]
            allv = (d_all[v.note_chunk_idx(j)].astype(np.float64) - dmin) / scale
            m = allv.max()
            D[ii] = s[0] + tau * math.log(np.mean(np.exp((allv - m) / tau)))
        elif c["agg"] == "lmepool":  # same over pool chunks; unseen chunks count as the pool floor 0
            tau = c["agg_w"]
            n = int(v.nchunks[j])
            arr = np.array(s)
            tot = np.exp((arr - s[0]) / tau).sum() + max(0, n - len(s)) * math.exp(-s[0] / tau)
            D[ii] = s[0] + tau * math.log(tot / n)
        elif c["agg"] == "evmax":  # best chunk minus the expected max of n draws (Blom), pool sd units
            n = int(v.nchunks[j])
            D[ii] = s[0] - c["agg_w"] * SDPOOL[0] * blom(n)
        elif c["agg"] == "evall":  # expected-max correction with the vault's own cosine spread
            n = int(v.nchunks[j])
            D[ii] = s[0] - c["agg_w"] * SDALL[0] * blom(n)
    if c["card"]:
        cv = v.note_vecs(c["card"]) @ qvec
        cn = (cv[cl].astype(np.float64) - dmin) / scale
        if c["card_mode"] == "max":
            D = np.maximum(D, cn - c["card_margin"])
        elif c["card_mode"] == "add":
            D = D + c["card_margin"] * np.clip(cn, 0, None)
    views = dict(c["notes"] or {})
    if nv is not None and c["note_w"] and not views:
        views = {c["note"]: c["note_w"]}
    if views:
        mix = (1 - sum(views.values())) * D
        for kind, w in views.items():
            if kind.startswith("e5:"):
                e5_fill(["query: " + qs])
                t = (v.note_vecs(kind) @ E5_CACHE.get(["query: " + qs])[0])[cl].astype(np.float64)
                tn = (t - t.min()) / (t.max() - t.min()) if t.max() > t.min() else np.ones_like(t)
            else:
                t = (v.note_vecs(kind) @ qvec)[cl].astype(np.float64)
            if kind.startswith("e5:"):
                pass
            elif c["note_norm"] == "pool":
                tn = (t - dmin) / scale
            else:
                tn = (t - t.min()) / (t.max() - t.min()) if t.max() > t.min() else np.ones_like(t)
            mix = mix + w * tn
        D = mix
    if c["qx"]:
        xn = v.expansion_notes(qs, c["qx_t"], c["qx_k"], scope)
        xb = max(xn.values(), default=0.0)
        if xb > 0:
            Lx = np.array([xn.get(v.notes[j], 0.0) for j in cl]) / xb
            D = D + c["qx"] * Lx
    L = (
        np.array([lnotes.get(v.notes[j], 0.0) for j in cl]) / best_note
        if best_note > 0
        else np.zeros(len(cl))
    )
    if c["lex_level"] != "note" and lpool:
        top_chunk = max(lpool.values())
        lc = defaultdict(float)
        for kk, sc in lpool.items():
            j = int(v.nidx[v.key_pos[kk]])
            lc[j] = max(lc[j], sc / top_chunk)
        Lc = np.array([lc.get(j, 0.0) for j in cl])
        L = Lc if c["lex_level"] == "chunk" else np.maximum(L, Lc)
    if c["lex_gate"]:  # lexical evidence counts as far as the dense side finds the note plausible
        L = L * np.clip(D, 0.0, 1.0) ** c["lex_gate"]
        L = L / L.max() if L.max() > 0 else L
    if c["fusion"] == "rrf":
        rd = np.argsort(np.argsort(-D))
        rl = np.argsort(np.argsort(-L))
        S = (1 - a) / (c["rrf_k"] + rd) + a * np.where(L > 0, 1 / (c["rrf_k"] + rl), 0)
    else:
        S = (1 - a) * D + a * L
    if c["tlex_w"]:
        tl = v.title_lex(qs)[cl]
        tmax = tl.max()
        if tmax > 0:
            S = S + c["tlex_w"] * min(1.0, tmax) * tl / tmax
    if c["mrrf"]:  # rank fusion of the fused score with note-level views
        k = c["mrrf_k"]
        rS = np.argsort(np.argsort(-S, kind="stable"), kind="stable")
        F = 1.0 / (k + rS)
        for kind, w in c["mrrf"].items():
            t = (v.note_vecs(kind) @ qvec)[cl]
            rv = np.argsort(np.argsort(-t, kind="stable"), kind="stable")
            F = F + w / (k + rv)
        S = F
    order = sorted(range(len(cl)), key=lambda ii: (-S[ii], v.notes[cl[ii]]))
    if c["rr2"]:
        head = order[: c["rr2"]]
        nvv = v.note_vecs(c["rr2_view"]) @ qvec
        es = np.array([nvv[cl[ii]] for ii in head], dtype=np.float64)
        ss = S[head]
        comb = (1 - c["rr2_w"]) * mm(ss) + c["rr2_w"] * mm(es)
        head = [head[i] for i in sorted(range(len(head)), key=lambda i: -comb[i])]
        order = head + order[c["rr2"] :]
    if c["e5_w"]:
        k5 = c["e5_k"]
        head = order[:k5]
        e5c = e5_chunk_cos(v, qs)
        es = np.array([e5c[v.note_chunk_idx(cl[ii])].max() for ii in head])
        ss = S[head]
        comb = (1 - c["e5_w"]) * mm(ss) + c["e5_w"] * mm(es)
        head = [head[i] for i in sorted(range(len(head)), key=lambda i: -comb[i])]
        order = head + order[k5:]
    return [v.notes[cl[ii]] for ii in order[:limit]]


def mm(x: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1] (all ones when flat)."""
    return (x - x.min()) / (x.max() - x.min()) if x.max() > x.min() else np.ones_like(x)


def e5_chunk_cos(v: Vault, qs: str, strip: bool = False) -> np.ndarray:
    """e5 cosines of every chunk (``strip``: of its text without mkdocs heading anchors)."""
    k = ("e5m", strip)
    if k not in v.cache:
        texts = chunk_embed_texts(v)
        wanted = [ANCHOR.sub("", t) for t in texts] if strip else texts
        with v.app.reading() as store:  # an index filled with embedding.tier = e5 holds them all
            ids, tier_vecs = store.matrix(tier=True)
        if wanted == texts and ids.shape == v.keys.shape and (ids == v.keys).all():
            v.cache[k] = np.asarray(tier_vecs, dtype=np.float32)
        else:
            e5_fill(["passage: " + t for t in wanted])
            v.cache[k] = E5_CACHE.get(["passage: " + t for t in wanted])
    e5_fill(["query: " + qs])
    qv = E5_CACHE.get(["query: " + qs])[0]
    return v.cache[k] @ qv


def chunk_embed_texts(v: Vault) -> list[str]:
    out = []
    for kk in v.keys.tolist():
        ch = v.chunks[kk]
        out.append(embed_text(v.titles.get(ch.path) or Path(ch.path).stem, ch)[:2400])
    return out


# ---------------------------------------------------------------- data sets
def load_queries(file: str):
    rows = []
    for i, line in enumerate((SH / "eval" / file).read_text().splitlines()):
        if not line.strip():
            continue
        q = json.loads(line)
        q["half"] = "T" if i % 2 == 0 else "H"
        folder = Path(q["vault"]).name
        if folder in ("en", "ru"):
            note_lang = folder
            q["vname"] = "docs-" + folder
            q["vlabel"] = "docs"
        else:
            note_lang = ({"en": "ru", "ru": "en"}[q["lang"]]) if q["cross_lingual"] else q["lang"]
            q["vname"] = folder
            q["vlabel"] = folder
        q["dir"] = f"{q['lang']}→{note_lang}"
        rows.append(q)
    return rows


def groups_of(q) -> list[str]:
    g = [f"{q['vlabel']} {q['dir']}"]
    if q["vlabel"] == "docs" and q["cross_lingual"]:
        g.append("docs cross")
    return g


_VAULTS: dict[str, Vault] = {}
ONLY = [x for x in os.environ.get("ONLY", "").split(",") if x]


def vault(name: str) -> Vault:
    if name not in _VAULTS:
        _VAULTS[name] = Vault.load(name)
    return _VAULTS[name]


def eval_queries(cfg: dict, files=("queries.jsonl", "queries-docs.jsonl"), one_vault=False):
    """{group: {half: [hit1, hit5, rr] rows}}"""
    res: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for f in files:
        for q in load_queries(f):
            if ONLY and q["vname"] not in ONLY:
                continue
            if one_vault and q["vlabel"] == "docs":
                folder = Path(q["vault"]).name + "/"
                ranked = [p[len(folder) :] for p in rank(vault("docs"), q["query"], cfg, scope=folder)]
            else:
                ranked = rank(vault(q["vname"]), q["query"], cfg)
            rel = set(q["relevant"])
            rr = next((1 / (i + 1) for i, p in enumerate(ranked) if p in rel), 0.0)
            row = (float(bool(set(ranked[:1]) & rel)), float(bool(set(ranked[:5]) & rel)), rr)
            for g in groups_of(q):
                res[g][q["half"]].append(row)
                res[g]["all"].append(row)
    return res


_SCIFACT = None


def scifact():
    global _SCIFACT
    if _SCIFACT is None:
        b = SH / "bench/scifact"
        queries = {}
        for line in (b / "queries.jsonl").read_text().splitlines():
            x = json.loads(line)
            queries[x["_id"]] = x["text"]
        qrels: dict[str, dict[str, float]] = defaultdict(dict)
        with (b / "qrels/test.tsv").open() as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                qrels[row["query-id"]][row["corpus-id"]] = float(row["score"])
        _SCIFACT = [
            (qid, queries[qid], g, "T" if i % 2 == 0 else "H") for i, (qid, g) in enumerate(qrels.items())
        ]
    return _SCIFACT


def ndcg10(ranked, gains):
    dcg = sum(gains.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(gains.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def eval_scifact(cfg: dict):
    v = vault("scifact")
    out = defaultdict(list)
    for _qid, text, gains, half in scifact():
        ranked = [p.removesuffix(".md") for p in rank(v, text, cfg, limit=100)]
        n = ndcg10(ranked, gains)
        out[half].append(n)
        out["all"].append(n)
    return {h: float(np.mean(x)) for h, x in out.items()}


def summarize(res) -> dict:
    out = {}
    for g, halves in res.items():
        out[g] = {
            h: tuple(float(np.mean([r[m] for r in rows])) for m in range(3)) + (len(rows),)
            for h, rows in halves.items()
        }
    return out


ORDER = [
    "docs en→en",
    "docs ru→ru",
    "docs cross",
    "docs en→ru",
    "docs ru→en",
    "ru-wiki ru→ru",
    "ru-wiki en→ru",
    "ru-wiki en→en",
    "kepano en→en",
]


def print_table(summ, sf=None, title=""):
    print(f"== {title}")
    print(f"{'group':16s} {'n':>3s} | {'hit@1':>5s} {'hit@5':>5s} {'MRR':>5s} | T:hit@5 H:hit@5 (nT/nH)")
    for g in ORDER:
        if g not in summ:
            continue
        s = summ[g]
        a = s["all"]
        t, h = s.get("T", (0, 0, 0, 0)), s.get("H", (0, 0, 0, 0))
        print(
            f"{g:16s} {a[3]:3d} | {a[0]:.3f} {a[1]:.3f} {a[2]:.3f} | {t[1]:.3f}   {h[1]:.3f}   ({t[3]}/{h[3]})"
        )
    if sf:
        print(f"{'scifact nDCG@10':16s} 300 | all {sf['all']:.4f}  T {sf['T']:.4f}  H {sf['H']:.4f}")


def save_all():
    USE_CACHE.save()
    for v in _VAULTS.values():
        v.save()


# ---------------------------------------------------------------- commands
def check():
    """The baseline re-implementation gives the same top-20 as rank_notes on every query."""
    bad = total = 0
    for f in ("queries.jsonl", "queries-docs.jsonl"):
        for q in load_queries(f):
            v = vault(q["vname"])
            with v.app.reading() as store:
                ref = [
                    h.path
                    for h in rank_notes(store, v.app.provider(), q["query"], v.app.settings.search, 20, 1)
                ]
            mine = rank(v, q["query"], {})
            total += 1
            if ref != mine:
                bad += 1
                print("DIFF", q["id"], ref[:5], mine[:5])
    v = vault("scifact")
    for qid, text, _gains, _half in scifact()[:60]:
        with v.app.reading() as store:
            ref = [h.path for h in rank_notes(store, v.app.provider(), text, v.app.settings.search, 100, 1)]
        total += 1
        if ref != rank(v, text, {}, limit=100):
            bad += 1
            print("DIFF scifact", qid)
    save_all()
    print(f"check: {total - bad}/{total} identical rankings")


def report(cfg: dict, title="", sci=True, one_vault=False):
    summ = summarize(eval_queries(cfg, one_vault=one_vault))
    sf = eval_scifact(cfg) if sci else None
    print_table(summ, sf, title or json.dumps(cfg, ensure_ascii=False))
    save_all()
    return summ, sf


def run_grid(configs, sci=True, files=("queries.jsonl", "queries-docs.jsonl"), one_vault=False):
    cols = ["docs en→en", "docs ru→ru", "docs cross", "ru-wiki ru→ru", "ru-wiki en→ru", "kepano en→en"]
    short = ["d.en", "d.ru", "d.x", "w.ru", "w.x", "kep"]
    hdr = (
        f"{'config':34s} "
        + " ".join(f"{s:>9s}" for s in short)
        + "  mrrT  mrrH"
        + ("  sciT   sciH   sci" if sci else "")
    )
    print(hdr + "\n" + " " * 35 + " ".join(f"{'T/H':>9s}" for _ in short))
    out = {}
    for name, cfg in configs:
        s = summarize(eval_queries(cfg, files=files, one_vault=one_vault))
        cells = []
        for c in cols:
            if c in s:
                cells.append(f"{s[c]['T'][1]:.2f}/{s[c]['H'][1]:.2f}")
            else:
                cells.append(f"{'-':>9s}")

        # MRR over all groups' queries, per half (weighted by n)
        def mrr(h: str, s: dict = s) -> float:
            tot = n = 0
            for g, v in s.items():
                if g == "docs cross":
                    continue
                tot += v[h][2] * v[h][3]
                n += v[h][3]
            return tot / n

        line = f"{name[:34]:34s} " + " ".join(f"{x:>9s}" for x in cells) + f" {mrr('T'):.3f} {mrr('H'):.3f}"
        sf = None
        if sci:
            sf = eval_scifact(cfg)
            line += f" {sf['T']:.3f} {sf['H']:.3f} {sf['all']:.4f}"
        print(line, flush=True)
        out[name] = (s, sf)
        save_all()
    return out


def grid_main(argv: list[str]) -> None:
    configs = json.loads(Path(argv[0]).read_text())
    files = ("queries.jsonl", "queries-docs.jsonl")
    if "--docs" in argv:
        files = ("queries-docs.jsonl",)
    if "--wiki" in argv:
        files = ("queries.jsonl",)
    run_grid(configs, sci="--no-sci" not in argv, files=files, one_vault="--one-vault" in argv)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    if cmd == "check":
        check()
    elif cmd == "grid":
        grid_main(sys.argv[2:])
    elif cmd == "report":
        cfg = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
        report(cfg, one_vault="--one-vault" in sys.argv, sci="--no-sci" not in sys.argv)
