"""The notation convention (docs/book.md "Notation", ``attention.prose.glossary.NOTATION``) in every string a
learner reads: the pages, the page text, the widgets, the book captions, the model's sentences, and the
docstrings that "Show the code" prints.

Read from the source with ``ast``, so no page runs: string literals (an f-string's placeholders read as
``N``), not identifiers or comments, and not the explorer's own docstrings, which no learner sees.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOWN_MODULES = (  # attention modules whose classes and functions "Show the code" prints, docstrings included
    *("before_chapter/bahdanau", "before_chapter/reversal", "tokens", "embeddings", "simplified", "trainable"),
    *("causal", "dropout", "multihead", "mistakes", "mistake_steps", "mistake_measures"),
    *("measuring/fast", "measuring/speed"),
)
LEARNER_FILES = sorted(
    [
        *ROOT.glob("pages/*.py"),
        *ROOT.glob("explorer/page_text/*.py"),
        *ROOT.glob("attention/prose/*.py"),  # the cell panel's words and the glossary
        *ROOT.glob("explorer/widgets/*.py"),
        *ROOT.glob("attention/figures/*.py"),  # hovers, legends and block labels
        ROOT / "explorer/settings.py",  # the sidebar's help texts
        ROOT / "explorer/views/chapter.py",
        ROOT / "explorer/models.py",
        *(ROOT / f"attention/{name}.py" for name in SHOWN_MODULES),
        *ROOT.glob("attention/notebook/*.py"),  # what explore() and check() say in a reader's notebook
    ]
)
SENTENCE_FILES = sorted(
    [
        *ROOT.glob("explorer/page_text/*.py"),
        *ROOT.glob("attention/prose/*.py"),
        ROOT / "explorer/widgets/models.py",  # the grid of every head's words
        *ROOT.glob("pages/*.py"),
        *ROOT.glob("attention/notebook/*.py"),
    ]
)
MAX_WORDS = 35
NOT_SHOWN = ("notebook", "figures", "prose")  # attention's subpackages whose code the code panel never prints


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _cases(paths: list[Path]) -> list:
    """``paths`` as test parameters, each named by its path in the repository."""
    return [pytest.param(p, id=_name(p)) for p in paths]


ZERO_BASED = re.compile(r"\b(query|head|step|token) 0(?![.,]?\d)", re.IGNORECASE)  # "query 0", not "token 0.5"
BRITISH = re.compile(
    r"\b(normalis\w*|colour\w*|initialis\w*|behaviour\w*|centre[sd]?|favour\w*|visualis\w*|summaris\w*|"
    r"recognis\w*|organis\w*|analys(e|es|ed|ing)|modelling|labelled|labelling|grey\w*|optimis\w*|"
    r"materialis\w*|minimis\w*|maximis\w*|neighbour\w*)\b",
    re.IGNORECASE,
)
FORBIDDEN = (  # (text, why)
    ("scaled_scores[", "the book has no scaled_scores: write attn_scores_2 / √d_k"),
    ("Training mode (dropout on)", "with p = 0 training mode drops nothing"),
    ("GPT-2's pad token", "GPT-2 has no pad token; the book reuses <|endoftext|> (50256) as padding"),
    # issue 35's sentences that mislead
    ("GPT-2 made it", "the small GPT generates by default: name the model that made the weight"),
    ("only needs the new token's query", "a KV cache keeps keys and values; each query is used once and dropped"),
    ("`forward`, line for line", "steps differs from the book's forward (check_batch, drop_with_mask): name how"),
    ("``forward``, line for line", "steps differs from the book's forward (check_batch, drop_with_mask): name how"),
    ("Dot products of random d_k-dim queries", "a spread of √d_k needs entries of mean 0 and variance 1: say so"),
    ("parks its weight there", "the attention sink is a common explanation: say so, and measure what it can"),
    # issue 35's notation and language
    ("#%{y}", "a hover counts rows from 1 in words (customdata from figures.heatmaps.token_numbers)"),
    ("#%{x}", "a hover counts columns from 1 in words (customdata from figures.heatmaps.token_numbers)"),
    ("Row j is the query x^(j)", "the book's i is the query, j the key"),
    ("column N = N · N + N", "head h + 1 is Python's h: write column = (head − 1) · head_dim + c"),
    ("chapter's random weights", "weight matrices or attention weights, never a bare 'weights'"),
    ("seed for the weights", "weight matrices or attention weights, never a bare 'weights'"),
    ("for the weights and", "weight matrices or attention weights, never a bare 'weights'"),
    ("without weights", "need_weights=False returns no attention weights: say attention weights"),
    (", weights returned", "nn.MultiheadAttention returns attention weights: say so"),
    ("returns no weights", "nn.MultiheadAttention returns attention weights: say so"),
    ("one weights tensor", "one attn_weights tensor"),
    ("usually use d_out = d_in", "a GPT's d_out = d_in is all heads together; one head has head_dim columns"),
    ("as on the next page", "Why attention's next page is Tokens: name the page"),
    ("the gradient of the output at", "say which output: the row's weighted sum of the values"),
    ("dropout with p = ", "“With dropout with p”: write dropout at p"),
)


def _text(node: ast.AST) -> str:
    """A string literal's text; an f-string's placeholders read as N."""
    if isinstance(node, ast.Constant):
        return node.value
    return "".join(v.value if isinstance(v, ast.Constant) else "N" for v in node.values)


def _docstring_nodes(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def learner_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string ``path`` shows a learner.

    In ``attention/``'s math: the docstrings of classes and functions (what the code panel prints) and the strings
    (error messages, notes). Elsewhere: every string but the docstrings.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstring_nodes(tree)
    shown_code = path.relative_to(ROOT).parts[0] == "attention" and path.parent.name not in NOT_SHOWN
    module_doc = id(tree.body[0].value) if ast.get_docstring(tree) is not None else None
    strings = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            is_doc = id(node) in docstrings
            if (is_doc and not shown_code) or id(node) == module_doc:
                continue
            strings.append((node.lineno, _text(node)))
    return strings


def _prose(text: str) -> bool:
    """Whether a string reads as words (has a space), not a key, an identifier or a format."""
    return " " in text.strip()


@pytest.mark.parametrize("path", _cases(LEARNER_FILES))
def test_no_known_inconsistent_form(path):
    problems = []
    for line, text in learner_strings(path):
        if not _prose(text):
            continue
        found = ZERO_BASED.search(text)
        if found:
            problems.append(f"line {line}: {found.group()!r}: count tokens, queries, steps and heads from 1")
        found = BRITISH.search(text)
        if found:
            problems.append(f"line {line}: {found.group()!r}: the book spells it the American way")
        problems += [f"line {line}: {form!r}: {why}" for form, why in FORBIDDEN if form in text]
    assert not problems, f"{_name(path)}:\n" + "\n".join(problems)


def sentences(text: str) -> list[str]:
    """A string's sentences: split after . ! ? or a colon's list, before a space; and at paragraph breaks."""
    return [s for s in re.split(r"(?<=[.!?])\s+|\n\s*\n", text) if s.strip()]


def words(sentence: str) -> int:
    return sum(1 for w in sentence.split() if re.search(r"\w", w))


def _pieces(node: ast.AST) -> list[str]:
    """The texts of a chain of ``+``, a non-string operand read as N."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_pieces(node.left), *_pieces(node.right)]
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return [_text(node)]
    return [" N "]


def _joined(tree: ast.Module) -> list[tuple[int, str]]:
    """Each chain of string literals joined by ``+``, read as one text (page text is built so)."""
    chains = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add)]
    return [(node.lineno, "".join(_pieces(node))) for node in chains]


@pytest.mark.parametrize("path", _cases(SENTENCE_FILES))
def test_sentences_are_at_most_35_words(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = []
    for line, text in [*learner_strings(path), *_joined(tree)]:
        long += [f"line {line}: {words(s)} words: {s}" for s in sentences(text) if words(s) > MAX_WORDS]
    assert not long, f"{_name(path)}:\n" + "\n".join(sorted(set(long)))


def test_the_checks_catch_what_they_are_for():
    """Each check fires on the form it names and stays quiet on its look-alikes."""
    assert ZERO_BASED.search("query 0 sees only itself") and ZERO_BASED.search("Head 0")
    assert not ZERO_BASED.search("token 0.5 of the way") and not ZERO_BASED.search("query 1")
    assert BRITISH.search("softmax normalises each row") and BRITISH.search("each coloured block")
    assert not BRITISH.search("normalizes each colored block")
    assert BRITISH.search("between neighbouring T") and not BRITISH.search("between neighboring T")
    assert words(sentences("One two. " + "w " * 36)[1]) == 36
    assert sentences("p = 0.5 stays. Next one")[0] == "p = 0.5 stays."
