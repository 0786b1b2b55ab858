"""The course's single source of configuration.

Stock nbgrader reads this file (``nbgrader generate_assignment``,
``nbgrader autograde``, the formgrader), and so does the ``grader`` package.
Environment overrides, for tests and deployments only:
``GRADER_COURSE_ROOT`` (where source/, release/, submitted/ ... live) and
``GRADER_DB_URL`` (the gradebook).
"""

import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821 - injected by traitlets

ROOT = os.environ.get("GRADER_COURSE_ROOT") or os.path.dirname(os.path.abspath(__file__))

# --- the course --------------------------------------------------------------
c.CourseDirectory.course_id = "pytorch101"
c.CourseDirectory.root = ROOT
c.CourseDirectory.db_url = os.environ.get("GRADER_DB_URL") or "sqlite:///" + os.path.join(ROOT, "gradebook.db")

# --- student releases ----------------------------------------------------------
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# A release must never be stale: generate_assignment keeps an old one and exits 0 without --force.
c.GenerateAssignment.force = True
# source/<assignment>/fixtures/ holds the instructor's fixture submissions (grader validate): solutions, so
# never released. nbgrader skips these names wherever it copies an assignment's files.
# source/<assignment>/rubrics.toml is how TAs grade the written answers (grader.rubrics): never released either.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "fixtures", "rubrics.toml"]

# --- grading -------------------------------------------------------------------
# Per-cell execution limit in seconds.  A cell that runs longer is interrupted and scores 0.
c.Execute.timeout = 30
c.Execute.startup_timeout = 60
c.Execute.interrupt_on_timeout = True
# Decided deliberately: a test cell the student deleted is put back and run, so it is graded on
# the student's code (rather than silently missing from the notebook), and the student is told.
c.OverwriteCells.add_missing_cells = True
# A correct solution must never lose points to a warning.  nbgrader scores any stderr output of a
# test cell as a failure; torch warns on stderr in legitimate code (float() of a tensor that
# requires grad, for one).  Python warnings have the shape "FILE:LINE: SomethingWarning: text".
# Log records go to stdout, not stderr, in every grading kernel (grader.plugins.kernel_logging).
from grader.plugins.kernel_logging import WARNING_LINE  # noqa: E402

c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = WARNING_LINE
# Student code runs in a private, empty working directory with a clean environment: from where it
# runs, no relative path reaches source/, the gradebook or other students' work, and no secret in
# the grader's environment is visible.  Truncating output never changes a verdict: LimitOutput drops
# stream output past its line limit, so a test cell's stdout flood is cut first where it would hide
# the stderr that costs the test its points (grader.plugins.output_limit).  Otherwise nbgrader's own pipeline.
c.Autograde.autograde_preprocessors = [
    "grader.plugins.isolation.PrivateExecute",
    "grader.plugins.output_limit.KeepStderr",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Before anything else, a submission's cells are matched to the release's (grader.plugins.mending): a cell
# split in two, retyped, moved, stripped of its nbgrader metadata or ids, or from an older release
# is still graded, missing cells are put back, and the student is told which cell and what was done.
# Per-student variants (grader.variants): a student whose variant cell does not hold their own values is
# told so, and the cell is graded with their values, drawn from the course secret.
# A locked cell exactly as released gets the gradebook's source (its hidden tests) back before
# OverwriteCells compares checksums (grader.plugins.integrity.RestoreHiddenTests): nbgrader's gradebook
# holds each test cell's checksum with its hidden tests, so OverwriteCells would otherwise report every
# test cell of every notebook as changed; it now reports only the cells a student really changed.
# Test cells always run: a student's `skip-execution` tag on a test cell would otherwise make
# nbclient skip it, and nbgrader give full points to a test cell without an error.
c.Autograde.sanitize_preprocessors = [
    "grader.plugins.mending.MendCells",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "grader.variants.preprocessors.NoteVariantEdits",
    "grader.plugins.integrity.RestoreHiddenTests",
    "nbgrader.preprocessors.OverwriteCells",
    "grader.variants.preprocessors.ApplyVariant",
    "grader.plugins.integrity.RunEveryTestCell",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.LimitOutput.max_lines = 1000

# --- per-student variants (grader.variants; docs/instructors/variants.md) -------------------------
# Values a read-only cell marks `# variant: [choices]` differ per student, drawn from this course secret
# (made by `grader serve` on its first start, or `grader variants --create-secret`). Back it up with the
# gradebook; never commit it or give it to students. $GRADER_VARIANT_SECRET overrides it.
c.Variants.secret_file = os.path.join(ROOT, "variant_secret.txt")
c.LimitOutput.max_traceback = 100

# --- feedback (nbgrader generate_feedback) ------------------------------------------------
# The HTML a TA hands out shows what the service's feedback shows: hidden test source is cut out and
# tracebacks (which quote it) become the error's one line (grader.plugins.redaction), and active HTML in
# student outputs and markdown (scripts, on*= handlers, javascript: links, iframes) is made inert.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "grader.plugins.redaction.HideHiddenTests",
]
c.HideHiddenTests.enforce_metadata = False  # a student's stray delimiter must not stop a TA's feedback run
c.HTMLExporter.sanitize_html = True

# --- the grading service (grader serve) ---------------------------------------------
c.GraderService.port = 8000
# c.GraderService.workers = 2            # kernels at once; default: one per CPU this process may run on
c.GraderService.notebook_timeout_s = 300  # whole-notebook wall-clock limit
c.GraderService.memory_limit_bytes = 10 * 1024**3  # address space: a torch kernel maps ~5 GiB, RSS ~0.7 GiB
c.GraderService.resident_limit_bytes = 4 * 1024**3  # resident memory, read while a cell runs: kernel stopped past it
c.GraderService.max_upload_bytes = 5 * 1024**2
c.GraderService.feedback_policy = {}      # assignment -> "immediate" | "after_deadline" | "score_only"

# --- exchange: the stock student commands (nbgrader fetch_assignment / submit / list / fetch_feedback,
# and JupyterLab's Assignments panel) talk to the grading service; URL and token from $GRADER_URL and
# $GRADER_TOKEN (or c.GraderExchange.url / .token).  Releases, collection and feedback are the service's.
c.ExchangeFactory.exchange = "grader.exchange.GraderExchange"
c.ExchangeFactory.fetch_assignment = "grader.exchange.GraderFetchAssignment"
c.ExchangeFactory.submit = "grader.exchange.GraderSubmit"
c.ExchangeFactory.list = "grader.exchange.GraderList"
c.ExchangeFactory.fetch_feedback = "grader.exchange.GraderFetchFeedback"
c.ExchangeFactory.release_assignment = "grader.exchange.GraderReleaseAssignment"
c.ExchangeFactory.release_feedback = "grader.exchange.GraderReleaseFeedback"
c.ExchangeFactory.collect = "grader.exchange.GraderCollect"

# --- late policy -----------------------------------------------------------------
# 10% of the score per started day late, after 15 minutes of grace; nothing after 10 days.
c.AssignLatePenalties.plugin_class = "grader.plugins.late_policy.PercentPerDay"
c.PercentPerDay.percent_per_day = 10.0
c.PercentPerDay.grace_minutes = 15.0
c.PercentPerDay.unit = "day"            # or "hour"
c.PercentPerDay.max_percent = 100.0     # cap; nbgrader's own "none"/"zero": c.LateSubmissionPlugin.penalty_method
# Set from the dashboard (Settings page; grader.plugins.late_policy.save): late_policy.json in the course root
# overrides the four values above, for the service and for stock `nbgrader autograde` alike.
_late_policy = os.path.join(ROOT, "late_policy.json")
if os.path.exists(_late_policy):
    import json

    with open(_late_policy) as _f:
        for _key, _value in json.load(_f).items():
            setattr(c.PercentPerDay, _key, _value)
