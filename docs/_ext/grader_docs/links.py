"""The built site's link check, which fetches nothing.

Every ``href`` and ``src`` in every built page is read: a link inside the site must reach an existing
file and, with a ``#fragment``, an element with that id in it; a page may not load anything (a script,
a stylesheet, an image, a font, a frame) from outside the site, so it reads the same offline.
Links to other sites are only counted, never requested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "embed": "src", "video": "src"}
LOADING_RELS = {"stylesheet", "icon", "preload", "modulepreload", "manifest", "apple-touch-icon"}
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)|@import\s+['\"]([^'\"]+)['\"]")


class Page(HTMLParser):
    """One page's element ids and its links: (tag, attribute, URL, whether the browser loads it)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if "id" in values:
            self.ids.add(values["id"])
        if tag == "a" and "name" in values:
            self.ids.add(values["name"])
        if tag in LOADS and LOADS[tag] in values:
            self.links.append((tag, LOADS[tag], values[LOADS[tag]], True))
        elif tag == "a" and "href" in values:
            self.links.append((tag, "href", values["href"], False))
        elif tag == "link" and "href" in values:
            rels = set(values.get("rel", "").lower().split())
            self.links.append((tag, "href", values["href"], bool(rels & LOADING_RELS)))


def external(url: str) -> bool:
    return bool(urlsplit(url).scheme) or url.startswith("//")


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    external: set[str] = field(default_factory=set)
    checked: int = 0


def _read(page: Path) -> Page:
    parsed = Page()
    parsed.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parsed


def check(site: Path) -> Report:
    """Check every page and stylesheet under ``site`` (a built HTML folder)."""
    report = Report()
    pages = {path.resolve(): _read(path) for path in sorted(site.rglob("*.html"))}
    for path, page in pages.items():
        where = path.relative_to(site.resolve())
        for tag, attribute, url, loads in page.links:
            report.checked += 1
            if external(url):
                scheme = urlsplit(url).scheme
                if loads and scheme != "data":
                    report.problems.append(f"{where}: <{tag} {attribute}={url!r}> loads from outside the site")
                elif scheme in ("http", "https", "mailto", "") and not loads:
                    report.external.add(url)
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                report.problems.append(f"{where}: {url!r}: no such file in the site")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _read(target).ids
                if unquote(parts.fragment) not in ids:
                    report.problems.append(f"{where}: {url!r}: no element with id {parts.fragment!r} there")
    for sheet in sorted(site.rglob("*.css")):
        for match in CSS_URL.finditer(sheet.read_text(encoding="utf-8", errors="replace")):
            url = match.group(1) or match.group(2)
            report.checked += 1
            if external(url) and not url.startswith("data:"):
                report.problems.append(f"{sheet.relative_to(site)}: loads {url!r} from outside the site")
    return report
