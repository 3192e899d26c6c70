"""Live room: where a student who follows a teacher's room sees the teacher's page, step and settings.

While the student follows, the app draws the teacher's page here instead of this script (``explorer_app``'s
``show_page``), so that the teacher's move to another page reruns only the page. This script shows when
there is nothing to follow: no room, or a room whose teacher has not shown a page yet."""

import streamlit as st

from explorer import room, session

session.ensure_entrypoint()  # a deep link opened first after a start runs this page alone
st.title("Live room")
if room.is_student():
    st.markdown("You are in a live room. When the teacher shows a page, it appears here with their step and settings.")
else:
    st.markdown(
        "This page shows a teacher's page when you follow their live room. To join one, open the link your "
        "teacher shows, or scan its QR code. To explore on your own, start with the first page."
    )
    st.page_link("pages/why_attention.py", label="Why attention", icon=":material/lightbulb:")
