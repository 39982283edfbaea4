"""The embedded backend: one SQLite file (WAL, FTS5) per index, and past a chunk-count threshold
its ANN tier (a usearch graph saved beside the file)."""
