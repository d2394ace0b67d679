# about: live HTML/JavaScript for whoever opens the feedback or formgrader: <script>, <img onerror>, javascript: links, <svg onload>, <svg><script>, <iframe>, <object>, <meta refresh>, CSS url(), application/javascript, scripted SVG, Markdown, widget and unknown mimetypes, a "filenames" beacon, markdown cells with raw HTML and hostile attachments; each sets document.title, calls alert() and fetches http://127.0.0.1:47631/pwned (tests/test_inert_html.py watches it); ada's answers
# base: 00_orientation/ada
# expect: auto=8

# %% after: setup
# Every payload: retitle the page, alert(), fetch the marker URL (which payload ran: the query).
from IPython.display import HTML, display


def js(kind):
    return ("document.title='pwned';alert('pwned " + kind + "');"
            "fetch('http://127.0.0.1:47631/pwned?" + kind + "',{mode:'no-cors'}).catch(function(){})")


MARK = "http://127.0.0.1:47631/pwned?"
display(HTML("<script>" + js("script") + "</script>"))
display(HTML('<img src="x" onerror="' + js("img-onerror") + '">'))
display(HTML('<a href="javascript:' + js("js-link") + '">a javascript: link</a>'))
display(HTML('<svg width="10" height="10" onload="' + js("svg-onload") + '"><circle r="5"/></svg>'))
display(HTML("<svg><script>" + js("svg-script") + "</script></svg>"))
display(HTML('<iframe srcdoc="<script>parent.' + js("iframe-srcdoc").replace(";", ";parent.") + '</script>"></iframe>'))
display(HTML('<iframe src="' + MARK + 'iframe"></iframe><object data="' + MARK + 'object"></object>'
             '<embed src="' + MARK + 'embed">'))
display(HTML('<meta http-equiv="refresh" content="1;url=' + MARK + 'meta-refresh">'))
display(HTML('<img src="' + MARK + 'img-src"><div style="background:url(' + MARK + 'css-url)">css</div>'
             '<style>@import url(' + MARK + 'css-import);</style>'))
display(HTML("<script>" + js("isolated") + "</script>"), metadata={"text/html": {"isolated": True}})

# %% after: environment_report_tests
import base64, struct, zlib
from IPython.display import SVG, Image, Javascript, Markdown, display


def js(kind):
    return ("document.title='pwned';alert('pwned " + kind + "');"
            "fetch('http://127.0.0.1:47631/pwned?" + kind + "',{mode:'no-cors'}).catch(function(){})")


def png(w, h, pixel):
    raw = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(w)) for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


display(Javascript(js("application-javascript")))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" onload="' + js("svg-output")
            + '"><script>' + js("svg-output-script") + '</script><rect width="20" height="20"/></svg>'))
display(Markdown('Markdown output: <img src="x" onerror="' + js("markdown-output") + '"> and '
                 "[a link](javascript:" + js("markdown-output-link") + ")"))
display({"application/vnd.jupyter.widget-view+json": {"model_id": "0" * 32, "version_major": 2, "version_minor": 0},
         "text/plain": "a widget view"}, raw=True)
display({"text/vnd.mermaid": "graph TD; A-->B", "application/x-active": "<script>" + js("unknown") + "</script>",
         "application/pdf": "JVBERi0=", "text/plain": "unknown mimetypes"}, raw=True)
bars = [3, 7, 5, 9]  # the student's "plot": a small bar chart, as a notebook's image/png output
plot = png(80, 50, lambda x, y: (31, 119, 180) if 50 - y <= 5 * bars[min(x // 20, 3)] and x % 20 < 16
           else (255, 255, 255))
display(Image(data=plot))
display(Image(data=plot), metadata={"filenames": {"image/png": "http://127.0.0.1:47631/pwned?filenames"}})
display(HTML('<table class="student-table"><thead><tr><th>x</th><th>x**3</th></tr></thead>'
             "<tbody><tr><td>1</td><td>1</td></tr><tr><td>2</td><td>8</td></tr></tbody></table>"
             '<img src="data:image/png;base64,' + base64.b64encode(plot).decode() + '" alt="inline plot">'))

# %% markdown-after: cube_sum_grad_tests
### My notes on cube_sum_grad

The gradient of $\sum_i x_i^3$ is $3x^2$, and `x < y` in code stays as written:

| x | x**3 |
|---|------|
| 1 | 1 |
| 2 | 8 |

<script>document.title='pwned';alert('pwned md-script');fetch('http://127.0.0.1:47631/pwned?md-script',{mode:'no-cors'})</script>
<img src="x" onerror="document.title='pwned';alert('pwned md-img-onerror');fetch('http://127.0.0.1:47631/pwned?md-img-onerror',{mode:'no-cors'})">
<svg width="10" height="10" onload="document.title='pwned';alert('pwned md-svg-onload')"><circle r="5"/></svg>
<svg><script>document.title='pwned';alert('pwned md-svg-script')</script></svg>
<iframe srcdoc="<script>parent.document.title='pwned';parent.alert('pwned md-iframe')</script>"></iframe>
<object data="http://127.0.0.1:47631/pwned?md-object"></object>
<a href="javascript:document.title='pwned';alert('pwned md-html-link')">an HTML javascript: link</a>

# %% markdown-after: grad_fn_chain_tests
Markdown-only tricks: a [javascript: link](javascript:alert('pwned md-link')), a remote image
![beacon](http://127.0.0.1:47631/pwned?md-remote-image), an SVG attachment with a script
![svg](attachment:evil.svg), an HTML attachment [page](attachment:page.html) and a PNG one ![dot](attachment:dot.png).

# %% attachments:
{"evil.svg": {"image/svg+xml": "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIyMCIgaGVpZ2h0PSIyMCIgb25sb2FkPSJkb2N1bWVudC50aXRsZT0ncHduZWQnO2FsZXJ0KCdwd25lZCBhdHRhY2htZW50Jyk7ZmV0Y2goJ2h0dHA6Ly8xMjcuMC4wLjE6NDc2MzEvcHduZWQ/YXR0YWNobWVudC1zdmcnLHttb2RlOiduby1jb3JzJ30pIj48c2NyaXB0PmRvY3VtZW50LnRpdGxlPSdwd25lZCc7YWxlcnQoJ3B3bmVkIGF0dGFjaG1lbnQnKTtmZXRjaCgnaHR0cDovLzEyNy4wLjAuMTo0NzYzMS9wd25lZD9hdHRhY2htZW50LXN2Zycse21vZGU6J25vLWNvcnMnfSk8L3NjcmlwdD48cmVjdCB3aWR0aD0iMjAiIGhlaWdodD0iMjAiLz48L3N2Zz4="},
 "page.html": {"text/html": "PHNjcmlwdD5kb2N1bWVudC50aXRsZT0ncHduZWQnO2FsZXJ0KCdwd25lZCBhdHRhY2htZW50IGh0bWwnKTwvc2NyaXB0Pg=="},
 "dot.png": {"image/png": "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGM4ISeHFTEMLQkAkL9BAbKfPiIAAAAASUVORK5CYII="}}
