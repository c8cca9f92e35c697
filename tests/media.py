"""Test media built byte by byte (no imaging library): image headers of a chosen size, PDFs, WAV clips.

The images carry only what a reader needs for their size (PNG's IHDR, JPEG's segments up to its frame
header, GIF's screen descriptor, WEBP's VP8/VP8L/VP8X headers): their pixels are never decoded by the
code under test nor by litellm, the oracle.
"""

from __future__ import annotations

import base64
import struct
import zlib

IMAGE_FORMATS = ("png", "jpeg", "gif", "webp_vp8", "webp_vp8l", "webp_vp8x")
MAX_SIDE = {"png": 20_000, "jpeg": 20_000, "gif": 20_000, "webp_vp8": 16_383, "webp_vp8l": 16_384, "webp_vp8x": 20_000}
MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif"}


def image_bytes(fmt: str, width: int, height: int, *, exif_bytes: int = 0) -> bytes:
    """An image file of ``width`` x ``height`` in ``fmt`` (``exif_bytes`` of APP1 padding before a JPEG's frame)."""
    return {"png": _png, "jpeg": _jpeg, "gif": _gif}.get(fmt, _webp)(fmt, width, height, exif_bytes)


def data_url(fmt: str, width: int, height: int, **kw: int) -> str:
    media_type = MEDIA_TYPES.get(fmt, "image/webp")
    return f"data:{media_type};base64," + base64.b64encode(image_bytes(fmt, width, height, **kw)).decode()


def image_part(url: str, detail: str | None = None) -> dict:
    image = {"url": url} if detail is None else {"url": url, "detail": detail}
    return {"type": "image_url", "image_url": image}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(_fmt: str, width: int, height: int, _exif: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0")) + _chunk(b"IEND", b"")


def _segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def _jpeg(_fmt: str, width: int, height: int, exif: int) -> bytes:
    out = b"\xff\xd8" + _segment(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0")
    while exif > 0:  # APP1 segments (EXIF and thumbnails) may sit before the frame header
        size = min(exif, 65_000)
        out += _segment(0xE1, b"Exif\0\0" + b"\x11" * size)
        exif -= size
    out += _segment(0xDB, b"\0" + bytes(range(64)))  # a quantisation table
    out += _segment(0xC4, b"\0" + bytes(16) + b"")  # a Huffman table (C4 is not a frame)
    out += _segment(0xC0, struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\0\x02\x11\x01\x03\x11\x01")
    return out + _segment(0xDA, b"\x03\x01\0\x02\x11\x03\x11\0\x3f\0") + b"\0\0" + b"\xff\xd9"


def _gif(_fmt: str, width: int, height: int, _exif: int) -> bytes:
    return b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0) + b";"


def _webp(fmt: str, width: int, height: int, _exif: int) -> bytes:
    if fmt == "webp_vp8":
        body = b"VP8 " + struct.pack("<I", 10) + b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height)
    elif fmt == "webp_vp8l":
        bits = (width - 1) | ((height - 1) << 14)
        body = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits) + b"\0"
    else:
        dims = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
        body = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + dims
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def pdf_bytes(pages: list[str], *, compress: bool = True) -> bytes:
    """A PDF whose pages show ``pages`` (one line of text each), with a correct cross-reference table."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    font = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for text in pages:
        stream = f"BT /F1 10 Tf 20 700 Td ({text}) Tj ET".encode("latin-1")
        filt = b""
        if compress:
            stream, filt = zlib.compress(stream), b" /Filter /FlateDecode"
        objects.append(b"<< /Length %d%s >>\nstream\n" % (len(stream), filt) + stream + b"\nendstream")
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content, font)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % len(pages)
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


ENCODERS = {
    "FlateDecode": zlib.compress,
    "ASCIIHexDecode": lambda data: data.hex().encode() + b">",
    "ASCII85Decode": lambda data: base64.a85encode(data, adobe=True)[2:],
}
"""PDF filters, written out here (ISO 32000-1, 7.4): each encodes what the filter decodes."""


def pdf15_bytes(pages: list[str], *, filters: tuple[str, ...] = ("ASCIIHexDecode", "FlateDecode")) -> bytes:
    """A PDF 1.5 whose catalog, page tree and page objects sit in an object stream, found through a
    cross-reference stream: the layout a PDF 1.5 writer saves to. The object stream and each page's content
    stream are encoded with the filter chain ``filters`` (decoded in that order, so encoded in reverse)."""

    def encoded(data: bytes) -> bytes:
        for name in reversed(filters):
            data = ENCODERS[name](data)
        return data

    chain = b"[" + b" ".join(b"/" + f.encode() for f in filters) + b"]"
    n = len(pages)
    # objects 1..3: catalog, page tree, font; 4..3+n: pages (all in the object stream); then contents
    first_content = 4 + n
    kids = b" ".join(b"%d 0 R" % (4 + i) for i in range(n))
    packed = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % n,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ] + [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>" % (first_content + i)
        for i in range(n)
    ]
    header, body = [], b""
    for number, obj in enumerate(packed, 1):
        header.append(b"%d %d" % (number, len(body)))
        body += obj + b"\n"
    head = b" ".join(header) + b"\n"
    object_stream = encoded(head + body)
    objstm = first_content + n
    out, offsets = b"%PDF-1.5\n", {}
    for i, text in enumerate(pages):
        content = encoded(f"BT /F1 10 Tf 20 700 Td ({text}) Tj ET".encode("latin-1"))
        offsets[first_content + i] = len(out)
        out += b"%d 0 obj\n<< /Length %d /Filter %s >>\nstream\n" % (first_content + i, len(content), chain)
        out += content + b"\nendstream\nendobj\n"
    offsets[objstm] = len(out)
    out += b"%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Length %d /Filter %s >>\nstream\n" % (
        objstm,
        len(packed),
        len(head),
        len(object_stream),
        chain,
    )
    out += object_stream + b"\nendstream\nendobj\n"
    xref = objstm + 1
    offsets[xref] = len(out)
    rows = [struct.pack(">BIH", 0, 0, 65535)]
    rows += [struct.pack(">BIH", 2, objstm, i) for i in range(len(packed))]
    rows += [struct.pack(">BIH", 1, offsets[k], 0) for k in range(first_content, xref + 1)]
    table = b"".join(rows)
    out += b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n" % (
        xref,
        xref + 1,
        len(table),
    )
    return out + table + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % offsets[xref]


def encrypted_pdf(raw: bytes, *, user_password: str = "", algorithm: str = "AES-256") -> bytes:
    """``raw`` encrypted by pypdf (``algorithm``: "RC4-40", "RC4-128", "AES-128", "AES-256"); an empty user
    password opens it without one, as most "protected" PDFs do."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(raw)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def wav_bytes(seconds: float, rate: int = 16_000, channels: int = 1, sample_bytes: int = 2) -> bytes:
    data = bytes(int(seconds * rate) * channels * sample_bytes)
    byte_rate = rate * channels * sample_bytes
    fmt = struct.pack("<HHIIHH", 1, channels, rate, byte_rate, channels * sample_bytes, sample_bytes * 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body
