"""Relationship review of a candidate pair: fragment catalog, refs.v2 contract and validator, planner."""
