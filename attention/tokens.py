"""Stage 1 of chapter 3's pipeline: turn text into GPT-2 token ids.

Chapter 2 of the book tokenizes with GPT-2's byte-pair encoding (BPE) through
tiktoken; chapter 3 starts from those tokens. This module does the same, and
adds what a classroom tool needs:

* **Offline.** ``tiktoken.get_encoding("gpt2")`` always goes to the network.
  The ``r50k_base`` encoding has exactly GPT-2's ranks and is a single file,
  so we look for that file first in ``TIKTOKEN_CACHE_DIR`` (and tiktoken's
  other cache folders), then in a persistent per-user cache.
* **Persistent.** A file downloaded once is kept in the per-user cache
  (``~/.cache/attention-explorer/tiktoken`` or ``$XDG_CACHE_HOME/...``), under
  tiktoken's own cache key, so a laptop works offline after its first run.
* **Never crashes.** With no BPE file reachable at all, a clearly labelled
  word-level tokenizer takes over. ``<|endoftext|>`` typed by a user becomes
  GPT-2's special token 50256, as in the book.
* **Readable pieces.** A token holding only part of a multi-byte character
  (an emoji is often split over two or three tokens) is shown as that
  character and a marker: the two tokens of an emoji read ``"🙂[1/2]"`` and
  ``"🙂[2/2]"``.
"""

from __future__ import annotations

import base64
import bisect
import functools
import hashlib
import http.client
import math
import os
import re
import tempfile
import time
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

import tiktoken
import tiktoken_ext.openai_public as openai_public

RANKS_URL = "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"
RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
# tiktoken stores a downloaded file under the sha1 of its URL.
RANKS_CACHE_KEY = hashlib.sha1(RANKS_URL.encode(), usedforsecurity=False).hexdigest()
ENDOFTEXT = "<|endoftext|>"
ENDOFTEXT_ID = 50256
GPT2_VOCAB_SIZE = 50257

BPE_NAME = "GPT-2 BPE (tiktoken r50k_base)"
WORD_LEVEL_NAME = "word-level fallback (GPT-2 BPE file not reachable)"


@dataclass(frozen=True)
class Tokenization:
    """The result of :func:`tokenize`.

    ``ids[i]`` is token i's id (GPT-2's own id with the BPE), ``pieces[i]`` its
    text with any leading space kept, and ``tokenizer`` names what was used.
    """

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    tokenizer: str

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def is_bpe(self) -> bool:
        return self.tokenizer == BPE_NAME


def user_cache_dir() -> Path:
    """The persistent per-user folder where a downloaded BPE file is kept."""
    base = os.environ.get("XDG_CACHE_HOME") or os.environ.get("LOCALAPPDATA")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "attention-explorer" / "tiktoken"


def _candidate_dirs() -> list[Path]:
    dirs = [os.environ.get("TIKTOKEN_CACHE_DIR"), os.environ.get("DATA_GYM_CACHE_DIR")]
    found = [Path(d) for d in dirs if d]
    found.append(user_cache_dir())
    found.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    return found


def _verified(data: bytes) -> bool:
    return hashlib.sha256(data).hexdigest() == RANKS_SHA256


def _read_cached_ranks_file() -> bytes | None:
    for folder in _candidate_dirs():
        path = folder / RANKS_CACHE_KEY
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if _verified(data):
            return data
    return None


def _download_ranks_file(timeout: float) -> bytes | None:
    """Fetch the rank file once and keep it in the per-user cache."""
    try:
        with urllib.request.urlopen(RANKS_URL, timeout=timeout) as response:
            data = response.read()
    except (OSError, http.client.HTTPException):  # no network, a refused or a truncated download
        return None
    if not _verified(data):
        return None
    folder = user_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{RANKS_CACHE_KEY}.{os.getpid()}.tmp"
        partial.write_bytes(data)
        partial.replace(folder / RANKS_CACHE_KEY)
    except OSError:
        pass  # a read-only home still gets a working tokenizer for this run
    return data


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


RETRY_AFTER_S = 300.0  # after a failed download, wait this long before trying again
_last_failure = -math.inf


@functools.lru_cache(maxsize=1)
def _encoding(download: bool, timeout: float) -> tiktoken.Encoding:
    """GPT-2's BPE; raises ``LookupError`` if unreachable (exceptions are not cached)."""
    global _last_failure
    data = _read_cached_ranks_file()
    if data is None and download and time.monotonic() - _last_failure > RETRY_AFTER_S:
        data = _download_ranks_file(timeout)
        if data is None:
            _last_failure = time.monotonic()
    if data is None:
        raise LookupError("GPT-2's BPE rank file is not reachable")
    return tiktoken.Encoding(
        name="r50k_base",
        pat_str=openai_public.r50k_pat_str,
        mergeable_ranks=_parse_ranks(data),
        special_tokens={ENDOFTEXT: ENDOFTEXT_ID},
        explicit_n_vocab=GPT2_VOCAB_SIZE,
    )


def load_bpe(download: bool = True, timeout: float = 10.0) -> tiktoken.Encoding | None:
    """GPT-2's BPE as a tiktoken ``Encoding``, or ``None`` if no copy is reachable.

    Looks in the cache folders first (no network), then downloads once. A
    success is kept for the process; after a failure the cache folders are
    checked again on every call and the download retried after ``RETRY_AFTER_S``.
    """
    try:
        return _encoding(download, timeout)
    except LookupError:
        return None


def _clear_cache() -> None:
    global _last_failure
    _last_failure = -math.inf
    _encoding.cache_clear()


load_bpe.cache_clear = _clear_cache  # type: ignore[attr-defined]


def _readable_pieces(token_bytes: list[bytes]) -> list[str]:
    """Each token's text; a token holding part of a multi-byte character shows
    that character with a ``[k/n]`` marker (part k of the n tokens it spans)."""
    try:
        text = b"".join(token_bytes).decode("utf-8")
    except UnicodeDecodeError:
        return [raw.decode("utf-8", errors="replace") for raw in token_bytes]
    char_starts = []  # byte offset where each character of text starts
    offset = 0
    for char in text:
        char_starts.append(offset)
        offset += len(char.encode("utf-8"))
    char_starts.append(offset)
    token_starts = []
    offset = 0
    for raw in token_bytes:
        token_starts.append(offset)
        offset += len(raw)

    pieces = []
    for index, raw in enumerate(token_bytes):
        try:
            pieces.append(raw.decode("utf-8"))
            continue
        except UnicodeDecodeError:
            pass
        start, end = token_starts[index], token_starts[index] + len(raw)
        parts = []
        char = bisect.bisect_right(char_starts, start) - 1
        while char < len(text) and char_starts[char] < end:
            char_start, char_end = char_starts[char], char_starts[char + 1]
            if start <= char_start and char_end <= end:
                parts.append(text[char])
            else:
                first = bisect.bisect_right(token_starts, char_start) - 1
                last = bisect.bisect_left(token_starts, char_end) - 1
                parts.append(f"{text[char]}[{index - first + 1}/{last - first + 1}]")
            char += 1
        pieces.append("".join(parts))
    return pieces


_WORDS = re.compile(r"\s*\S+|\s+")


def _word_level(text: str) -> Tokenization:
    pieces: list[str] = []
    ids: list[int] = []
    for part in re.split(f"({re.escape(ENDOFTEXT)})", text):
        if part == ENDOFTEXT:
            pieces.append(part)
            ids.append(ENDOFTEXT_ID)
            continue
        for word in _WORDS.findall(part):
            pieces.append(word)
            # Stable ids: the same word always maps to the same id, in any process, never 50256.
            ids.append(zlib.crc32(word.encode("utf-8")) % ENDOFTEXT_ID)
    return Tokenization(ids=tuple(ids), pieces=tuple(pieces), tokenizer=WORD_LEVEL_NAME)


def tokenize(text: str, *, encoding: tiktoken.Encoding | None = None) -> Tokenization:
    """Split ``text`` into GPT-2 tokens, as chapter 2 does with tiktoken.

    ``<|endoftext|>`` becomes the special token 50256 (the book's
    ``allowed_special={"<|endoftext|>"}``); any other text is ordinary text.
    Without a reachable BPE file the result comes from a word-level tokenizer
    and ``.tokenizer`` says so.
    """
    if not isinstance(text, str):
        raise ValueError(f"tokenize() needs a string of text, not {type(text).__name__}.")
    encoder = encoding if encoding is not None else load_bpe()
    if encoder is None:
        return _word_level(text)
    ids = encoder.encode(text, allowed_special={ENDOFTEXT}, disallowed_special=())
    token_bytes = [encoder.decode_single_token_bytes(i) for i in ids]
    return Tokenization(ids=tuple(ids), pieces=tuple(_readable_pieces(token_bytes)), tokenizer=BPE_NAME)
