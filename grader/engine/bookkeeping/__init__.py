"""nbgrader's bookkeeping in the parent: its Autograde converter run in-process, with the gradebook in bulk.

Only nbgrader's ``Execute`` step is replaced (``preprocessor.ForkExecute``); everything nbgrader computes and
writes is nbgrader's own code.
"""
