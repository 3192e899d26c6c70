"""The floor for a cold start (issue 36's "a bare Streamlit page with one plotly chart"): a title and one plotly
heatmap of the book's size, and nothing else. ``python -m benchmarks.actions paint --against
benchmarks/bare_chart.py`` starts it after each of the app's cold starts."""

import plotly.graph_objects as go
import streamlit as st

st.title("A bare page")
z = [[(row * 6 + col) / 36 for col in range(6)] for row in range(6)]  # six tokens by six, like the book's
st.plotly_chart(go.Figure(go.Heatmap(z=z)))
