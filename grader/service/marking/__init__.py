"""Marking: written answers graded by a person, by question, with the rubric beside them.

After the gradebook stage has written what nbgrader autograded, a TA grades one question's answers one after
another (``answers``: read from ``autograded/``, identical ones grouped) by applying rubric items
(``marks``: the score and comment go to nbgrader's own gradebook, every change to the audit, two TAs on one
answer never overwrite each other silently). The rubric is the instructor's ``source/<assignment>/rubrics.toml``
(``grader.rubrics``) with the items staff edited since.
"""
