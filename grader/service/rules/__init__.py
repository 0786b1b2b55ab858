"""The course's rules, each computed in exactly one function that every door calls.

deadlines.effective_due   the due date of one student (the assignment's, plus their extension)
deadlines.admit           whether an attempt is accepted (hard deadline, attempt limit, rate limit)
counting.counting         which attempt's grade counts (latest or best)
penalty.late_penalty      the late penalty of an attempt, as nbgrader's late-submission plugin computes it
selection.select          what a regrade selects
"""
