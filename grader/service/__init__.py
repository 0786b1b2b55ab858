"""The autograder service.

A submission flows through these stages, one module each; ``pipeline.STAGES``
writes the order down once:

    intake -> queue -> execution -> scoring -> gradebook -> feedback / export

``app`` (HTTP) and ``grader.cli`` are thin edges that parse input and call one
function of a stage.
"""
