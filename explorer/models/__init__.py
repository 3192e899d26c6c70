"""The models layer: the Weights setting's one place. ``choice`` says which model stands behind the
settings (None for the chapter's random weights) and fits the settings to it; ``inputs`` prepares the
sentence (the book's vectors, seeded embeddings, or a trained layer's input); ``modules`` builds the
chapter's classes like the book or holding a trained layer; ``heads`` summarises a layer's heads;
``first_view`` holds the stored first page. Nothing here draws.

It may import ``runtime`` and the bottom modules, never ``views`` or above."""
