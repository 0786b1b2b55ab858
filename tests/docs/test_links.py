"""The site's link check (``grader_docs.links``) finds what would break a page offline, and fetches nothing."""

from __future__ import annotations

from pathlib import Path

from grader_docs import links


def site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, html in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<html><head></head><body>{html}</body></html>")
    return tmp_path


def test_a_good_site_passes_and_links_elsewhere_are_only_counted(tmp_path: Path) -> None:
    root = site(
        tmp_path,
        {
            "index.html": '<a href="a/b.html#here">b</a> <a href="#top">top</a> <p id="top"></p>'
            '<a href="https://nbgrader.readthedocs.io/">nbgrader</a> <img src="i.png">'
            '<link rel="next" href="a/b.html"><script src="data:text/javascript,"></script>',
            "a/b.html": '<h2 id="here">Here</h2><a href="../index.html">home</a><a href="./">this folder</a>',
            "a/index.html": "",
        },
    )
    (root / "i.png").write_bytes(b"")
    report = links.check(root)
    assert report.problems == []
    assert report.external == {"https://nbgrader.readthedocs.io/"}
    assert report.checked == 8


def test_broken_links_missing_anchors_and_outside_loads_are_problems(tmp_path: Path) -> None:
    root = site(
        tmp_path,
        {
            "index.html": '<a href="gone.html">x</a> <a href="b.html#nowhere">y</a> <a href="#missing">z</a>'
            '<script src="https://cdn.example.org/x.js"></script>'
            '<link rel="stylesheet" href="//fonts.example.org/css">'
            '<img src="http://example.org/logo.png">',
            "b.html": '<p id="somewhere"></p>',
        },
    )
    (root / "style.css").write_text("@import 'https://fonts.example.org/f.css'; a { background: url(data:x) }")
    problems = links.check(root).problems
    assert len(problems) == 7, problems
    assert any("gone.html" in p and "no such file" in p for p in problems)
    assert any("nowhere" in p for p in problems) and any("missing" in p for p in problems)
    assert sum("outside the site" in p for p in problems) == 4
