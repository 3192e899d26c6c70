"""The explorer's settings: one small object, validated at the boundary, without Streamlit.

``Settings`` holds everything a view depends on, built from widgets or a link's query parameters and written back
to the URL. Every value is clamped to ``LIMITS`` (one session must not exhaust a shared server), each change told
in a notice, never an error. First the strict parsers of what a visitor sent and ``quoted`` for a notice. The
app's one Markdown escaper, ``literal``, lives in ``attention.prose``, which the notebook shares.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields, replace

from attention.constants import BOOK_SENTENCE

# What a link or a websocket message may spell a number with: ASCII digits only, and not many.
# ``str.isdigit()`` and ``int()`` accept "²", "٣" and "1_000"; these patterns do not.
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,12}")
DECIMAL_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})")
POSITION = re.compile(r"[0-9]{1,6}")
RANGE = re.compile(r"([0-9]{1,6})-([0-9]{1,6})")
CELL = re.compile(r"([0-9]{1,6}),([0-9]{1,6})(?:,([0-9]{1,2}))?")
QUOTE_CHARS = 40  # a notice quotes at most this much of a bad value


def quoted(raw) -> str:
    """A bad value as a notice quotes it, at most ``QUOTE_CHARS`` characters: a notice must still draw it literally."""
    text = str(raw) if isinstance(raw, str | int | float | bool) or raw is None else type(raw).__name__
    return "'" + text[:QUOTE_CHARS] + ("…'" if len(text) > QUOTE_CHARS else "'")


def parse_whole(raw) -> int | None:
    """``raw`` as a whole number, or None: a Python int, an integral float, or ASCII digits with an optional sign."""
    if isinstance(raw, str) and WHOLE_NUMBER.fullmatch(raw.strip()):
        return int(raw.strip())
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def parse_decimal(raw) -> float | None:
    """``raw`` as a finite number, or None: a Python number or ASCII digits with an optional point and sign."""
    if isinstance(raw, str) and DECIMAL_NUMBER.fullmatch(raw.strip()):
        raw = float(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return None
    return float(raw)


def parse_position(raw) -> int | None:
    """A step, query or head number from a link: 1 to 6 ASCII digits, else None."""
    return int(raw) if isinstance(raw, str) and POSITION.fullmatch(raw) else None


def parse_cell(raw) -> tuple[int, int, int] | None:
    """A heatmap cell from a link, "row,col" or "row,col,panel" (the step's p-th heatmap, default 1), each counted
    from 1 as the book counts, else None."""
    match = CELL.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        return None
    row, col, panel = int(match[1]), int(match[2]), int(match[3] or 1)
    return (row, col, panel) if min(row, col, panel) >= 1 else None


def parse_range(raw, count: int) -> tuple[int, int] | None:
    """A token window "start-stop" (ASCII digits) clamped to ``count`` tokens, or None."""
    match = RANGE.fullmatch(raw) if isinstance(raw, str) else None
    if match is None:
        return None
    start, stop = sorted(min(int(group), count) for group in match.groups())
    return start, max(stop, start + 1)


BOOK = "book"
TEXT = "text"
MAX_TEXT_CHARS = 60_000  # a long paste is kept whole; only its first context_length tokens are used
MAX_URL_TEXT_CHARS = 2_000  # longer sentences are not put in a link
RANDOM, TRAINED, GPT2 = "random", "trained", "gpt2"
WEIGHTS = (RANDOM, TRAINED, GPT2)  # the chapter's seeded weights, the shipped small GPT, the server's GPT-2


@dataclass(frozen=True)
class Limit:
    low: float
    high: float
    help: str = ""  # the sidebar's words for it
    clamped: bool = True  # a value outside is moved to the nearest limit; False: it is unreadable (the default)


LIMITS = {
    "d_in": Limit(1, 1024, "embedding size of each token (the book's preset is fixed at 3)"),
    "d_out": Limit(
        1,
        1024,
        "output size: of each head in the single-head classes and the wrapper; the total, "
        "split across heads, in MultiHeadAttention",
    ),
    "num_heads": Limit(1, 16, "number of attention heads; d_out must be divisible by it"),
    "context_length": Limit(1, 1024, "longest sequence the mask covers; longer input is truncated"),
    "dropout": Limit(0.0, 0.9, "probability of dropping each attention weight while training"),
    "seed": Limit(
        0,
        2**31 - 1,
        "seed for the random weight matrices, the embeddings and the dropout draws; the default, 123, gives each "
        "page the seed the book uses there (789 for SelfAttention_v2 and the causal mask)",
    ),
    # the deepest GPT-2 (XL); ``explorer.models.fit`` narrows layer and head to the model's
    "layer": Limit(1, 48, clamped=False),
    "head": Limit(0, 24, clamped=False),
}
# The settings that are not numbers: the values each may take (None: any text), and the notice for another.
CHOICES = {
    "source": ((BOOK, TEXT), "input={} is unknown; showing the book's example."),
    "text": (None, "The sentence must be text, not {}; using the book's sentence."),
    "training": ((False, True), "mode={} is unknown; using eval."),
    "weights": (WEIGHTS, "weights={} is unknown (random, trained or gpt2); using random."),
}


@dataclass(frozen=True)
class Settings:
    """Everything a view depends on. The defaults are the book's chapter-3 example."""

    source: str = BOOK  # "book": the book's six 3-d vectors; "text": the typed sentence
    text: str = BOOK_SENTENCE
    d_in: int = 3
    d_out: int = 2
    num_heads: int = 2
    context_length: int = 1024
    dropout: float = 0.0
    seed: int = 123
    training: bool = False
    weights: str = RANDOM  # one of WEIGHTS; with a model's, its sizes replace d_in, d_out, num_heads, context_length
    layer: int = 1  # the model's layer shown, from 1
    head: int = 0  # the layer's head that single-head pages hold, from 0

    @property
    def effective_d_in(self) -> int:
        return 3 if self.source == BOOK and self.weights == RANDOM else self.d_in

    @property
    def head_dim(self) -> int:
        return self.d_out // self.num_heads

    def key(self) -> tuple:
        """A hashable key for caches."""
        return astuple(self)


DEFAULTS = Settings()


def _checked(name: str, raw, notices: list[str]):
    """``raw`` as the setting ``name`` takes it (one of its ``CHOICES``, or a number inside its ``LIMITS``): else
    the default, or for one outside clamped limits the nearest limit, with a notice."""
    default = getattr(DEFAULTS, name)
    if name in CHOICES:
        choices, message = CHOICES[name]
        if type(raw) is type(default) and (choices is None or raw in choices):
            return raw
        notices.append(message.format(quoted(raw)))
        return default
    limit, whole = LIMITS[name], name != "dropout"
    value = parse_whole(raw) if whole else parse_decimal(raw)
    low, high = (int(limit.low), int(limit.high)) if whole else (limit.low, limit.high)
    if not limit.clamped and (value is None or not low <= value <= high):
        notices.append(f"{name}={quoted(raw)} is not a whole number from {low} to {high}; using {default}.")
        return default
    if value is None:
        notices.append(f"{name}={quoted(raw)} is not a {'whole ' if whole else ''}number; using {default}.")
        return default
    if value < low or value > high:
        clamped = min(max(value, low), high)
        notices.append(f"{name}={quoted(raw)} is outside {low}–{high}; using {clamped}.")
        return clamped
    return value if whole else round(value, 4)


def _fit_heads(d_out: int, num_heads: int, keep: str, notices: list[str]) -> tuple[int, int]:
    """Make d_out divisible by num_heads, changing the one the user did not just set."""
    if d_out % num_heads == 0:
        return d_out, num_heads
    if keep == "num_heads":
        fixed = d_out + num_heads - d_out % num_heads
        if fixed > LIMITS["d_out"].high:
            fixed = d_out - d_out % num_heads
        notices.append(
            f"MultiHeadAttention splits d_out evenly across heads: with num_heads={num_heads}, "
            f"d_out={d_out} became {fixed}."
        )
        return fixed, num_heads
    fixed = max(h for h in range(1, min(num_heads, d_out) + 1) if d_out % h == 0)
    notices.append(
        f"MultiHeadAttention splits d_out evenly across heads: d_out={d_out} is not divisible by "
        f"num_heads={num_heads}, so num_heads became {fixed}."
    )
    return d_out, fixed


def validate(settings: Settings, keep: str = "d_out") -> tuple[Settings, list[str]]:
    """Clamp every value to ``LIMITS`` and fix impossible combinations, explaining each change; when d_out and
    num_heads do not divide, ``keep`` names the one to leave alone."""
    notices: list[str] = []
    values = {field.name: _checked(field.name, getattr(settings, field.name), notices) for field in fields(settings)}
    if len(values["text"]) > MAX_TEXT_CHARS:
        notices.append(
            f"The text is {len(values['text']):,} characters long; only the first {MAX_TEXT_CHARS:,} are used."
        )
        values["text"] = values["text"][:MAX_TEXT_CHARS]
    values["d_out"], values["num_heads"] = _fit_heads(values["d_out"], values["num_heads"], keep, notices)
    return Settings(**values), notices


# Settings field -> its name in a link: its own, but for these
LINK_NAMES = {field.name: field.name for field in fields(Settings)} | {
    "source": "input",
    "num_heads": "heads",
    "context_length": "ctx",
    "dropout": "p",
    "training": "mode",
    "head": "layer_head_n",
}
# Every index in a link counts from 1, as the book counts (x^(1), head 1, layer 1, cell 1,1). Links once wrote
# these from 0; each was renamed rather than recounted, so that a name means one thing: a name ending in "_n"
# counts from 1, and its old name (the value here), never written now, is still read from 0, so an old link
# opens the view it opened. New name -> old name.
OLD_NAMES = {
    "layer_head_n": "layer_head",  # the sidebar's head of a model's layer
    "head_n": "head",  # Multi-head attention's inspected head; Generate's head
    "query_n": "query",  # Simplified attention's query token
    "token_n": "token",  # Generate's new token
    "gen_layer_n": "gen_layer",  # Generate's layer
}
_MODES = {
    **dict.fromkeys(("1", "true", "yes", "on", "train"), True),
    **dict.fromkeys(("0", "false", "no", "off", "eval"), False),
}


def from_query_params(params: Mapping[str, str]) -> tuple[Settings, list[str]]:
    """Settings from a URL's query parameters; bad or unknown values fall back with a notice."""
    notices: list[str] = []
    raw = {field: params[name] for field, name in LINK_NAMES.items() if name in params}
    if "head" in raw:
        raw["head"] = _head_from_one(raw["head"], notices)
    elif OLD_NAMES["layer_head_n"] in params:  # an old link's, from 0 (``OLD_NAMES``)
        raw["head"] = params[OLD_NAMES["layer_head_n"]]
    if "text" in raw:
        text = raw["text"] = str(raw["text"])
        if len(text) > MAX_URL_TEXT_CHARS:
            notices.append(
                f"The sentence in the link is {len(text):,} characters; links carry at most "
                f"{MAX_URL_TEXT_CHARS:,}, so it was cut there."
            )
            raw["text"] = text[:MAX_URL_TEXT_CHARS]
        raw.setdefault("source", TEXT)
    if "training" in raw:
        raw["training"] = _MODES.get(str(raw["training"]).lower(), raw["training"])
    settings, more = validate(replace(DEFAULTS, **raw))
    return settings, notices + more


def _head_from_one(raw, notices: list[str]):
    """The head index (from 0) of a link's ``layer_head_n``, which counts from 1; else the default, with a notice."""
    number, high = parse_whole(raw), int(LIMITS["head"].high) + 1
    if number is None or not 1 <= number <= high:
        notices.append(f"layer_head_n={quoted(raw)} is not a head from 1 to {high}; using head {DEFAULTS.head + 1}.")
        return DEFAULTS.head
    return number - 1


def index_from_link(name: str, new, old) -> tuple[int | None, str]:
    """The index (from 0) a page's link gives: its ``name`` parameter's value ``new``, counted from 1, else the old
    name's (``OLD_NAMES``) value ``old``, counted from 0; None when neither is there or readable, with why."""
    if new is not None:
        number = parse_position(new)
        if number is None or number < 1:
            return None, f"{name}={quoted(new)} in the link is not a number from 1"
        return number - 1, ""
    number = parse_position(old)
    if old is not None and number is None:
        return None, f"{OLD_NAMES[name]}={quoted(old)} in the link is not a position"
    return number, ""


@functools.lru_cache(maxsize=256)  # pure in frozen settings; callers copy before adding to it
def to_query_params(settings: Settings) -> dict[str, str]:
    """The query parameters that reproduce ``settings``; values equal to the defaults are left out."""
    params: dict[str, str] = {}
    if settings.source != DEFAULTS.source:
        params["input"] = settings.source
    if settings.source == TEXT and len(settings.text) <= MAX_URL_TEXT_CHARS:
        params["text"] = settings.text
    for field in ("d_in", "d_out", "num_heads", "context_length", "dropout", "seed"):
        if getattr(settings, field) != getattr(DEFAULTS, field):
            params[LINK_NAMES[field]] = str(getattr(settings, field))
    if settings.training != DEFAULTS.training:
        params["mode"] = "train" if settings.training else "eval"
    if settings.weights != DEFAULTS.weights:
        params.update(weights=settings.weights, layer=str(settings.layer), layer_head_n=str(settings.head + 1))
    return params
