"""Stage 1 of chapter 3's pipeline: turn text into GPT-2 token ids.

Chapter 2 of the book tokenizes with GPT-2's byte-pair encoding (BPE) through
tiktoken; chapter 3 starts from those tokens. This module does the same, and
adds what a classroom tool needs:

* **Offline.** ``tiktoken.get_encoding("gpt2")`` downloads its rank files on
  first use. GPT-2's ranks are tiktoken's ``r50k_base`` file, one file of
  835 KB, so the package ships it (``attention/data/r50k_base.tiktoken``, the
  vocabulary OpenAI released with GPT-2 under the MIT license) and builds the
  same ``Encoding`` from it: no download, no cache folder, no setting.
* **Never crashes.** If the shipped file is missing or does not match its
  sha256, a clearly labelled word-level tokenizer takes over. ``<|endoftext|>``
  typed by a user becomes GPT-2's special token 50256, as in the book.
* **Readable pieces.** A token holding only part of a multi-byte character
  (an emoji is often split over two or three tokens) is shown as that
  character and a marker: the two tokens of an emoji read ``"🙂[1/2]"`` and
  ``"🙂[2/2]"``.
"""

from __future__ import annotations

import binascii
import bisect
import functools
import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import tiktoken
import tiktoken_ext.openai_public as openai_public

RANKS_PATH = Path(__file__).parent / "data" / "r50k_base.tiktoken"
RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"  # tiktoken's own check
ENDOFTEXT = "<|endoftext|>"
ENDOFTEXT_ID = 50256
GPT2_VOCAB_SIZE = 50257

BPE_NAME = "GPT-2 BPE (tiktoken r50k_base)"
WORD_LEVEL_NAME = "word-level fallback (GPT-2 BPE file missing or corrupt)"


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


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """Each line is a token's bytes in base64 and its rank (``binascii`` directly: 45 -> 28 ms here)."""
    decode = binascii.a2b_base64
    return {decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


@functools.cache
def load_bpe() -> tiktoken.Encoding | None:
    """GPT-2's BPE as a tiktoken ``Encoding``, built from the shipped rank file.

    ``None`` if that file is missing or its sha256 is not GPT-2's. Built once
    per process; ``load_bpe.cache_clear()`` forgets it.
    """
    try:
        data = RANKS_PATH.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != RANKS_SHA256:
        return None
    return tiktoken.Encoding(
        name="r50k_base",
        pat_str=openai_public.r50k_pat_str,
        mergeable_ranks=_parse_ranks(data),
        special_tokens={ENDOFTEXT: ENDOFTEXT_ID},
        explicit_n_vocab=GPT2_VOCAB_SIZE,
    )


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
    If the shipped BPE file is missing or corrupt, the result comes from a
    word-level tokenizer and ``.tokenizer`` says so.
    """
    if not isinstance(text, str):
        raise ValueError(f"tokenize() needs a string of text, not {type(text).__name__}.")
    encoder = encoding if encoding is not None else load_bpe()
    if encoder is None:
        return _word_level(text)
    ids = encoder.encode(text, allowed_special={ENDOFTEXT}, disallowed_special=())
    token_bytes = [encoder.decode_single_token_bytes(i) for i in ids]
    return Tokenization(ids=tuple(ids), pieces=tuple(_readable_pieces(token_bytes)), tokenizer=BPE_NAME)


def decode_pieces(ids, *, encoding: tiktoken.Encoding | None = None) -> tuple[str, ...]:
    """The readable text of each GPT-2 token id in ``ids``, as ``tokenize`` shows its pieces: a token
    holding part of a multi-byte character shows that character with a ``[k/n]`` marker.

    Raises a ``ValueError`` when GPT-2's BPE is unavailable (a word-level id has no text to go back to).
    """
    encoder = encoding if encoding is not None else load_bpe()
    if encoder is None:
        raise ValueError("GPT-2's tokenizer did not load, so token ids cannot be turned back into text.")
    return tuple(_readable_pieces([encoder.decode_single_token_bytes(int(i)) for i in ids]))
