"""The fast grading engine: nbgrader's autograde pipeline with kernels forked from a warm zygote.

The tree follows the trust boundary. Student code runs only in ``inside``; everything else is the
grader's, and reads what a kernel says as untrusted data (``protocol``: JSON, bounded, never pickle).

inside/        runs in a forked student kernel, beside the student's code: a mistake here is a security hole
               sandbox (the OS sandbox a child enters), audit (the audit hook), guard/watched/versions (what the
               tests rely on stays as built), shell/recorder/precompiled (IPython's shell, outputs as nbclient's)
forking/       the zygote process: imports torch once, rehearses the course, forks one child per notebook;
               it never runs student code itself (zygote, rehearsal, process_state)
kernels/       the grader's side of kernels, in the parent: start the zygote and fork from it (kernel), run a
               notebook's cells with nbclient's timeouts (forked), fork early (early), clear leftovers
bookkeeping/   nbgrader in the parent: its Autograde converter in-process (autograde, onepass), Execute
               replaced by ForkExecute (preprocessor), the gradebook in bulk (bulk, rows), one transaction per job
               (inprocess, shared_session, jobsession), whose fault a failure was (faults, undo, unreadable),
               submission times (stamps)
engine.py      ``Engine``: a zygote plus the course's configuration, the object the service and its workers call
loans.py       the wire of lending a warm engine: both doors below speak it
protocol.py    length-prefixed JSON between the grader and a forked kernel
limits.py      a notebook's limits (``nbgrader_config.py``'s ``GraderService`` settings)
doors/         the ways in, none importing another: ``grader autograde`` (batch), the serve's lender (lend)

The rules are data in ``tests/test_layering.py`` (``ENGINE_MAY_IMPORT``): ``inside`` imports nothing of the
engine outside itself; ``forking`` only ``inside``, ``protocol`` and ``limits``; nothing below ``doors`` imports a
door, and no door another.
"""
