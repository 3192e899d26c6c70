"""After chapter 3: what the chapter's ``MultiHeadAttention`` becomes. ``gpt`` is chapter 4's ``GPTModel``
built on it; ``inspecting`` reads a model's attention layer by layer; ``training`` trains a small one on
"The Verdict" and saves and loads it; ``gpt2`` loads OpenAI's GPT-2 weights into it; ``kv_cache`` and ``gqa``
are attention with a cache of keys and values, and grouped-query attention; ``generation`` writes token by
token with or without the cache."""
