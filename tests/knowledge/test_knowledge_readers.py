"""Reading files into structured blocks: headings, pages, and clear per-file errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tda.knowledge.readers import ReadError, read_document
from tests.knowledge.helpers import make_pdf


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_markdown_headings_become_section_paths_and_code_fences_stay_whole(tmp_path: Path) -> None:
    md = write(
        tmp_path,
        "guide.md",
        (
            "# Guide\n\nIntro text.\n\n## Install\n\nRun the installer.\n\n"
            "```sh\n# not a heading\npip install x\n```\n\n"
            "### Linux\n\nUse apt.\n\n## Usage\n\nCall it.\n"
        ),
    )
    doc = read_document(md)
    assert doc.title == "Guide"
    by_text = {b.text: b.headings for b in doc.blocks}
    assert by_text["Intro text."] == ("Guide",)
    assert by_text["Use apt."] == ("Guide", "Install", "Linux")
    assert by_text["Call it."] == ("Guide", "Usage")  # a sibling H2 closes the H3 under the previous H2
    code = next(b for b in doc.blocks if b.preformatted)
    assert "# not a heading" in code.text and code.headings == ("Guide", "Install")


def test_setext_headings_are_recognised(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "s.md", "Title\n=====\n\nBody one.\n\nPart\n----\n\nBody two.\n"))
    assert [(b.text, b.headings) for b in doc.blocks] == [("Body one.", ("Title",)), ("Body two.", ("Title", "Part"))]


def test_html_skips_navigation_scripts_and_styles_and_keeps_heading_paths(tmp_path: Path) -> None:
    html = write(
        tmp_path,
        "page.html",
        """<html><head><title>Page Title</title><style>p {color: red}</style></head>
    <body><nav><a href="/">Home</a></nav><div class="menu"><ul><li>Menu item</li></ul></div>
    <h1>Main</h1><p>First   paragraph
    text.</p><script>var x = 1;</script><h2>Sub <em>part</em></h2><p>Second &amp; last.</p>
    <pre>code  line 1
code line 2</pre><footer>Copyright</footer></body></html>""",
    )
    doc = read_document(html)
    assert doc.title == "Page Title"
    assert [(b.text, b.headings) for b in doc.blocks if not b.preformatted] == [
        ("First paragraph text.", ("Main",)),
        ("Second & last.", ("Main", "Sub part")),
    ]
    assert next(b for b in doc.blocks if b.preformatted).text == "code  line 1\ncode line 2"
    assert (
        "Home" not in doc.text
        and "Menu item" not in doc.text
        and "var x" not in doc.text
        and "Copyright" not in doc.text
    )


def test_plain_text_uses_a_short_first_line_as_title(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "notes.txt", "Release notes\n\nLine one\ncontinues.\n\nSecond paragraph.\n"))
    assert doc.title == "Release notes"
    assert [b.text for b in doc.blocks][1:] == ["Line one\ncontinues.", "Second paragraph."]


def test_pdf_pages_and_outline_give_page_numbers_and_sections(tmp_path: Path) -> None:
    pdf = make_pdf(
        tmp_path / "manual.pdf",
        [["Intro sentence one.", "Intro sentence two."], ["Details live here."]],
        outline=[("Introduction", 0), ("Details", 1)],
    )
    doc = read_document(pdf)
    assert [(b.page, b.headings) for b in doc.blocks] == [(1, ("Introduction",)), (2, ("Details",))]
    assert "Details live here." in doc.text


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.txt", "", "no text found"),
        ("blank.md", "\n\n   \n", "no text found"),
        ("binary.txt", b"\x00\x01\x02binary", "looks binary"),
        ("image.png", b"\x89PNG", "unsupported file type"),
        ("broken.pdf", b"%PDF-1.4 this is not really a pdf", "not a readable PDF"),
        ("latin.txt", bytes([0x81, 0x8D, 0x8F, 0x90, 0x9D]) * 3, "not valid UTF-8"),
    ],
)
def test_unreadable_files_raise_a_clear_error_naming_the_file(
    tmp_path: Path, name: str, content: str | bytes, message: str
) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(ReadError, match=message) as err:
        read_document(path)
    assert name in str(err.value)


def test_encrypted_pdf_is_refused_with_a_fix(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "secret.pdf", [["Top secret text."]], password="pw")
    with pytest.raises(ReadError, match="encrypted; decrypt it"):
        read_document(pdf)


def test_windows_1252_text_is_decoded(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "old.txt", "Caf\xe9 menu\n\nCr\xe8me br\xfbl\xe9e.".encode("cp1252")))
    assert doc.title == "Café menu" and "Crème brûlée." in doc.text


def test_numbered_sections_in_plain_text_become_section_paths(tmp_path: Path) -> None:
    text = """Widget Licence
==============

1. Definitions
--------------

1.1. "Widget"
    means the software distributed with this licence.

1.2. "You"
    means the person using the Widget.

2. Grant of Rights. Subject to the terms of this licence, you may use
   the Widget for any purpose, and copy it for friends.

Section 3
The Widget comes without warranty.

4. This licence applies to any program that contains a notice
placed by the copyright holder saying it may be distributed.

1. Buy milk
"""
    path = tmp_path / "widget.txt"
    path.write_text(text)
    doc = read_document(path)
    assert doc.title == "Widget Licence"
    found = {b.text.split()[0]: b.headings[1:] for b in doc.blocks if b.headings}
    assert found["means"] == ("1. Definitions", '1.2. "You"')  # 1.2 sits under 1, after 1.1 closed
    assert found["2."] == ("2. Grant of Rights",)  # an inline heading keeps its paragraph whole
    assert found["The"] == ("Section 3",)
    # Wrapped prose that starts with a number is not a heading; it stays in the open section.
    assert found["4."] == ("Section 3",)
    assert "2. Grant of Rights. Subject to the terms" in doc.text and "The Widget comes without warranty." in doc.text
