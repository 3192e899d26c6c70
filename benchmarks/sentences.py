"""The sentences simulated students type: random words, a given number of GPT-2 tokens, or as a link carries them."""

from __future__ import annotations

import random

_PROSE = (
    "the a student reads every word of this long sentence about attention while her friend writes code on "
    "an old laptop near window morning light falls across desk and teacher asks why softmax makes each row "
    "sum to one because weights must share probability between tokens that came before so query looks at "
    "keys values heads mask future context vector grows small large quickly slowly bright quiet river "
    "mountain city garden music paper pencil coffee rain snow summer winter green blue red yellow cat dog "
    "bird fish tree flower house school library train station bridge story question answer idea number "
    "matrix column row dot product scale learn model layer input output embedding token journey starts "
    "with one step"
)
WORDS = tuple(_PROSE.split())
MAX_URL_TEXT_CHARS = 2_000  # explorer.settings: longer link texts are cut (with a notice)


def sentence(rng: random.Random, fewest: int = 10, most: int = 20) -> str:
    """``fewest`` to ``most`` random words; 5-34 words are about 6-40 GPT-2 tokens, in practice never typed before."""
    return " ".join(rng.choices(WORDS, k=rng.randint(fewest, most))).capitalize() + "."


class Sentences:
    """New sentences of exactly T GPT-2 tokens (``attention.tokenize``), never the same one twice."""

    def __init__(self, seed: int = 7) -> None:
        import attention

        self.tokenize = attention.tokenize
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def make(self, num_tokens: int) -> str:
        for _ in range(200):
            text = " ".join(self.rng.choices(WORDS, k=num_tokens + 8)).capitalize()
            pieces = self.tokenize(text).pieces
            if len(pieces) < num_tokens:
                continue
            candidate = "".join(pieces[:num_tokens])
            if len(self.tokenize(candidate)) == num_tokens and candidate.strip() and candidate not in self.seen:
                self.seen.add(candidate)
                return candidate
        raise RuntimeError(f"could not build a sentence of {num_tokens} tokens")


def link_text(text: str) -> tuple[str, bool]:
    """The sentence as a link carries it: at most ``MAX_URL_TEXT_CHARS`` characters, cut at a space."""
    if len(text) <= MAX_URL_TEXT_CHARS:
        return text, False
    return text[: text.rfind(" ", 0, MAX_URL_TEXT_CHARS)], True


async def open_typed(student, page: str, num_tokens: int, sentences: Sentences, **query: str):
    """``student`` (a ``protocol.Student``) opens ``page`` from a link with a new sentence of ``num_tokens`` tokens,
    and types it when it is too long for a link (the slider's range then changes once, here)."""
    shown, cut = link_text(sentences.make(num_tokens))
    opened = await student.visit(page, {"input": "text", "text": shown, **query})
    if opened.error:
        raise RuntimeError(f"{student.base}/{page} {query}: {opened.error}")
    if cut:
        await student.edit(sentences.make(num_tokens))
    return student
