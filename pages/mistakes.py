"""Break it: one line of the chapter's code changed, beside the right code, with what the change costs, measured."""

import pandas as pd
import streamlit as st

import attention
from attention.figures import charts as drawn
from attention.prose import cells
from attention.prose.cells import Notation
from explorer import session, widgets
from explorer.page_text import mistakes as notes
from explorer.views.beyond import SCALING_MISTAKES, changed_step, mistake_view
from explorer.widgets.questions import show_question

MISTAKE = session.MISTAKE
NAMES = list(attention.MISTAKES)

run = session.current_run()
settings = run.settings
if MISTAKE not in st.session_state:
    linked = session.initial_param("mistake", "mistakes")
    st.session_state[MISTAKE] = linked if linked in attention.MISTAKES else NAMES[0]
title, choice = st.columns([1, 2], vertical_alignment="bottom")
title.title("Break it")
kept = session.kept_widget(MISTAKE, "w_mistake", NAMES[0])
choice.selectbox("The mistake", NAMES, format_func=lambda n: attention.MISTAKES[n].title, help=notes.HELP, **kept)
widgets.weights_caption(settings)
name = st.session_state[MISTAKE]
session.page_param("mistake", name)
mistake = attention.MISTAKES[name]
with st.spinner("Running the package's code and the mistake…"):
    data = widgets.guard(mistake_view, run, name)
widgets.truncation_notice(data.truncated_from, settings.context_length)
steps = widgets.Steps("mistakes")


def above_the_step():
    """What every step shows under the stepper: the presenter's stylesheet and, for the dropout mistake, its p."""
    widgets.page_stylesheet("mistakes")  # its tables, choice and code read from the back of the room
    if name == "dropout_without_rescale":
        book_p = " (the sidebar's p is 0, so the book's 0.5)" if settings.dropout == 0 else ""
        st.caption(f"Dropout here uses p = {data.dropout:.2f}{book_p}, in training mode, one seeded draw.")


@steps.add("The changed line")
def changed_line():
    above_the_step()
    st.markdown(f"**{mistake.title}**")  # why it is wrong comes after the question's Reveal
    if notes.scaling_changes_nothing(name, data.head_dim):
        st.info(notes.head_dim_note(data.head_dim), icon=":material/info:")
    diff = drawn.code_diff(mistake.right_code, mistake.wrong_code)
    st.code(diff, language="diff", wrap_lines=True)  # wrapped: a phone scrolls no code block sideways
    st.caption("`-` the package's line, `+` the mistake; the rest of the forward pass is the package's.")
    question = notes.mistake_question(data)  # answered from this mistake's own numbers
    if question is None or show_question(question, context=(settings.key(), name)):  # why: after the Reveal
        st.markdown(f"**Why it is wrong.** {mistake.why}")


@steps.add("Right beside wrong")
def right_beside_wrong():
    above_the_step()
    st.markdown(notes.panels_text(data.weight_limit))
    code = mistake.wrong_code.strip().splitlines()[0]  # the changed line
    explain = cells.mistake(data.cell_inputs, name, data.pieces, code=code, notation=Notation("attn_weights"))
    options = dict(future=data.future, title=f"attn_weights, head 1: {mistake.title}", zmax=data.weight_limit)
    right, wrong = data.right_weights, data.wrong_weights
    widgets.draw(drawn.right_and_wrong, "mistake-weights", right, wrong, data.pieces, explain=explain, **options)
    widgets.explain_cell()
    if rows := int(data.nan_rows.sum()):
        st.warning(
            f"{rows} row{'s are' if rows != 1 else ' is'} NaN, not a number (filled orange): the mask hides every "
            "key of that query, so every score in the row is −∞, and softmax of only −∞ is 0/0. The NaN reaches "
            f"the output of {data.nan_tokens} token{'s' if data.nan_tokens != 1 else ''}.",
            icon=":material/error:",
        )
    st.markdown(notes.difference_text(name, data.head_dim, data.max_weight_difference))
    st.markdown(f"**Why it is wrong.** {mistake.why}")  # after step 1's question, so a learner who skipped it reads it


@steps.add("What it costs")
def what_it_costs():
    above_the_step()
    st.markdown("\n".join(f"- {m.sentence}" for m in data.measures))
    st.table(pd.DataFrame(drawn.measure_rows(data.measures)).set_index("measured"))


def against_d_k():
    above_the_step()
    st.markdown(notes.curve_text(data.curve.num_keys, data.head_dim))
    for column, stat in zip(st.columns(2), ("max_weight", "param_grad"), strict=True):
        with column:
            options = dict(stat=stat, wrong_name=SCALING_MISTAKES[name], head_dim=data.head_dim)
            widgets.draw(drawn.saturation, f"saturation-{stat}", data.curve, **options)


if name in SCALING_MISTAKES:  # a mistake in the scaling: its cost as d_k grows
    steps.add("Against d_k")(against_d_k)

steps.show()
widgets.show_code(*changed_step(name), title="Show the code: the package's step, then the mistaken one")
