"""The autograded PyTorch course: checks library, course tooling and CLI.

Importing :mod:`grader` loads nothing but the standard library, so
``grader.checks`` stays cheap and dependency-free inside student kernels.
"""

__version__ = "0.1.0"
