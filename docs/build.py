"""Build the documentation site: ``python docs/build.py [OUTPUT]`` (default ``docs/_build/html``).

Sphinx with warnings as errors (``-W --keep-going -n``) and a fresh environment (``-E``: the
generated pages are written from the code every time), then the link check of
``grader_docs.links``, which fetches nothing: every link inside the site must reach a file and
anchor of it, and no page may load anything from outside the site. Exit status 0 only when both pass.
Open ``OUTPUT/index.html`` in a browser; the pages need no network.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))


def main(argv: list[str]) -> int:
    from grader_docs import links
    from sphinx.cmd.build import build_main

    out = Path(argv[0]) if argv else DOCS / "_build" / "html"
    if (out / ".buildinfo").exists():  # an earlier build of this site: start afresh, so nothing stale is left
        shutil.rmtree(out)
    status = build_main(["-W", "--keep-going", "-n", "-E", "-q", "-b", "html", str(DOCS), str(out)])
    if status:
        return status
    report = links.check(out)
    for problem in report.problems:
        print(f"docs: {problem}", file=sys.stderr)
    print(
        f"docs: {out / 'index.html'}: {report.checked} links and loads checked, "
        f"{len(report.problems)} broken; {len(report.external)} links to other sites (not fetched)"
    )
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
