"""The ways into the engine from outside the service: ``grader autograde`` (``batch``) and the serve's lender
(``lend``). Neither imports the other: they share ``grader.engine.loans``. The service and its workers call
``grader.engine.engine.Engine``.
"""
