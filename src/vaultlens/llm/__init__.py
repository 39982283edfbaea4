"""Chat-model providers for ask and chat: the protocol, the HTTP providers and their registry."""
