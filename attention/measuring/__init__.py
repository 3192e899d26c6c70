"""Measuring the chapter's code and what comes after it. ``fast`` runs ``MultiHeadAttention`` through PyTorch's
fused kernel; ``speed`` times each implementation and its peak memory against the sequence length T;
``costs`` counts a KV cache's bytes and the multiply-adds per new token from a configuration;
``generation_speed`` times a new token with and without the cache."""
