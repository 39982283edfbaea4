"""Bounds on what one API or MCP call may ask for, shared by both so they refuse the same things."""

from __future__ import annotations

MAX_QUERY_CHARS = 2_000  # the search service reads no more than this (search.max_query_chars' ceiling)
MAX_LIMIT = 100  # notes per API search / similar call
MAX_SECTIONS = 20  # sections per note in an API search
MAX_RESULTS = 25  # notes per MCP search or related-notes call: more only floods an agent's context
MAX_DUPLICATES = 1_000  # pairs per duplicates call
MAX_BODY_BYTES = 1_000_000  # a request body (a question, a JSON-RPC message): far above any real one
