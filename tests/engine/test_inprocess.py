"""The engine's cached gradebook connection survives a database restart (a real PostgreSQL of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import course
from grader.engine.bookkeeping import inprocess
from tests.fixtures.gradebooks import every_kind_of_cell
from tests.fixtures.sql import sent_statements
from tests.service.queue.cluster import Postgres


def test_a_cached_gradebook_connection_is_replaced_after_the_database_restarts() -> None:
    from nbgrader.api import Gradebook

    course.put_bin_on_path()
    inprocess.apply()
    postgres = Postgres()
    try:
        with Gradebook(postgres.url()) as gradebook:
            gradebook.update_or_create_student("before")
        postgres.stop()
        postgres.start()  # every pooled connection is now dead
        with Gradebook(postgres.url()) as gradebook:
            gradebook.update_or_create_student("after")
            assert sorted(s.id for s in gradebook.students) == ["after", "before"]
    finally:
        postgres.close()


def test_metadata_validation_remembers_only_valid_values_and_tells_types_apart() -> None:
    import jsonschema  # type: ignore[import-untyped]
    from nbgrader.nbgraderformat import v3

    inprocess.apply()
    schema = v3.MetadataValidatorV3().schema
    cached = inprocess._CachedJsonschema(jsonschema)
    good = {"grade": True, "grade_id": "t1", "locked": True, "points": 2, "schema_version": 3, "solution": False}
    cached.validate(good, schema)
    cached.validate(dict(good), schema)  # remembered: the same value
    assert cached.remembered(schema) == 1
    for bad in ({**good, "points": "2"}, {**good, "grade": 1}, {**good, "grade_id": ("t1",)}):
        for _ in range(2):  # never remembered: the same error each time, as jsonschema's own validate gives
            with pytest.raises(jsonschema.ValidationError) as caught:
                cached.validate(bad, schema)
            with pytest.raises(jsonschema.ValidationError) as stock:
                jsonschema.validate(bad, schema)
            assert caught.value.message == stock.value.message
    assert cached.remembered(schema) == 1
    assert inprocess._exact({"a": [1, 2.0, None]}) != inprocess._exact({"a": [1, 2, None]})
    assert inprocess._exact({"a": (1,)}) is None


def test_metadata_validation_remembers_cell_metadata_as_nbformat_reads_it() -> None:
    """nbgrader validates ``cell.metadata.nbgrader``, a ``NotebookNode`` (a dict subclass), not a dict."""
    import jsonschema  # type: ignore[import-untyped]
    import nbformat
    from nbgrader.nbgraderformat import v3

    inprocess.apply()
    schema = v3.MetadataValidatorV3().schema
    cached = inprocess._CachedJsonschema(jsonschema)
    cell = nbformat.v4.new_code_cell(
        metadata={
            "nbgrader": {
                "grade": True,
                "grade_id": "t1",
                "locked": True,
                "points": 2,
                "schema_version": 3,
                "solution": False,
            }
        }
    )
    meta = nbformat.reads(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])), 4).cells[0].metadata.nbgrader
    assert type(meta) is nbformat.NotebookNode
    cached.validate(meta, schema)
    assert cached.remembered(schema) == 1  # remembered: the next submission's same metadata is not validated again
    meta["points"] = "2"
    with pytest.raises(jsonschema.ValidationError, match="'2' is not of type 'number'"):
        cached.validate(meta, schema)


def _rows_of(url: str, student: str) -> dict[str, list[tuple[object, ...]]]:
    """Every row nbgrader's ``add_submission`` writes for ``student``, without the random ids."""
    import sqlalchemy as sa

    queries = {
        "submitted_assignment": "SELECT assignment_id, timestamp, extension FROM submitted_assignment sa "
        "WHERE sa.student_id = :s",
        "submitted_notebook": "SELECT sn.notebook_id, sn.flagged, sn.late_submission_penalty "
        "FROM submitted_notebook sn JOIN submitted_assignment sa ON sa.id = sn.assignment_id WHERE sa.student_id = :s",
        "grade": "SELECT sn.notebook_id, g.cell_id, g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade "
        "FROM grade g JOIN submitted_notebook sn ON sn.id = g.notebook_id "
        "JOIN submitted_assignment sa ON sa.id = sn.assignment_id WHERE sa.student_id = :s",
        "comment": "SELECT sn.notebook_id, c.cell_id, c.auto_comment, c.manual_comment "
        "FROM comment c JOIN submitted_notebook sn ON sn.id = c.notebook_id "
        "JOIN submitted_assignment sa ON sa.id = sn.assignment_id WHERE sa.student_id = :s",
    }
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return {
                table: sorted(tuple(row) for row in conn.execute(sa.text(query), {"s": student}))
                for table, query in queries.items()
            }
    finally:
        engine.dispose()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_add_submission_writes_nbgraders_rows_and_refuses_as_nbgrader_does(database: str, tmp_path: Path) -> None:
    """The engine's ``add_submission`` (a student's first job: one INSERT per table) against nbgrader's own."""
    import contextlib
    import datetime as dt

    from nbgrader.api import Gradebook, InvalidEntry, MissingEntry, SubmittedAssignment

    from tests.service.conftest import fresh_database

    course.put_bin_on_path()
    inprocess.apply()
    stock = inprocess.original_add_submission
    assert stock is not None and Gradebook.add_submission is inprocess.add_submission
    with contextlib.ExitStack() as stack:
        url = (
            stack.enter_context(fresh_database("grader_add"))
            if database == "postgresql"
            else f"sqlite:///{tmp_path / 'gradebook.db'}"
        )
        every_kind_of_cell(url)
        when = {"timestamp": "2026-12-02 10:30:00", "extension": dt.timedelta(hours=2)}
        with Gradebook(url) as gradebook:
            theirs = stock(gradebook, "ps", "stock", **when)
            with sent_statements() as sent:
                ours = gradebook.add_submission("ps", "fast", **when)
            reads = [s for s in sent if s.lstrip().upper().startswith("SELECT")]
            assert len(reads) == 2, reads  # the assignment, student, notebooks and cells; the submission back
            with sent_statements() as asked:  # nbgrader's log line names the submission: loaded with it
                assert repr(ours) == "SubmittedAssignment<ps for fast>"
            assert asked == []
            assert repr(theirs) == "SubmittedAssignment<ps for stock>"
            assert isinstance(ours, SubmittedAssignment) and ours.student_id == "fast"
            assert (ours.timestamp, ours.extension) == (theirs.timestamp, theirs.extension)
            assert ours.total_seconds_late == theirs.total_seconds_late > 0
            assert len(ours.notebooks) == 2 and all(
                len(nb.grades) == 3 and len(nb.comments) == 3 for nb in ours.notebooks
            )
        stored = _rows_of(url, "fast")
        assert stored == _rows_of(url, "stock")
        assert [len(rows) for rows in stored.values()] == [1, 2, 6, 6]
        with Gradebook(url) as gradebook:
            assert len(gradebook.add_submission("empty", "fast").notebooks) == 0
            assert len(stock(gradebook, "empty", "stock").notebooks) == 0
        stored = _rows_of(url, "fast")
        assert stored == _rows_of(url, "stock")
        assert [len(rows) for rows in stored.values()] == [2, 2, 6, 6]

        with Gradebook(url) as gradebook:
            for args, kind in (
                (("nope", "fast"), MissingEntry),
                (("nope", "nobody"), MissingEntry),  # the assignment is named first, as nbgrader does
                (("ps", "nobody"), MissingEntry),
                (("ps", "fast"), InvalidEntry),
            ):
                with pytest.raises(kind) as caught_ours:
                    gradebook.add_submission(*args)
                with pytest.raises(kind) as caught_theirs:
                    stock(gradebook, *args)
                if kind is MissingEntry:  # the database's own wording of a duplicate differs between the two
                    assert str(caught_ours.value) == str(caught_theirs.value)
        assert _rows_of(url, "fast") == stored  # the refused second submission lost nothing


def test_metadata_validation_remembers_across_notebooks_whose_schema_nbgrader_loads_anew() -> None:
    """nbgrader makes a validator, and loads the schema from its file, for every notebook: the memory and
    the compiled validator are kept by the schema's content, one for all of them, not one per object."""
    import jsonschema  # type: ignore[import-untyped]
    from nbgrader.nbgraderformat import v3

    inprocess.apply()
    first, second = v3.MetadataValidatorV3().schema, v3.MetadataValidatorV3().schema
    assert first is not second and first == second
    cached = inprocess._CachedJsonschema(jsonschema)
    good = {"grade": True, "grade_id": "t1", "locked": True, "points": 2, "schema_version": 3, "solution": False}
    cached.validate(good, first)
    built = cached._validator(first)[0]
    cached.validate(dict(good), second)
    assert cached._validator(second)[0] is built and cached.remembered(second) == 1
    assert len(cached._by_content) == 1  # a long-lived service keeps one entry, not one per notebook graded
