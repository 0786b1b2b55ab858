"""The student-side commands: ``grader check`` (the visible tests, locally) and ``grader submit``.

Both work on a student's own notebook, not on a course (``grader.cli.STUDENT_COMMANDS``). The stock
student commands (``nbgrader fetch_assignment``, ``submit``, ...) go through ``grader.exchange``.
"""
