"""The zygote: the process that imports torch once, rehearses the course and forks one kernel per notebook.

Trusted: it never runs student code itself; each child enters ``inside.sandbox`` before its first cell.
Launched by ``kernels.kernel.Zygote`` as ``python -m grader.engine.forking.zygote``.
"""
