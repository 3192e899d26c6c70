"""Attention Explorer: step through chapter 3's causal multi-head self-attention with real numbers.

The script of each run; ``streamlit run streamlit_app.py`` serves it. The sidebar holds the shared
settings; each page in ``pages/`` shows one stage of the chapter.
"""

import streamlit as st

from explorer.server import configure_server


def run() -> None:
    """One run of the app's shell: the sidebar, the navigation and the page (in a fragment)."""
    configure_server()  # first: the browser fetches the charts' code while this run draws; torch is imported after it

    from explorer import state, turns, ui

    st.set_page_config(
        page_title="Attention Explorer",
        page_icon="🔍",  # an emoji is drawn in the browser; a :material/ icon is fetched from a font CDN
        layout="wide",
        initial_sidebar_state="collapsed" if state.presenter() else "auto",
    )
    pages = [
        st.Page("pages/why_attention.py", title="Why attention", icon=":material/lightbulb:", default=True),
        st.Page("pages/tokens.py", title="Tokens & embeddings", icon=":material/text_fields:"),
        st.Page("pages/simplified.py", title="Simplified attention", icon=":material/scatter_plot:"),
        st.Page("pages/qkv.py", title="Q, K, V & scaling", icon=":material/tune:"),
        st.Page("pages/causal_mask.py", title="Causal mask", icon=":material/change_history:"),
        st.Page("pages/dropout.py", title="Dropout", icon=":material/grain:"),
        st.Page("pages/batches.py", title="Batches & CausalAttention", icon=":material/stacks:"),
        st.Page("pages/multihead.py", title="Multi-head attention", icon=":material/view_module:"),
        st.Page("pages/mistakes.py", title="Break it", icon=":material/build:", url_path="mistakes"),
        st.Page("pages/speed.py", title="Speed", icon=":material/speed:"),
    ]
    navigation = st.navigation(pages)
    settings = state.sidebar()
    ui.token_window_control(settings)
    ui.base_css()
    if state.presenter():
        ui.presenter_css()

    @st.fragment
    def show_page() -> None:
        """The page, its downloads, its link and the URL. A click inside the page (Next, Previous, a query
        or a head) reruns only this, not the sidebar; a page's button that changes the settings reruns all."""
        if state.settings_changed_here():
            st.rerun(scope="app")
        ui.begin_run()
        with turns.page_turn(settings, navigation.url_path):  # heavy pages take turns; light ones never wait
            ui.run_page(navigation)
        ui.step_exports(navigation.title, settings)
        state.share_link(navigation.url_path)
        state.sync_url()

    show_page()


if __name__ == "__main__":
    run()
