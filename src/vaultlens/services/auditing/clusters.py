"""Topic clusters of a vault from the index's note vectors, named without a model (``audit deep --no-llm``).

A note's vector is the mean of its body chunks' unit vectors (front matter left out: templates make unrelated
notes look alike). Clusters are average-linkage agglomerative: two clusters merge while the mean cosine between
their notes is at least ``threshold``, updated exactly at each merge by the Lance-Williams rule. Names come from what the cluster's notes share more than
the rest of the vault: a heading a third of them carry and the rest of the vault mostly lacks (not a template's
"Sources"), else the three terms most specific to the cluster (share of its notes x share of the term's notes).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultlens.index.store import StoreReads
from vaultlens.services.finding.note_profile import layout
from vaultlens.vault.links import masked_spans
from vaultlens.vault.outline import extract_headings

__all__ = ["Cluster", "ClusterReport", "agglomerate", "cluster_notes", "clusters_markdown", "note_vectors"]

_TERM = re.compile(r"[^\W\d_][\w'-]{2,}")
_WEAK_CENTROID = 0.3  # a note whose sections point in unrelated directions has no single topic


@dataclass
class Cluster:
    id: int
    name: str
    size: int
    notes: list[str]  # most typical first (closest to the cluster's mean direction)
    headings: list[str]
    terms: list[str]
    cohesion: float  # mean cosine between the cluster's notes

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "size": self.size,
            "cohesion": round(self.cohesion, 3),
            "headings": self.headings,
            "terms": self.terms,
            "notes": self.notes,
        }


@dataclass
class ClusterReport:
    threshold: float
    min_size: int
    clusters: list[Cluster]
    unclustered: list[str]
    without_vector: list[str] = field(default_factory=list)  # no body text, or no single direction

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "min_size": self.min_size,
            "clusters": [c.as_dict() for c in self.clusters],
            "unclustered": self.unclustered,
            "without_vector": self.without_vector,
        }


def clusters_markdown(report: ClusterReport, generated: str) -> str:
    """The clusters as a Markdown report (notes as ``[[path]]`` links without ``.md``, unambiguous by path)."""
    out = [
        "# Vault topics (no model)",
        "",
        f"{generated} · {len(report.clusters)} clusters of at least {report.min_size} notes whose mean cosine is at "
        f"least {report.threshold}; {len(report.unclustered)} notes in no cluster. Names come from shared headings "
        "and the words most specific to each cluster.",
        "",
    ]
    for c in report.clusters:
        out += [f"## {c.id}. {c.name} ({c.size} notes, cohesion {c.cohesion:.2f})", ""]
        if c.terms:
            out += ["Terms: " + ", ".join(c.terms), ""]
        out += [f"- [[{p.removesuffix('.md')}]]" for p in c.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


def note_vectors(store: StoreReads) -> tuple[list[str], npt.NDArray[np.float32], list[str]]:
    """(paths, unit note vectors, paths left out) from the stored chunk vectors; no embedding call."""
    lay = layout(store)
    paths: list[str] = []
    rows: list[npt.NDArray[np.float32]] = []
    left_out: list[str] = []
    for n, path in enumerate(lay.notes):
        mine = lay.rows_of(n)
        body = mine[~lay.frontmatter[mine]]
        if len(body) == 0:
            left_out.append(path)
            continue
        mean = lay.vecs[body].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if norm == 0.0 or (len(body) > 1 and norm < _WEAK_CENTROID):
            left_out.append(path)
            continue
        paths.append(path)
        rows.append((mean / norm).astype(np.float32))
    dim = lay.vecs.shape[1] if lay.vecs.ndim == 2 else 0
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return paths, matrix, sorted(left_out)


def agglomerate(vecs: npt.NDArray[np.float32], threshold: float) -> list[list[int]]:
    """Average-linkage clusters (row indices) whose members' mean pairwise cosine stays >= ``threshold``.

    O(n^2) memory for the similarity table (5,000 notes: 100 MB of float32) and time close to O(n^2): each merge
    updates one row (Lance-Williams) and recomputes the best partner only of rows that pointed at a merged
    cluster.
    """
    n = len(vecs)
    if n < 2:
        return [[i] for i in range(n)]
    sizes = np.ones(n)
    sim = (vecs @ vecs.T).astype(np.float32)
    np.fill_diagonal(sim, -np.inf)
    alive = np.ones(n, dtype=bool)
    best = sim.argmax(axis=1)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    while True:
        row_best = sim[np.arange(n), best]
        row_best[~alive] = -np.inf
        a = int(row_best.argmax())
        if row_best[a] < threshold:
            break
        b = int(best[a])
        # Lance-Williams for average linkage: the merged cluster's mean similarity to any other is the
        # size-weighted mean of the two old ones, so a merge costs O(n), not a pass over the vectors
        row = (sizes[a] * sim[a] + sizes[b] * sim[b]) / (sizes[a] + sizes[b])
        sizes[a] += sizes[b]
        members[a] += members.pop(b)
        alive[b] = False
        sim[b, :] = -np.inf
        sim[:, b] = -np.inf
        row[~alive] = -np.inf
        row[a] = -np.inf
        sim[a, :] = row
        sim[:, a] = row
        stale = np.flatnonzero(alive & ((best == a) | (best == b)))
        for i in stale.tolist():
            best[i] = int(sim[i].argmax())
        better = alive & (row > sim[np.arange(n), best])
        best[better] = a
    return [sorted(m) for m in members.values()]


def _terms(text: str) -> set[str]:
    return {t.casefold() for t in _TERM.findall(text)}


def _headings(text: str) -> set[str]:
    return {
        h.text.strip().casefold()
        for h in extract_headings(text, masked_spans(text))
        if h.level > 1 and h.text
    }


def _specific(inside: Counter[str], vault_df: Counter[str], size: int, minimum: int) -> list[str]:
    """Items most specific to a cluster: common inside it and rare outside (share inside x share of all uses),
    so template headings ("Sources") and common words ("first", "того") lose to what sets the cluster apart."""
    scores = {t: (c / size) * (c / vault_df[t]) for t, c in inside.items() if c >= minimum}
    return sorted(scores, key=lambda t: (-scores[t], t))


def _name(
    notes: list[str],
    headings: dict[str, set[str]],
    terms: dict[str, set[str]],
    heading_df: Counter[str],
    term_df: Counter[str],
) -> tuple[str, list[str], list[str]]:
    """The cluster's name, its most specific shared headings and terms."""
    size = len(notes)
    inside_h = Counter(h for p in notes for h in headings.get(p, ()))
    shared = _specific(inside_h, heading_df, size, 2)[:3]
    top = _specific(Counter(t for p in notes for t in terms.get(p, ())), term_df, size, min(2, size))[:5]
    # a heading names the cluster when a third of its notes carry it and most of its uses are here
    if shared and inside_h[shared[0]] * 3 >= size and inside_h[shared[0]] * 2 > heading_df[shared[0]]:
        return shared[0], shared, top
    return " · ".join(top[:3]) or notes[0], shared, top


def cluster_notes(store: StoreReads, threshold: float, min_size: int) -> ClusterReport:
    """Cluster the indexed notes and name each cluster from its headings and terms (no model)."""
    paths, vecs, left_out = note_vectors(store)
    groups = [g for g in agglomerate(vecs, threshold) if len(g) >= min_size]
    texts = {t.path: t.body for t in store.note_texts()}
    terms = {p: _terms(texts.get(p, "")) for p in paths}
    headings = {p: _headings(texts.get(p, "")) for p in paths}
    term_df: Counter[str] = Counter(t for ts in terms.values() for t in ts)
    heading_df: Counter[str] = Counter(h for hs in headings.values() for h in hs)
    clusters: list[Cluster] = []
    in_cluster: set[int] = set()
    for rows in sorted(groups, key=lambda g: (-len(g), paths[g[0]])):
        in_cluster.update(rows)
        sub = vecs[rows]
        total = sub.sum(axis=0)
        typical = np.argsort(-(sub @ total), kind="stable")
        notes = [paths[rows[i]] for i in typical.tolist()]
        n = len(rows)
        cohesion = float((total @ total - n) / (n * (n - 1)))
        name, shared, top = _name(notes, headings, terms, heading_df, term_df)
        clusters.append(Cluster(len(clusters) + 1, name, n, notes, shared, top, cohesion))
    unclustered = sorted(paths[i] for i in range(len(paths)) if i not in in_cluster)
    return ClusterReport(threshold, min_size, clusters, unclustered, left_out)
