"""Shared fixtures: the stock-nbgrader grading of every fixture submission (session-wide)."""

from tests.graded import graded

__all__ = ["graded"]
