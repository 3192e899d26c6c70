"""Every key the app keeps in ``st.session_state`` besides its widgets' own (``key="w_…"`` where the widget is
drawn): what it holds and who writes it. ``tests/test_architecture.py`` fails on a key written as a string
anywhere else."""

# The settings and how this session sees the app (``session.state``)
SETTINGS = "settings"  # the chosen Settings, as the sidebar and the link hold them
SETTINGS_NOTICES = "settings_notices"  # why the settings differ from what was asked (clamped, unreadable), shown once
SET_HERE = "settings_set_by_page"  # a page's button changed the settings; the sidebar has not drawn them yet
RUN_KEY = "run"  # (the chosen settings, their Run): made once per change of the settings
PRESENTER = "presenter"  # presenter mode (``?present=1``): larger text and charts for a projector
PHONE = "phone"  # the browser is a phone's: narrower charts
TOKEN_WINDOW = "token_window"  # noqa: S105 (a key, not a password): (start, stop), the tokens pages show
WINDOW_TOKENS = "window_tokens"  # how many tokens the window was made for: another text starts it again

# The link that opened this session, and the one this run writes (``session.state``)
INITIAL_PARAMS = "initial_params"  # the link's query parameters, read once by the page they belong to
INITIAL_PARAMS_USED = "initial_params_used"  # {(page, name)}: the link's parameters a page has read already
LINK_PAGE = "link_page"  # the page the link opened: another page does not read its parameters
LINKED_KEYS = "linked_keys"  # the state keys a link started (a step, a query token): a new link starts them again
PAGE_PARAMS = "page_params"  # what a page adds to this run's link (its query token, head, cell)
LINK_SLOT = "link_slot"  # where the "Copy link" popover goes (the sidebar's container)

# This run: what it drew, for the downloads, the link and the cell panel (reset by ``state.begin_run``)
RUN_FIGURES = "run_figures"  # the figures drawn in this run, for the step's JSON export
RUN_STEP = "run_step"  # (page, step index, step title, step slug): the step this run shows, for file names and link
RUN_SECTIONS = "run_book_sections"  # the book sections this run's captions named, for the step's JSON export
RUN_CELLS = "run_cells"  # this run's panels a learner can pick cells of: [(name, Cells)] (``widgets.charts``)
CELL_CODE = "cell_code"  # the code line that made the selected cell's matrix, for ``show_code``
CELL_PANELS_SHOWN = "cell_panels_shown"  # how many of RUN_CELLS the cell panel had when drawn (``Steps.show``)


def step_key(page: str) -> str:
    """The step index (from 0) a page's stepper is on."""
    return f"step:{page}"


def cell_key(page: str, index: int) -> str:
    """The cell selected on a page's step (``widgets.charts``): {"panel", "row", "col", …} or None."""
    return f"cell:{page}:{index}"


def question_keys(question: str) -> tuple[str, str, str]:
    """A predict-then-reveal question's answer kept for the session, whether it is revealed, and its widget's key."""
    return f"{question}_answer", f"{question}_revealed", f"{question}_widget"


# Pages' own (besides their widgets'): what a page keeps while the widget that sets it is not drawn
WHY_HIDDEN = "why_hidden"  # Why attention's hidden_size
SIMPLIFIED_QUERY = "simplified:query"  # Simplified attention's query token (an index from 0)
QKV_TEMPERATURE = "qkv:temperature"  # Q, K, V & scaling's lab: the temperature that divides every score,
QKV_NUM_KEYS = "qkv:num_keys"  # and how many keys a row has
MULTIHEAD_HEAD = "multihead:head"  # Multi-head attention's inspected head (an index from 0)
DROPOUT_SAMPLES = "dropout_samples"  # Dropout's number of draws to average (also its slider's key)
MISTAKE = "mistakes:mistake"  # Break it's chosen mistake
SPEED_RESULT = "speed:result"  # Speed's last measurement this session asked for; reruns only redraw it
GENERATE_NEW = "generate:new"  # Generate's settings: how many new tokens,
GENERATE_TEMPERATURE = "generate:temperature"  # the sampling temperature (0: greedy),
GENERATE_TOP_K = "generate:top_k"  # top-k (0: all tokens),
GENERATE_SEED = "generate:seed"  # and the seed of the draws
GENERATE_TOKEN, GENERATE_LAYER = "generate:token", "generate:layer"  # the new token and layer inspected
GENERATE_HEAD = "generate:head"  # and the head (indices from 0)
GENERATE_WINDOW = "generate:window"  # the sliding window's size, in tokens
GENERATE_TIMES = "generate:times"  # Generate's timing of one new token both ways, until the next press


# The live room (``explorer.room.live``)
CODE, TOKEN, STUDENT = "room_code", "room_token", "room_student"  # the room joined; a teacher's token; a student's id
FOLLOWING = "room_following"  # a student follows the teacher (True) or explores on their own
SEEN = "room_seen"  # a student's last read: (version, position, revealed questions)
APPLIED = "room_applied"  # the teacher's position this student last moved to
PUBLISHED = "room_published"  # the position this teacher last published
MESSAGE = "room_message"  # why this session left its room (or could not join), until dismissed
COOKIE_HELD = "room_cookie_held"  # what this session believes the teacher's browser holds in its room cookie
VOTER_HELD = "room_voter_held"  # the id the student's browser sent when this session connected
ROOM_LINK_READ = "room_link_read"  # the link's ?room= was read (once per session)
ROOM_COOKIE_READ = "room_cookie_read"  # the browser's room cookies were read (once per session)
ROOM_SLOT = "room_slot"  # the sidebar's first container: a presenter's room, under the pages
RESUMED = "room_resumed"  # this session took back its browser's room: said once, in the room's panel
