"""Fill the optional quality tier: a second vector for every chunk text that lacks one.

The indexer runs it at the end of every run and every `watch` flush, as the index's one writer. Texts come
from the store alone (title, heading path, context and text give exactly what the main model
embedded), so a fill never re-reads the vault. Each batch commits on its own: Ctrl-C or kill -9
loses at most the batch in flight, and the next run resumes. Search mixes the tier in per chunk
(a chunk still without a tier vector keeps its main-model score), so it works during a fill.

The run also records the vault's script mix (:func:`record_scripts`), from which
``embedding.tier = auto`` picks the tier; when the pick changes, the old tier's vectors are dropped
here and the new tier is filled.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from vaultlens.chunking.chunker import Chunk
from vaultlens.chunking.scripts import ScriptMix, script_mix
from vaultlens.embedding.base import Vectors
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.errors import Cancelled
from vaultlens.index.indexing.texts import embed_text
from vaultlens.index.runs import RunStats
from vaultlens.index.store import Store, space_matches

if TYPE_CHECKING:
    from vaultlens.index.progress import Progress

COMMIT_TEXTS = 64  # texts per committed batch: at ~5 passages/s on 2 cores, about 13 s of work
SCRIPTS_META = "script_mix"  # store meta: the vault's prose letters per script, as JSON

#: The tier to fill for a store (``embedding.tier = auto`` reads the store's script mix), or None.
TierFor = Callable[[Store], TierProvider | None]


def record_scripts(store: Store, counted: ScriptMix | None = None) -> ScriptMix:
    """Count the prose letters of every stored note body per script and keep the sums in the
    store's meta (one pass over the chunk texts, at index time only). ``counted``: the sum of
    :func:`body_mix` over every note the store holds, when the caller wrote them all (a first index
    counts each note as it commits it, while the model still runs, not in a pass after it)."""
    mix = (
        counted if counted is not None else sum((script_mix(n.body) for n in store.note_texts()), ScriptMix())
    )
    store.set_meta(SCRIPTS_META, json.dumps({"cyrillic": mix.cyrillic, "latin": mix.latin}))
    return mix


def body_mix(chunks: Iterable[Chunk]) -> ScriptMix:
    """The script mix of one note's body as the store gives it (:meth:`Store.note_texts`): its chunk
    texts but the front matter's, in order, joined by a newline."""
    return script_mix("\n".join(c.text for c in sorted(chunks, key=lambda c: c.ordinal) if not c.frontmatter))


def stored_scripts(store: Store) -> ScriptMix | None:
    """The script mix the last index run recorded; None before one did."""
    raw = store.get_meta(SCRIPTS_META)
    return None if raw is None else ScriptMix(**json.loads(raw))


def fill_tier(
    store: Store,
    tier: TierProvider,
    progress: Progress,
    stats: RunStats,
    between: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Embed with ``tier`` every chunk text that has no tier vector yet, counting each committed
    batch in ``stats.tier_embedded`` (so a run stopped part-way says what it kept).

    ``between`` runs before each batch, while nothing of the fill is in flight: the watcher flushes
    the changes that came meanwhile there, so an edit or a deletion waits for one batch, not for the
    fill (the batches after it take the new chunks' texts too). ``stop`` is checked before every
    call to the model: once it is set the fill ends with :class:`Cancelled`, losing at most the
    batch in flight (the next run resumes)."""
    stored = store.tier_space
    if stored is not None and not space_matches(stored, tier.space):
        store.drop_tier()
    have, total = store.tier_coverage()
    if have >= total:
        return
    # the main pass is committed: search answers now, and Ctrl-C keeps every finished batch
    progress.phase("Quality tier (search already works)", total - have)
    while True:
        if between is not None:
            between()
        rows = store.tier_missing(COMMIT_TEXTS)
        if not rows:
            return
        hashes = [h for h, _, _ in rows]
        texts = [embed_text(title, chunk) for _, title, chunk in rows]
        vectors: dict[str, Vectors] = {}
        for i in range(0, len(texts), max(1, tier.batch_size)):
            if stop is not None and stop.is_set():
                raise Cancelled(f"The quality tier stopped after {stats.tier_embedded} new vectors.")
            part = slice(i, i + tier.batch_size)
            vectors.update(zip(hashes[part], tier.embed(texts[part]), strict=True))
            progress.advance(len(texts[part]))
        store.add_tier_vectors(tier.space, vectors)
        stats.tier_embedded += len(rows)
