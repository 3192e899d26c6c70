"""Glossary: the notation the pages follow, and every term they link, one heading (and anchor) per term."""

import streamlit as st

from attention.prose.glossary import NOTATION, TERMS
from explorer import session

session.ensure_entrypoint()  # a deep link opened first after a start runs this page alone
st.title("Glossary")
st.markdown("\n\n".join(NOTATION))
for key, entry in TERMS.items():
    st.subheader(entry.shown(), anchor=key)
    st.markdown(entry.definition)
