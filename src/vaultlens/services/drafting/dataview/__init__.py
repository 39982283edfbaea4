"""Dataview queries: the vault's real fields collected by code, the model's DQL checked by code."""
