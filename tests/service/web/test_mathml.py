"""A student's Markdown answer with LaTeX, as the grading page shows it: MathML from an allow-list, text escaped."""

from __future__ import annotations

from grader.service.web.mathml import answer_html, typeset


def test_inline_and_display_math_become_mathml_and_markdown_stays_markdown() -> None:
    shown = str(answer_html(r"It is **four** times larger: $2x$ against $$\frac{x}{2}$$"))
    assert "<strong>four</strong>" in shown
    assert '<math display="inline"><mrow><mn>2</mn><mi>x</mi></mrow></math>' in shown
    assert (
        '<math display="block"><mrow><mfrac><mrow><mi>x</mi></mrow><mrow><mn>2</mn></mrow></mfrac></mrow></math>'
        in (shown)
    )


def test_html_typed_anywhere_is_text_and_nothing_outside_the_allow_list_reaches_the_page() -> None:
    shown = str(
        answer_html(r"<img src=x onerror=alert(1)> $\text{<script>alert(1)</script>}$ $\href{javascript:x}{y}$")
    )
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown
    assert "<script" not in shown and "href" not in shown and "javascript" not in shown
    assert "<mtext>alert(1)</mtext>" in shown  # the text of a dropped element stays, escaped


def test_a_formula_that_does_not_parse_is_shown_as_typed() -> None:
    assert typeset(r"\frac{", block=False) == r"<code>\frac{</code>"
    assert typeset("a<b", block=False) == '<math display="inline"><mrow><mi>a</mi><mo>&lt;</mo><mi>b</mi></mrow></math>'
