"""Students' Markdown with its LaTeX typeset as MathML: what a TA reads on the grading page.

``$...$`` and ``$$...$$`` become MathML (``latex2mathml``), which the browser lays out itself and screen readers
read as mathematics; no script is involved. A student's text is untrusted: any HTML they typed is shown as text
(mistune with ``escape``), and the MathML is rebuilt from an allow-list of presentation elements and attributes,
so nothing else (a ``<script>`` inside ``\\text{}``, an ``href`` from ``\\href``) reaches the page. A formula that
does not parse is shown as typed, in ``<code>``.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from typing import Any

import mistune
from latex2mathml.converter import convert
from markupsafe import Markup

ELEMENTS = frozenset(
    "math mrow mi mo mn ms mtext mspace mfrac msqrt mroot msub msup msubsup munder mover munderover mtable mtr "
    "mtd mstyle mpadded mphantom menclose merror semantics annotation".split()
)
ATTRIBUTES = frozenset(
    "display mathvariant stretchy fence separator lspace rspace columnalign columnspacing rowspacing width height "
    "depth linethickness accent accentunder movablelimits form minsize maxsize symmetric largeop notation "
    "scriptlevel displaystyle".split()
)
_NS = "{http://www.w3.org/1998/Math/MathML}"


def typeset(latex: str, block: bool) -> str:
    """``latex`` as safe MathML, or as typed in ``<code>`` when it does not parse."""
    try:
        tree = ET.fromstring(convert(latex, display="block" if block else "inline"))
    except Exception:  # latex2mathml's errors, or output that is not XML: show what the student typed
        return f"<code>{html.escape(latex)}</code>"
    return _clean(tree)


def _clean(element: ET.Element) -> str:
    tag = element.tag.removeprefix(_NS)
    inner = html.escape(element.text or "") + "".join(
        _clean(child) + html.escape(child.tail or "") for child in element
    )
    if tag not in ELEMENTS:
        return inner  # an element outside the allow-list keeps only its text, escaped
    attributes = "".join(
        f' {name}="{html.escape(value)}"' for name, value in element.attrib.items() if name in ATTRIBUTES
    )
    return f"<{tag}{attributes}>{inner}</{tag}>"


class _Renderer(mistune.HTMLRenderer):
    def inline_math(self, text: str) -> str:
        return typeset(text, block=False)

    def block_math(self, text: str) -> str:
        return typeset(text, block=True) + "\n"


_markdown: Any = mistune.create_markdown(escape=True, renderer=_Renderer(escape=True), plugins=["math"])


def answer_html(text: str) -> Markup:
    """A student's Markdown answer as HTML with typeset math; their HTML shown as text, never run."""
    return Markup(str(_markdown(text)))
