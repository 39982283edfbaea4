"""The child process that reads a PDF's text (run by :mod:`vaultlens.chunking.attachments`, never imported).

It is a separate process so that a hostile or broken PDF (a decompression bomb, a parser crash, an
endless loop) ends this process, not the indexer or the server: its address space (``RLIMIT_AS``) and
CPU time (``RLIMIT_CPU``) are capped here before PDFium is loaded, and the parent kills it past its
time bound. It reads the PDF's bytes from standard input (the bytes the parent hashed), and writes one
JSON object to standard output: ``{"pages": [text of page 1, ...]}`` or ``{"error": reason}``. It
imports only the standard library and pypdfium2 (run with ``python -I``: no user site, no current
folder).
"""

import json
import sys


def _cap(megabytes: int, seconds: int) -> None:
    """The address space, and CPU seconds too: a child its parent no longer waits for (the indexer was
    killed) still ends."""
    try:
        import resource
    except ImportError:  # Windows: the parent's time bound alone applies
        return
    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))


def _reason(message: str) -> str:
    """PDFium's load error as a skip reason a user can act on."""
    if "password" in message.lower():
        return "encrypted PDF (it needs a password)"
    return f"malformed PDF ({message})"


def main() -> None:
    _cap(int(sys.argv[1]), int(sys.argv[2]))
    data = sys.stdin.buffer.read()
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        out: dict[str, object] = {"error": _reason(str(exc))}
    else:
        pages = []
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            pages.append(textpage.get_text_bounded())
            textpage.close()
            page.close()
        out = {"pages": pages}
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
