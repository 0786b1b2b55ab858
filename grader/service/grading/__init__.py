"""The grading of one submission, stage by stage: ``pipeline.STAGES`` names them in order and drives the run.

    intake     validate, store durably, create the submission and its job    (intake.accept)
    execution  nbgrader autograde, cells in a forked, limited kernel           (execution.run)
    scoring    per test cell: points and the student-safe message              (scoring.score)
    gradebook  the one writer of nbgrader's grade rows                          (gradebook.record)
    feedback   what the student sees, by policy                                (feedback.view)

Hooks (``pipeline.after_record``) run after a grade is recorded: exports, statistics and, later,
grade passback plug in there without editing the pipeline.
"""
