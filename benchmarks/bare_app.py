"""The bare page for ``benchmarks.app_scale``: the explorer's widgets (BENCHMARKS.md's "App at scale" lists
them), no content, no torch; it imports Streamlit and tiktoken only: Streamlit's floor for these widgets."""

import urllib.parse

import streamlit as st
import tiktoken

st.set_page_config(page_title="Bare page", page_icon=":material/grid_on:", layout="wide")
DEFAULTS = {"w_source": "book", "w_text": "Your journey starts with one step", "w_d_in": 3, "w_d_out": 2}
DEFAULTS |= {"w_num_heads": 2, "w_context_length": 1024, "w_dropout": 0.0, "w_seed": 123, "w_training": False}
STEPS = ["one", "two", "three", "four", "five"]


@st.cache_resource
def encoding():
    return tiktoken.get_encoding("r50k_base")  # GPT-2's ranks, from TIKTOKEN_CACHE_DIR


@st.cache_data(max_entries=32, show_spinner=False)
def count_tokens(text: str) -> int:
    return len(encoding().encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=()))


def start_session() -> None:
    state = st.session_state
    if "settings" in state:
        return
    params = st.query_params.to_dict()
    state.update(DEFAULTS)
    if "text" in params:
        state["w_text"], state["w_source"] = params["text"][:2000], "text"
    state["settings"] = dict(DEFAULTS, w_text=state["w_text"], w_source=state["w_source"])
    step = params.get("step", "1")
    state["step"] = min(max(int(step) - 1, 0), len(STEPS) - 1) if step.isdigit() else 0


def on_change() -> None:
    st.session_state["settings"] = {key: st.session_state[key] for key in DEFAULTS}


def sidebar() -> dict:
    state = st.session_state
    with st.sidebar:
        st.toggle("Presenter mode", key="presenter", help="Large fonts.")
        state["link_slot"] = st.container()
        st.radio("Input", ("book", "text"), key="w_source", format_func=str.title, on_change=on_change)
        book = state["w_source"] == "book"
        st.text_input("Sentence", key="w_text", on_change=on_change, disabled=book, help="Press Enter to apply.")
        left, right = st.columns(2)
        left.number_input("d_in", 1, 1024, key="w_d_in", on_change=on_change, disabled=book, help="d_in")
        right.number_input("d_out", 1, 1024, key="w_d_out", on_change=on_change, help="d_out")
        left.number_input("num_heads", 1, 16, key="w_num_heads", on_change=on_change, help="heads")
        right.number_input("context_length", 1, 1024, key="w_context_length", on_change=on_change, help="ctx")
        left.number_input("dropout p", 0.0, 0.9, step=0.05, format="%.2f", key="w_dropout", on_change=on_change)
        right.number_input("seed", 0, 2**31 - 1, key="w_seed", on_change=on_change, help="seed")
        st.toggle("Training mode (dropout on)", key="w_training", on_change=on_change, help="training")
        st.segmented_control("Figure download format", ("png", "svg"), default="png", key="w_image_format")
    return state["settings"]


def token_window(settings: dict) -> None:
    """The token-window slider above 48 tokens, sized like the explorer's (tokenizer only)."""
    if settings["w_source"] != "text" or not settings["w_text"].strip():
        return
    num_tokens = min(count_tokens(settings["w_text"]), settings["w_context_length"])
    if num_tokens <= 48:
        return
    if "w_window" not in st.session_state or st.session_state.get("window_tokens") != num_tokens:
        st.session_state["w_window"], st.session_state["window_tokens"] = (0, num_tokens), num_tokens
    with st.sidebar:
        st.slider("Tokens shown in heatmaps", 0, num_tokens, key="w_window", help="Block means.")


def stepper() -> int:
    state = st.session_state

    def move(delta: int) -> None:
        state["step"] = min(max(state["step"] + delta, 0), len(STEPS) - 1)

    index = state["step"]
    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    back = {"icon": ":material/arrow_back:", "args": (-1,), "disabled": index == 0, "shortcut": "Left"}
    forward = {"icon": ":material/arrow_forward:", "icon_position": "right", "args": (1,), "shortcut": "Right"}
    previous.button("Previous", key="prev:bare", on_click=move, width="stretch", **back)
    forward |= {"disabled": index == len(STEPS) - 1, "type": "primary"}
    following.button("Next", key="next:bare", on_click=move, width="stretch", **forward)
    st.html("<style>[class*='st-key-clicker_'] {position: absolute; left: -10000px;}</style>")
    for name, delta, shortcut in (("clicker_next", 1, "PageDown"), ("clicker_prev", -1, "PageUp")):
        st.button(f"{name} bare", key=f"{name}_bare", on_click=move, args=(delta,), shortcut=shortcut)
    label = f"<b>Step {index + 1} of {len(STEPS)}</b> · {STEPS[index]}"
    middle.markdown(f"<div style='text-align:center'>{label}</div>", unsafe_allow_html=True)
    middle.progress((index + 1) / len(STEPS))
    return index


def bare() -> None:
    st.title("Bare page")
    stepper()


start_session()
navigation = st.navigation([st.Page(bare, title="Bare", url_path="bare", default=True)])
settings = sidebar()
token_window(settings)
st.html("<style>[data-testid='stMainBlockContainer'] {padding-top: 2.2rem;}</style>")
navigation.run()
params = {"input": settings["w_source"], "text": settings["w_text"], "step": str(st.session_state["step"] + 1)}
query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
with st.session_state["link_slot"].popover("Copy link to this view", icon=":material/link:", width="stretch"):
    st.caption("Opens this page.")
    st.code(f"http://localhost:8501/?{query}", language=None, wrap_lines=True)
if st.query_params.to_dict() != params:
    st.query_params.from_dict(params)
