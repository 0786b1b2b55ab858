"""The grader's side of the kernels, in the parent process: start the zygote, fork kernels, run their cells.

What a kernel sends back is read as untrusted data (``grader.engine.protocol``).
"""
