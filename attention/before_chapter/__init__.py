"""Before chapter 3: why attention was invented. ``bahdanau`` is the RNN encoder–decoder's bottleneck and
Bahdanau's additive attention; ``reversal`` trains that encoder–decoder to reverse sentences, with and without
attention (``trained_alignment``, ``bottleneck_curve``)."""
