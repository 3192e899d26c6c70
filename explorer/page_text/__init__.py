"""What a page computes besides its figures: the step prose that quotes measured numbers, and small
helpers, one module per page, so the pages read top to bottom as settings → data → figures.

Nothing here draws; the pages call these functions and render what they return.
"""
