"""Inside a forked student kernel: the code that runs in the same process as a student's cells.

A mistake here is a security hole, so these modules import nothing of the engine outside this package
(``tests/test_layering.py``): the parent's bookkeeping, the zygote's start-up and the doors stay out of reach.
"""
