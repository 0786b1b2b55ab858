"""Tests of the tests, for the people who write a course: fixtures beside each assignment's source,
mutants derived from its solution cells, and ``grader validate``, which grades both and reports."""
