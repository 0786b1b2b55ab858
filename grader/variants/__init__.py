"""Per-student variants: values an instructor marks in a read-only cell differ from student to student.

The scheme:

1. **Marking** (``spec``). In the source notebook, a read-only (locked) code cell assigns constants,
   and a trailing comment says which values each may take::

       SLOPE = 3.0      # variant: [2.0, 2.5, 3.0, 3.5, 4.0]
       STEPS = 100      # variant: range(80, 121, 10)

   The value written is the instructor's own (the source notebook and its solution use it); the
   choices are a literal list or tuple, or ``range(...)``. Solutions and tests use the names, never
   the numbers. The marks survive ``nbgrader generate_assignment``: the release and the gradebook
   keep the cell as written.
2. **Drawing** (``spec.draw``). A student's value for ``NAME`` is choice number
   ``HMAC-SHA256(course secret, assignment, student, NAME) mod len(choices)``. The same student always
   gets the same values, a student cannot pick theirs, and nobody without the secret can compute
   another student's. The secret (``secret``) is a file beside the gradebook, never released.
3. **Handing out** (``personalise``). The exchange's fetch hands each student the release with their
   own values written in (``NAME = value``, the marks dropped); nothing else of the notebook differs.
4. **Grading** (``preprocessors``), in ``Autograde.sanitize_preprocessors``, so stock ``nbgrader
   autograde`` and the engine grade alike: ``NoteVariantEdits`` (before ``OverwriteCells``) tells
   the student when the cell they submitted does not hold their values; ``OverwriteCells`` restores
   the locked cell as released; ``ApplyVariant`` then writes the student's values into it. Hidden
   tests read the names, so they compute their expected values from the student's true variant,
   whatever the submitted cell said.
5. **Checking** (``check``): before a release, the instructor's own solution is run under every
   combination of values (or a sample, when there are many); a combination under which a test cell
   fails refuses the release, naming the values and the student id that draws them.

A course whose notebooks mark nothing behaves exactly as before and needs no secret.
"""

from .spec import Variant, VariantCell, draw, find_cells, personalise, student_values

__all__ = ["Variant", "VariantCell", "draw", "find_cells", "personalise", "student_values"]
