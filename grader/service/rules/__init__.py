"""The course's rules, each computed in exactly one function that every door calls.

    deadlines.effective_due   the due date of one student: the assignment's, moved by their extension
    deadlines.due_of          the same, read from nbgrader's gradebook (feedback, listing, intake)
    deadlines.is_late         whether an attempt is late (intake, pages, statistics)
    deadlines.admit           whether an attempt is accepted (hard deadline, attempt limit, rate limit)
    counting.counting         which attempt's grade counts (latest or best)
    counting.final_score      an attempt's final score: raw less its late penalty
    regrading.select          what a regrade selects

The late penalty itself is nbgrader's late-submission plugin, ``grader.plugins.late_policy.PercentPerDay``
(configured in ``nbgrader_config.py`` and ``late_policy.json``), so that stock ``nbgrader autograde``
and the engine compute it in the same single function; the service records what it computed.
"""
