"""Stage 1, tokens: GPT-2's ids, readable pieces, the shipped rank file and the word-level fallback.

GPT-2's rank file ships inside the package, so these tests need no network and
no environment variable. The oracle is tiktoken's own ``r50k_base``, reading the
same file through tiktoken's cache and checking tiktoken's own hash of it.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import Tokenization, decode_pieces, load_bpe, tokenize
from attention import tokens as tokens_module

REPO = Path(__file__).resolve().parents[1]
CACHE_KEY = "0ea1e91bbb3a60f729a8dc8f777fd2fc07cd8df4"  # sha1 of the r50k_base URL, tiktoken's cache key
ENDOFTEXT_ID = 50256
SHIPPED_RANKS = tokens_module.RANKS_PATH

BOOK_TEXT = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
BOOK_IDS = (
    15496,
    11,
    466,
    345,
    588,
    8887,
    30,
    220,
    50256,
    554,
    262,
    4252,
    18250,
    8812,
    2114,
    286,
    617,
    34680,
    27271,
    13,
)
BOOK_PIECES = (
    "Hello",
    ",",
    " do",
    " you",
    " like",
    " tea",
    "?",
    " ",
    "<|endoftext|>",
    " In",
    " the",
    " sun",
    "lit",
    " terr",
    "aces",
    " of",
    " some",
    "unknown",
    "Place",
    ".",
)

MARKER = re.compile(r"(.)\[(\d+)/(\d+)\]", re.DOTALL)
MIXED_SCRIPT = st.text(
    alphabet=st.sampled_from([*"ab xyz,.!\n", "🦜", "🙂", "👍", "🏽", "你", "好", "é", "ñ", "€", "ß"])
)
FRAGMENTS = st.sampled_from(["<|endoftext|>", " tea", "🦜", "  ", "\n", "someunknownPlace", "<|endoftext", "|>"])
ANY_TEXT = st.lists(st.one_of(st.text(max_size=8), FRAGMENTS), max_size=6).map("".join)


@pytest.fixture(scope="module")
def r50k(tmp_path_factory) -> tiktoken.Encoding:
    """tiktoken's own r50k_base (GPT-2's ranks), built from the shipped file placed in its cache: the oracle."""
    cache = tmp_path_factory.mktemp("tiktoken_cache")
    shutil.copyfile(SHIPPED_RANKS, cache / CACHE_KEY)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        return tiktoken.get_encoding("r50k_base")


@pytest.fixture(scope="module")
def gpt2():
    """The package's GPT-2 BPE, with a clear message when the shipped rank file is missing."""
    encoding = load_bpe()
    assert encoding is not None, f"GPT-2's rank file is missing or corrupt: {tokens_module.RANKS_PATH}"
    return encoding


@pytest.fixture
def ranks_file(monkeypatch, tmp_path) -> Path:
    """Where the package looks for the rank file, moved to an empty temporary folder.

    ``load_bpe`` is cached, so it is cleared before and after the test.
    """
    path = tmp_path / "r50k_base.tiktoken"
    monkeypatch.setattr(tokens_module, "RANKS_PATH", path)
    load_bpe.cache_clear()
    yield path
    load_bpe.cache_clear()


def run_python(script: str, env: dict[str, str], cwd: Path) -> list[str]:
    """Run ``script`` in a fresh interpreter with no network, importing this checkout's package."""
    no_network = (
        "import socket\n"
        "def offline(*args, **kwargs):\n"
        "    raise OSError('this test has no network')\n"
        "socket.socket.connect = socket.socket.connect_ex = socket.getaddrinfo = offline\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", no_network + script],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_book_sentence_gets_gpt2_ids(gpt2):
    result = tokenize(BOOK_TEXT)

    assert isinstance(result, Tokenization)
    assert result.ids == BOOK_IDS
    assert len(result) == len(BOOK_IDS)


def test_pieces_keep_leading_spaces_and_join_back_to_the_text(gpt2):
    result = tokenize(BOOK_TEXT)

    assert result.pieces == BOOK_PIECES
    assert "".join(result.pieces) == BOOK_TEXT


def test_tokenizer_is_named(gpt2):
    result = tokenize("Your journey starts with one step")

    assert result.is_bpe
    assert "GPT-2" in result.tokenizer
    assert "fallback" not in result.tokenizer


@settings(max_examples=50, deadline=None)
@given(text=ANY_TEXT)
def test_ids_equal_tiktoken_gpt2_ids(gpt2, r50k, text):
    result = tokenize(text)

    assert list(result.ids) == r50k.encode(text, allowed_special={"<|endoftext|>"})
    assert len(result.pieces) == len(result.ids)


@settings(max_examples=50, deadline=None)
@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40))
def test_ascii_pieces_join_back_to_the_text(gpt2, text):
    assert "".join(tokenize(text).pieces) == text


@pytest.mark.parametrize(
    "text",
    [
        "<|endoftext|>",
        "a<|endoftext|>b",
        "<|endoftext|><|endoftext|>",
        " <|endoftext|> ",
        "<|endoftext",
        "<|fim_prefix|>",
    ],
)
def test_endoftext_never_raises(gpt2, text):
    result = tokenize(text)

    assert result.ids.count(ENDOFTEXT_ID) == text.count("<|endoftext|>")
    assert "".join(result.pieces) == text


def test_emoji_split_over_three_tokens_gets_numbered_pieces(gpt2):
    assert tokenize("🦜").pieces == ("🦜[1/3]", "🦜[2/3]", "🦜[3/3]")


def test_cjk_characters_split_over_two_tokens_get_numbered_pieces(gpt2):
    assert tokenize("你好").pieces == ("你[1/2]", "你[2/2]", "好[1/2]", "好[2/2]")


@settings(max_examples=50, deadline=None)
@given(text=MIXED_SCRIPT)
def test_split_characters_are_readable_and_rebuild_the_text(gpt2, text):
    pieces = tokenize(text).pieces

    assert all(piece for piece in pieces)
    assert not any("\ufffd" in piece for piece in pieces)
    for match in MARKER.finditer("".join(pieces)):
        part, parts = int(match[2]), int(match[3])
        assert 1 <= part <= parts and parts >= 2
    # Each split character keeps its [1/n] piece; dropping the other parts gives the text back.
    rebuilt = MARKER.sub(lambda m: m[1] if m[2] == "1" else "", "".join(pieces))
    assert rebuilt == text


def test_tokenize_rejects_what_is_not_text():
    with pytest.raises(ValueError, match="string"):
        tokenize(None)


def test_shipped_rank_file_is_gpt2s():
    data = SHIPPED_RANKS.read_bytes()

    assert hashlib.sha256(data).hexdigest() == tokens_module.RANKS_SHA256
    assert len(data.splitlines()) == ENDOFTEXT_ID  # every rank but the special token's


def test_rank_file_is_package_data():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = SHIPPED_RANKS.relative_to(REPO / "attention").as_posix()

    assert any(Path(shipped).match(pattern) for pattern in package_data["attention"])


def test_gpt2_bpe_works_offline_with_no_cache_and_no_setting(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "LOCALAPPDATA")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(home))
    script = (
        "from attention import tokenize\n"
        "result = tokenize('Hello world')\n"
        "print(result.tokenizer)\n"
        "print(list(result.ids))\n"
    )

    lines = run_python(script, env, cwd=tmp_path)

    assert lines == [tokens_module.BPE_NAME, "[15496, 995]"]
    assert list(home.iterdir()) == []  # nothing downloaded or cached


def test_a_missing_rank_file_falls_back_to_a_labelled_word_level_tokenizer(ranks_file):
    result = tokenize("Your journey starts  here\n")

    assert load_bpe() is None
    assert not result.is_bpe
    assert "word-level" in result.tokenizer and "fallback" in result.tokenizer
    assert result.pieces == ("Your", " journey", " starts", "  here", "\n")
    assert all(0 <= i < 50257 for i in result.ids)


def test_a_corrupted_rank_file_is_not_used(ranks_file):
    ranks_file.write_bytes(SHIPPED_RANKS.read_bytes()[:-10] + b"corrupted\n")

    assert load_bpe() is None
    assert not tokenize("tea").is_bpe


def test_fallback_ids_are_stable_across_sentences_and_calls(ranks_file):
    first = tokenize("one step and one more step")
    again = tokenize("one step and one more step")
    other = tokenize("a step")

    assert first == again
    assert first.ids[1] == first.ids[5] == other.ids[1]  # " step" everywhere
    assert first.ids[0] != first.ids[1]


def test_fallback_ids_are_stable_across_processes(ranks_file, tmp_path):
    text = "Your journey starts with one step"
    here = tokenize(text)
    script = (
        "from attention import tokens\n"
        f"tokens.RANKS_PATH = tokens.RANKS_PATH.with_name({'missing-' + ranks_file.name!r})\n"
        f"result = tokens.tokenize({text!r})\n"
        "print(result.tokenizer)\n"
        "print(list(result.ids))\n"
    )

    lines = run_python(script, dict(os.environ), cwd=tmp_path)

    assert not here.is_bpe
    assert lines == [here.tokenizer, str(list(here.ids))]


def test_fallback_keeps_endoftext_as_gpt2s_special_token(ranks_file):
    # The module docstring: "<|endoftext|> typed by a user becomes GPT-2's special token 50256".
    result = tokenize("<|endoftext|>")

    assert not result.is_bpe
    assert result.ids == (ENDOFTEXT_ID,)


@given(st.text(max_size=40))
@settings(max_examples=40, deadline=None)
def test_decoded_pieces_are_the_tokenizers_pieces(text):
    result = tokenize(text)
    if result.is_bpe:
        assert decode_pieces(result.ids) == result.pieces


def test_decode_pieces_needs_the_bpe(monkeypatch):
    monkeypatch.setattr(tokens_module, "load_bpe", lambda: None)
    with pytest.raises(ValueError, match="tokenizer did not load"):
        decode_pieces([1, 2])
