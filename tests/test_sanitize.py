"""The sanitizer of instructor/engine/sanitize.py, without a browser (tests/test_inert_html.py has one).

Every payload kind of the hostile sample ``html_payloads`` is removed from HTML, markdown and outputs;
ordinary content (markdown text, tables, plots, the course's own markdown) stays as it was; the
preprocessor is wired where the brief says, and nbconvert's exporter configured by
``nbgrader_config.py`` (what formgrader uses) renders a hostile notebook without live HTML.
"""
from __future__ import annotations

import base64
import copy
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from bleach._vendor import html5lib
from instructor.authoring import samples
from instructor.engine.sanitize import InertNotebook, clean_html, inert_markdown, is_inert, render_markdown

REPO = Path(__file__).resolve().parents[1]
JS = "document.title='pwned';alert('pwned');fetch('http://127.0.0.1:47631/pwned',{mode:'no-cors'})"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGM4ISeHFTEMLQkAkL9BAbKfPiIAAAAASUVORK5CYII=")
PAYLOADS = {
    "script": f"<script>{JS}</script>",
    "img onerror": f'<img src="x" onerror="{JS}">',
    "javascript: link": f'<a href="javascript:{JS}">x</a>',
    "javascript: link, entity and tab": '<a href="jav&#x61;scr\tipt:alert(1)">x</a>',
    "svg onload": f'<svg onload="{JS}"><circle r="5"/></svg>',
    "svg script": f"<svg><script>{JS}</script></svg>",
    "iframe srcdoc": f'<iframe srcdoc="<script>parent.{JS}</script>"></iframe>',
    "iframe src": '<iframe src="http://127.0.0.1:47631/pwned"></iframe>',
    "object": '<object data="http://127.0.0.1:47631/pwned"></object>',
    "embed": '<embed src="http://127.0.0.1:47631/pwned">',
    "meta refresh": '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:47631/pwned">',
    "remote image": '<img src="http://127.0.0.1:47631/pwned">',
    "css url": '<div style="background:url(http://127.0.0.1:47631/pwned)">x</div>',
    "style import": "<style>@import url(http://127.0.0.1:47631/pwned);</style>",
    "form action": '<form action="javascript:alert(1)"><button>go</button></form>',
    "data html link": '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    "math mxss": '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
    "noscript mxss": '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "comment breakout": '<!--><img src=x onerror=alert(1)>-->',
}
LIVE = re.compile(r"pwned|alert", re.I)


def _live_elements(html: str) -> list[str]:
    """What a browser would run or load in ``html``: script/iframe/object/embed/meta/style/svg elements,
    on* attributes, javascript: URLs, a src that is not data:image."""
    root = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
    found = []
    for el in root.iter():
        if not isinstance(el.tag, str) or el is root:
            continue
        tag = el.tag.split("}")[-1]
        if tag in ("script", "iframe", "object", "embed", "meta", "style", "svg", "math", "form", "base", "link"):
            found.append(tag)
        for name, value in el.attrib.items():
            name = str(name).lower()
            v = re.sub(r"[\x00-\x20]", "", value).lower()
            if name.startswith("on") or "javascript:" in v or (name == "style" and "url(" in v) or (
                    name == "href" and v.startswith("data:")) or (
                    name in ("src", "data", "srcdoc") and not v.startswith("data:image/")):
                found.append(f"{tag}[{name}]")
    return found


@pytest.mark.parametrize("kind", PAYLOADS)
def test_clean_html_removes_every_payload_kind(kind):
    html = PAYLOADS[kind] + "<p>kept</p>"
    # html5lib parses <noscript> as a browser with scripting off would: the one payload it cannot see
    assert _live_elements(html) or kind == "noscript mxss", "the payload is live to begin with"
    assert not is_inert(html)
    cleaned = clean_html(html)
    assert _live_elements(cleaned) == [], cleaned
    assert is_inert(cleaned), cleaned
    assert "<p>kept</p>" in cleaned or "mxss" in kind  # an unclosed <style> swallows the rest


def test_clean_html_keeps_tables_images_and_formatting():
    pandas_like = ('<div><style scoped>.dataframe tbody tr th {vertical-align: top;}</style>'
                   '<table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th><th>a</th></tr>'
                   '</thead><tbody><tr><th>0</th><td>1</td></tr></tbody></table></div>')
    cleaned = clean_html(pandas_like)
    assert '<table border="1" class="dataframe">' in cleaned and "<th>a</th>" in cleaned and "<td>1</td>" in cleaned
    assert "vertical-align" not in cleaned  # the <style> went, with its text
    plot = f'<img src="data:image/png;base64,{PNG}" alt="a plot" width="80">'
    assert clean_html(plot) == plot and is_inert(plot)
    fmt = ('<h2 id="Result">Result</h2><p><b>bold</b> <i>it</i> <code>x &lt; y</code><br>'
           '<a href="https://pytorch.org">docs</a> <a href="#Result">up</a></p><ul><li>one</li></ul><pre>x = 1</pre>'
           '<td style="text-align:right">1</td>')
    for piece in ("<b>bold</b>", "<i>it</i>", "<code>x &lt; y</code>", '<a href="https://pytorch.org">docs</a>',
                  '<a href="#Result">up</a>', '<h2 id="Result">', "<li>one</li>", "<pre>x = 1</pre>"):
        assert piece in clean_html(fmt), piece
    assert is_inert(clean_html(fmt))


def test_markdown_that_renders_inert_is_left_byte_for_byte():
    text = ("# Notes\n\nThe gradient of $\\sum_i x_i^3$ is $3x^2$; `a < b` in code; a <br> and x<sub>2</sub>.\n\n"
            "| x | y |\n|:-:|--:|\n| 1 | 8 |\n\n- [x] done\n\n```python\nif a < b: print('<script>')\n```\n"
            "[docs](https://pytorch.org) and ![plot](attachment:plot.png)\n")
    assert inert_markdown(text, {"plot.png": {"image/png": PNG}}) == text


def test_the_course_markdown_is_untouched():
    n = 0
    for path in sorted(REPO.glob("source/*/*.ipynb")) + sorted(REPO.glob("release/*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                n += 1
                assert inert_markdown(cell.source, cell.get("attachments")) == cell.source, (path.name, cell.source[:80])
    assert n > 50


def test_raw_html_in_markdown_is_escaped_and_the_rest_stays_markdown():
    text = ("### My notes\n\n| x | x**3 |\n|---|---|\n| 2 | 8 |\n\n"
            + "\n".join(PAYLOADS[k] for k in ("script", "img onerror", "svg onload", "svg script", "iframe srcdoc",
                                               "object", "javascript: link", "meta refresh", "style import"))
            + "\n\nand `<b>in code</b>` and $a<b$\n")
    out = inert_markdown(text)
    html = render_markdown(out)
    assert is_inert(html) and _live_elements(html) == [], html
    assert "<table>" in html and "<h3" in html  # still markdown
    assert "&lt;script&gt;document.title" in html  # the payload shows as text
    assert "`<b>in code</b>`" in out and "$a<b$" in out  # code and math as written


@pytest.mark.parametrize("text", [
    "a [link](javascript:alert('pwned')) in markdown syntax",
    "a remote image ![beacon](http://127.0.0.1:47631/pwned)",
    "an attachment that is not there ![x](attachment:missing.png)",
    "an autolink <javascript:alert(1)>",
])
def test_markdown_syntax_that_cannot_be_escaped_is_shown_as_text(text):
    assert not is_inert(render_markdown(text)) if "missing" not in text else True
    out = inert_markdown(text)
    html = render_markdown(out)
    assert is_inert(html) and _live_elements(html) == []
    if "autolink" in text:  # an autolink is raw-HTML syntax: escaped, like a tag
        assert out == "an autolink &lt;javascript:alert(1)>"
    else:
        assert "shown as text by the grader" in out and "<pre><code>" in html
    assert inert_markdown(out) == out  # idempotent


def _hostile_notebook():
    svg_script = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{JS}"><script>{JS}</script><rect/></svg>'
    svg_plain = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
                 '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg" '
                 'xmlns:xlink="http://www.w3.org/1999/xlink"><defs><path id="m0" d="M0 0"/></defs>'
                 '<use xlink:href="#m0" style="fill: url(#grad)"/></svg>')
    outputs = [
        new_output("display_data", {"text/html": PAYLOADS["script"] + "<table><tr><td>1</td></tr></table>",
                                    "text/plain": "<HTML>"}),
        new_output("display_data", {"application/javascript": JS, "text/plain": "<Javascript>"}),
        new_output("display_data", {"application/javascript": JS}),
        new_output("display_data", {"image/svg+xml": svg_script, "text/plain": "<SVG>"}),
        new_output("display_data", {"image/svg+xml": svg_plain, "text/plain": "<SVG>"}),
        new_output("display_data", {"text/markdown": PAYLOADS["img onerror"] + " *kept*", "text/plain": "<Markdown>"}),
        new_output("display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "a" * 32,
                                    "version_major": 2, "version_minor": 0}, "text/plain": "a widget"}),
        new_output("display_data", {"application/x-whatever": "<script>alert(1)</script>", "text/vnd.mermaid": "A-->B"}),
        new_output("display_data", {"image/png": PNG, "text/plain": "<Figure>"},
                   metadata={"image/png": {"width": 80}, "filenames": {"image/png": "http://127.0.0.1:47631/pwned"}}),
        new_output("execute_result", {"text/plain": "42"}, execution_count=1),
        new_output("stream", name="stdout", text="<script>printed text is escaped by the template</script>\n"),
        new_output("error", ename="ValueError", evalue="bad", traceback=["ValueError: bad"]),
    ]
    md = new_markdown_cell("Notes <img src=x onerror=alert(1)> ![dot](attachment:dot.png)")
    md.attachments = {"dot.png": {"image/png": PNG}, "evil.svg": {"image/svg+xml": base64.b64encode(
        svg_script.encode()).decode()}, "page.html": {"text/html": "PHNjcmlwdD4="}}
    widgets = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2, "version_minor": 0}}
    raw = nbformat.v4.new_raw_cell(PAYLOADS["script"] + "raw text", metadata={"raw_mimetype": "text/html"})
    return new_notebook(cells=[md, new_code_cell("display(...)", outputs=outputs), raw], metadata={"widgets": widgets})


def test_the_preprocessor_makes_a_notebook_inert():
    nb, _ = InertNotebook().preprocess(_hostile_notebook(), {})
    md, code, raw = nb.cells
    assert md.attachments == {"dot.png": {"image/png": PNG}}  # only the plain image
    assert "&lt;img src=x onerror" in md.source and "![dot](attachment:dot.png)" in md.source
    assert is_inert(render_markdown(md.source, md.attachments))
    o = code.outputs
    assert "<script>" not in o[0].data["text/html"] and "<td>1</td>" in o[0].data["text/html"]
    assert o[1].data == {"text/plain": "<Javascript>"}
    assert o[2].data == {"text/plain": "[output removed by the grader: application/javascript]"}
    assert o[3].data == {"text/plain": "<SVG>"}  # the scripted SVG went
    assert "image/svg+xml" in o[4].data  # a matplotlib-like SVG stays
    assert "&lt;img" in o[5].data["text/markdown"] and is_inert(render_markdown(o[5].data["text/markdown"]))
    assert o[6].data == {"text/plain": "a widget"}
    assert o[7].data == {"text/plain": "[output removed by the grader: application/x-whatever, text/vnd.mermaid]"}
    assert o[8].data["image/png"] == PNG and o[8].metadata == {"image/png": {"width": 80}}  # no "filenames"
    assert o[9].data == {"text/plain": "42"} and o[9].execution_count == 1
    assert [x.output_type for x in o[10:]] == ["stream", "error"]
    assert "<script>" not in raw.source and "raw text" in raw.source
    assert "widgets" not in nb.metadata  # no saved widget state for a widget manager to render
    nbformat.validate(nb)
    again, _ = InertNotebook().preprocess(copy.deepcopy(nb), {})
    assert again == nb  # idempotent: a second pass (feedback, formgrader) changes nothing


def test_wired_into_grading_feedback_and_formgrader(tmp_path):
    from nbgrader.preprocessors import SaveAutoGrades

    from instructor.batch import course
    from instructor.engine import pipeline

    cfg = pipeline.sandboxed_config(tmp_path)
    assert InertNotebook in cfg.Autograde.sanitize_preprocessors
    steps = list(cfg.Autograde.autograde_preprocessors)
    assert steps[0].__name__ != "InertNotebook" and steps.index(InertNotebook) < steps.index(SaveAutoGrades)
    assert InertNotebook in cfg.GenerateFeedback.preprocessors
    assert cfg.HTMLExporter.sanitize_html is True and cfg.HTMLExporter.filters["clean_html"] is clean_html
    from nbconvert.exporters import HTMLExporter
    from nbgrader.preprocessors import AssignLatePenalties

    # the feedback exporter is nbconvert's HTMLExporter (so the HTMLExporter settings above apply to it)
    assert issubclass(cfg.GenerateFeedback.exporter_class, HTMLExporter)
    # the recorder writes the worker's autograded notebook (made inert by the chain above) and only
    # writes the gradebook: no step of its own that could change a cell
    replay = pipeline.replay_config(tmp_path)
    assert [p.__name__ for p in replay.Autograde.sanitize_preprocessors] == ["ReplayExecution"]
    assert list(replay.Autograde.autograde_preprocessors) == [SaveAutoGrades, AssignLatePenalties]
    # nbgrader_config.py: every HTMLExporter nbgrader makes from it (formgrader's) is configured too
    plain = course.load_config(tmp_path)
    assert plain.HTMLExporter.preprocessors == ["instructor.engine.sanitize.InertNotebook"]
    assert plain.HTMLExporter.sanitize_html is True


def test_formgraders_exporter_renders_a_hostile_notebook_inert(tmp_path):
    """formgrader's exporter as nbgrader builds it (FormgradeExtension: HTMLExporter(config) with the
    formgrade template), configured by nbgrader_config.py alone: a notebook that never went through
    the preprocessor comes out without live HTML."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    from instructor.batch import course

    cfg = course.load_config(tmp_path)
    cfg.HTMLExporter.template_name = "formgrade"
    cfg.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    nb = _hostile_notebook()
    sample = samples.parse_sample(REPO / "tests" / "hostile" / "00_orientation" / "html_payloads.py")
    _, built = samples.build_notebook(sample)
    nb.cells += [c for c in built.cells if c.cell_type == "markdown" and not c.metadata.get("nbgrader")]
    resources = dict(assignment_id="a", notebook_id="n", submission_id="s", index=0, total=1, base_url="",
                     student="st", last_name="", first_name="", notebook_path="x.ipynb")
    page, _ = HTMLExporter(config=cfg).from_notebook_node(nb, resources=resources)
    body = page[page.index('id="notebook-container"'):]  # the notebook (formgrader's own nav comes before)
    own_scripts = [s for s in re.findall(r"<script[^>]*>(.*?)</script>", body, re.S) if LIVE.search(s)]
    assert own_scripts == []
    live = [x for x in _live_elements(body) if x not in ("script",)]  # formgrader's own <script> tags
    assert live == [], live
    assert "<td>1</td>" in body and f"data:image/png;base64,{PNG}" in body
    # the control: the same exporter without the course's settings renders the payloads live
    bare_exporter = HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])
    bare, _ = bare_exporter.from_notebook_node(_hostile_notebook(), resources=resources)
    live = _live_elements(bare[bare.index('id="notebook-container"'):])
    assert "img[onerror]" in live and "script" in live, live


def test_the_hostile_sample_builds_with_its_markdown_cells_and_attachments():
    sample = samples.parse_sample(REPO / "tests" / "hostile" / "00_orientation" / "html_payloads.py")
    assert sample.expect_auto == 8 and sample.base == "00_orientation/ada"
    _, nb = samples.build_notebook(sample)
    nbformat.validate(nb)
    own_md = [c for c in nb.cells if c.cell_type == "markdown" and ("<script>" in c.source or "attachment:" in c.source)]
    assert len(own_md) == 2 and set(own_md[1].attachments) == {"evil.svg", "page.html", "dot.png"}
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader"))
    for needle in ("Javascript(", "SVG(", "Markdown(", "HTML(", "widget-view", "http://127.0.0.1:47631/pwned"):
        assert needle in code


def test_the_feedback_highlighter_keeps_nbconvert_results_exactly():
    """The feedback pages' highlighter keeps each result for the process (most input cells are the
    course's own, the same on every page): the same html as nbconvert's, a second call a hit, and the
    key holds all the result depends on (the language, a cell's magics language, the formatter's options)."""
    from nbconvert.filters.highlight import Highlight2HTML

    from instructor.engine.feedback import cached_highlighter

    cached = cached_highlighter()(pygments_lexer="ipython3")
    plain = Highlight2HTML(pygments_lexer="ipython3")
    cases = [("x = torch.ones(3)\nx.add_(1)  # in place", None, None),
             ("<script>alert(1)</script>", None, None),
             ("", None, None),
             ("SELECT 1", "ipython3", {"magics_language": "sql"}),
             ("SELECT 1", "ipython3", None),
             ("def f():\n    return 1", "python", None)]
    for source, language, metadata in cases:
        first = cached(source, language, metadata)
        assert first == plain(source, language, metadata), (source, language, metadata)
        assert cached(source, language, metadata) is first          # kept: the same object back
    assert cached("SELECT 1", "ipython3", {"magics_language": "sql"}) != cached("SELECT 1", "ipython3", None)
    other = cached_highlighter()(pygments_lexer="ipython3", extra_formatter_options={"linenos": "table"})
    assert other("x = 1") == Highlight2HTML(pygments_lexer="ipython3", extra_formatter_options={"linenos": "table"})("x = 1")
    assert other("x = 1") != cached("x = 1")
    long = "x = 1\n" * 5000                                        # a student's long cell: not kept
    assert cached(long) == plain(long) and cached(long) is not cached(long)
