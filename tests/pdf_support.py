"""Small PDFs made in the tests: real, valid files PDFium reads, with text on the pages asked for."""

from __future__ import annotations

import zlib


def pdf_bytes(pages: list[list[str]], *, padding: int = 0, encrypted: bool = False) -> bytes:
    """A PDF with one page per list of lines (Helvetica; a page without lines has no text layer).

    ``padding``: that many spaces appended to each page's content stream, Flate-compressed (a
    decompression bomb: a few hundred KB on disk, ``padding`` bytes once read). ``encrypted``: a
    Standard security handler whose user password is not empty, so the PDF cannot be opened.
    """
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(len(pages)))}] "
        f"/Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, lines in enumerate(pages):
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            f" /Contents {5 + 2 * i} 0 R >>".encode()
        )
        ops = ["BT /F1 12 Tf 14 TL 72 720 Td"]
        for line in lines:
            ops.append("(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*")
        stream = "\n".join([*ops, "ET"]).encode("latin-1")
        if padding:
            packed = zlib.compress(stream + b"\n" + b" " * padding, 9)
            objs.append(
                b"<< /Length %d /Filter /FlateDecode >>\nstream\n%b\nendstream" % (len(packed), packed)
            )
        else:
            objs.append(b"<< /Length %d >>\nstream\n%b\nendstream" % (len(stream), stream))
    trailer = b"/Size %d /Root 1 0 R" % (len(objs) + 1)
    if encrypted:
        objs.append(b"<< /Filter /Standard /V 1 /R 2 /O <%b> /U <%b> /P -44 >>" % (b"ab" * 32, b"cd" * 32))
        trailer = b"/Size %d /Root 1 0 R /Encrypt %d 0 R /ID [<%b> <%b>]" % (
            len(objs) + 1,
            len(objs),
            b"01" * 16,
            b"01" * 16,
        )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< %b >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, xref)
    return bytes(out)
