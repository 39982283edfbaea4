"""Code blocks highlighted on the server with Pygments (already installed: rich depends on it), as
``<span class="hl-…">`` tokens the page's stylesheet colours: no script, no ``style=`` (the page's
CSP allows neither), nothing fetched. A fence without a language, or one Pygments does not know, or a
block too long to be worth it stays plain text."""

from __future__ import annotations

MAX_CHARS = 100_000  # a longer block is shown plain: highlighting it would hold up the note view


def highlight(code: str, lang: str, _attrs: str) -> str:
    """markdown-it's ``highlight`` option: the block's HTML inside ``<pre><code>``, or "" to leave it
    to markdown-it's escaping."""
    if not lang or len(code) > MAX_CHARS:
        return ""
    from pygments import highlight as render
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang.split()[0].lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    html: str = render(code, lexer, HtmlFormatter(nowrap=True, classprefix="hl-"))
    return html
