"""The nbgrader plug-ins the course configuration (``nbgrader_config.py``) loads.

Stock ``nbgrader autograde`` and the engine run them alike, so both give the same scores:

- ``mending.MendCells``: a submission's cells matched to the release's before anything else;
- ``integrity.RunEveryTestCell``: test cells always run, whatever their tags say;
- ``integrity.RestoreHiddenTests``: a cell exactly as released is not reported as changed (its hidden tests);
- ``isolation.PrivateExecute``: student code in a private, empty directory with a clean environment;
- ``output_limit.KeepStderr``: truncating output never changes a verdict;
- ``kernel_logging``: log records on stdout in every grading kernel, and the warning lines nbgrader ignores;
- ``late_policy.PercentPerDay``: the course's late penalty (set from the dashboard, or in the file);
- ``redaction.HideHiddenTests``: the feedback a TA hands out never shows hidden test source.

``release`` is no plug-in: the release notebook's nbgrader cells, read once while unchanged, for ``mending``
and the variant preprocessors.

The per-student variant preprocessors (``grader.variants``) and the exchange (``grader.exchange``) are
plug-ins too, in packages of their own. Nothing is imported here: ``kernel_logging`` runs inside student
kernels, which must not pay for the others.
"""
