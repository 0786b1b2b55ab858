"""The ``grader`` verbs, one module per reader: ``course`` (instructors), ``service`` (whoever runs the service),
``staff`` (TAs and admins), ``students``. ``grader.cli`` builds the parser and dispatches to them; the verbs of
``validate``, ``similarity``, ``variants`` and ``lti`` live in their own packages.
"""
