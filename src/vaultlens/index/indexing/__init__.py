"""Indexing runs: notes read, chunked and embedded (a local model while notes are still being
read), written in batches through the store contract, then the quality tier filled."""
