"""What the service keeps: its tables, their migrations, the submitted notebooks' bytes.

``store.Store`` is the one access path; ``schema`` creates and upgrades (only ``grader db upgrade``
and ``grader serve``'s first run on an empty database do).
"""
