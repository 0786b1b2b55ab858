"""The documentation site's own code (``docs/_ext/grader_docs``) is imported as Sphinx imports it."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "docs" / "_ext"
if str(EXTENSION) not in sys.path:
    sys.path.insert(0, str(EXTENSION))
