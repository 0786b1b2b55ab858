"""The test LMS's Assignment and Grade Services (AGS): line items and the scores posted to them.

Mounted by ``platform.LMS.app``; every route checks the bearer token's scopes (``LMS.token_scopes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.routing import Route

if TYPE_CHECKING:
    from .platform import LMS


@dataclass
class AgsBook:
    """What the LMS's gradebook holds (to be filled in by the AGS work)."""


def ags_routes(lms: LMS) -> list[Route]:
    return []
