"""The optional quality tier: a registry of second models (base protocol, built-ins, provider form)."""
