"""Attention Explorer: step through chapter 3's causal multi-head self-attention with real numbers.

Run with ``streamlit run streamlit_app.py``. The sidebar holds the shared
settings; each page in ``pages/`` shows one stage of the chapter.
"""

import streamlit as st

from explorer import state

st.set_page_config(page_title="Attention Explorer", page_icon=":material/grid_on:", layout="wide")

PAGES = [
    st.Page("pages/tokens.py", title="Tokens & embeddings", icon=":material/text_fields:", default=True),
]

state.sidebar()
navigation = st.navigation(PAGES)
navigation.run()
state.sync_url()
