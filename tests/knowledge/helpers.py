"""Test helpers for the knowledge tests: a tiny real-PDF writer, and champion cases recorded in scopes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    path: Path, pages: Sequence[Sequence[str]], *, outline: Sequence[tuple[str, int]] = (), password: str | None = None
) -> Path:
    """Write a real PDF: one text line per string, Helvetica; optional bookmarks and encryption (via pypdf)."""
    from pypdf import PdfReader, PdfWriter

    objects: list[bytes] = []
    n_pages = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        body = "BT /F1 11 Tf 14 TL 72 740 Td " + " ".join(f"({_escape(line)}) Tj T*" for line in lines) + " ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(body)} >>\nstream\n{body}\nendstream".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    if outline or password:
        writer = PdfWriter(clone_from=PdfReader(path))
        for title, page in outline:
            writer.add_outline_item(title=title, page_number=page)
        if password:
            writer.encrypt(user_password=password, algorithm="RC4-128")
        with path.open("wb") as fh:
            writer.write(fh)
    return path


# --- champion-case scopes: recorded cases and who may see them, written out by hand from the policy -----------

SCOPED_CASES = {
    # answer: (profile, session, user, from_tools)
    "alice s1 plain": ("p1", "s1", "alice", False),
    "alice s1 tools": ("p1", "s1", "alice", True),
    "alice s2 plain": ("p1", "s2", "alice", False),
    "alice s2 tools": ("p1", "s2", "alice", True),
    "bob s3 plain": ("p1", "s3", "bob", False),
    "anonymous s4 plain": ("p1", "s4", "anonymous", False),
    "alice p2 plain": ("p2", "s5", "alice", False),
}
P1 = {answer for answer, (profile, *_) in SCOPED_CASES.items() if profile == "p1"}
VISIBLE = [
    # (profile, session, user, case_sharing) of the window: the answers it may be shown
    (("p1", "s1", "alice", "session"), {"alice s1 plain", "alice s1 tools"}),
    (("p1", "s1", "alice", "user"), {"alice s1 plain", "alice s1 tools", "alice s2 plain"}),
    (("p1", "s1", "alice", "profile"), P1),
    (("p1", "s6", "alice", "user"), {"alice s1 plain", "alice s2 plain"}),
    (("p1", "s3", "bob", "user"), {"bob s3 plain"}),
    (("p1", "s4", "anonymous", "user"), {"anonymous s4 plain"}),
    (("p1", "s7", "anonymous", "user"), set()),
    (("p1", "s7", "anonymous", "profile"), P1),
    (("p2", "s1", "alice", "profile"), {"alice p2 plain"}),
    (("p2", "s9", "alice", "user"), {"alice p2 plain"}),
    (("p3", "s1", "alice", "profile"), set()),
]


def record_scoped_cases(cases: Any, query: str) -> None:
    """Every case of ``SCOPED_CASES``, asked with ``query``, recorded under the default ``user`` sharing."""
    from tda.knowledge.cases import CaseRecord, CaseScope

    for answer, (profile, session, user, from_tools) in SCOPED_CASES.items():
        cases.record(CaseRecord(query, answer, scope=CaseScope(profile, session, user), from_tools=from_tools))
