"""The autograder service: one package per stage of the data flow.

    grading/    the stages of one job, in the order ``grading.pipeline.STAGES`` writes once:
                intake -> execution -> scoring -> gradebook -> record, then ``after_record`` hooks;
                feedback is what a student may see of the result
    rules/      the course's rules, one function each: due dates, which attempt counts, regrades
    queue/      who grades which job: local threads or a broker and workers (one ``Queue`` interface)
    records/    what is kept: the store, its tables and migrations, the notebooks' bytes
    dashboard/  what staff read: statistics, charts, regrade dry runs, exports
    marking/    written answers graded by a person, by question and rubric, into nbgrader's gradebook
    web/        the HTTP edge (API, pages, exchange); HTTP status codes live only there

``config`` (settings, checked at start-up), ``hooks`` (the ``after_record`` seam) and ``serve``
compose them; ``grader.cli`` is the other thin edge.  ``tests/test_layering.py`` keeps the
imports flowing this way only.
"""
