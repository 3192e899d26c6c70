"""Attention Explorer: step through chapter 3's causal multi-head self-attention with real numbers.

The script of each run; ``streamlit run streamlit_app.py`` serves it. ``run()`` is the app's shell: the
sidebar holds the shared settings, and each page in ``pages/`` shows one stage of the chapter inside a
fragment, so a click inside a page reruns only the page.
"""

import streamlit as st

from explorer.runtime.server import configure_server

PAGES = (  # (script, title, icon, options)
    ("pages/why_attention.py", "Why attention", ":material/lightbulb:", {"default": True}),
    ("pages/tokens.py", "Tokens & embeddings", ":material/text_fields:", {}),
    ("pages/simplified.py", "Simplified attention", ":material/scatter_plot:", {}),
    ("pages/qkv.py", "Q, K, V & scaling", ":material/tune:", {}),
    ("pages/causal_mask.py", "Causal mask", ":material/change_history:", {}),
    ("pages/dropout.py", "Dropout", ":material/grain:", {}),
    ("pages/batches.py", "Batches & CausalAttention", ":material/stacks:", {}),
    ("pages/multihead.py", "Multi-head attention", ":material/view_module:", {}),
    ("pages/generate.py", "Generate", ":material/edit_note:", {"url_path": "generate"}),
    ("pages/mistakes.py", "Break it", ":material/build:", {"url_path": "mistakes"}),
    ("pages/speed.py", "Speed", ":material/speed:", {}),
    ("pages/glossary.py", "Glossary", ":material/dictionary:", {"url_path": "glossary"}),
)
LIVE = ("pages/live.py", "Live room", ":material/groups:", {"url_path": "live"})  # a student's, in a room


def run() -> None:
    """One run of the app: the server's tuning, the page setup, the navigation, the sidebar and the page."""
    configure_server()  # first: the browser fetches the charts' code while this run draws; torch comes later

    from explorer import room, session, views, widgets

    st.set_page_config(
        page_title="Attention Explorer",
        page_icon="🔍",  # an emoji is drawn in the browser; a :material/ icon is fetched from a font CDN
        layout="wide",
        initial_sidebar_state="collapsed" if session.presenter() else "auto",
    )
    pages = room.app_pages(PAGES, LIVE)  # the Live room page is listed for a student in a room alone
    navigation = st.navigation(pages)
    by_path = {page.url_path: page for page in pages}

    @st.fragment
    def show_page() -> None:
        """The page, its downloads, its link and the URL, and a live room's teacher publishes where they are.
        A click inside the page (Next, Previous, a query or a head) reruns only this, not the sidebar; a page's
        button that changes the settings reruns all. On the Live room page it draws the teacher's page, so that
        a teacher's move to another page reruns only this too."""
        with room.follow_in_page(navigation.url_path):  # a teacher's move within the page reruns only this
            current = session.begin_run()
            if current is None:  # a page's button changed the settings: the sidebar must show them
                st.rerun(scope="app")
            page = room.page_shown(navigation, by_path)  # the Live room shows the teacher's page
            with views.page_turn(current, page.url_path):  # heavy pages take turns; light ones never wait
                widgets.run_page(page)
            params = widgets.finish_run(page.title, current, page.url_path, address=room.address)
            room.publish(page.url_path, params)  # the run's end: a teacher's live room follows this view

    room.follow_teacher(by_path, navigation.url_path)  # a student in a live room goes where the teacher is
    with room.turn():  # a run the live room woke waits for its turn (explorer/room/store.py)
        widgets.sidebar()
        widgets.stylesheet(presenter=session.presenter())
        room.controls()  # a live room, if any
        show_page()


if __name__ == "__main__":
    run()
