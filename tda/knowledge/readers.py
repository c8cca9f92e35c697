"""Turn a file into structured text: a title and blocks that carry their heading path and page.

Supported: .txt, .md/.markdown, .html/.htm and .pdf (pypdf). Anything unreadable, encrypted, empty or
binary raises :class:`ReadError` with a message that says what is wrong and what to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from itertools import groupby
from pathlib import Path

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf")


class ReadError(ValueError):
    """A file that cannot be ingested; the message names the file and the fix."""


@dataclass(frozen=True, slots=True)
class Block:
    """A paragraph-sized piece of text under a heading path (H1 › H2 › H3)."""

    text: str
    headings: tuple[str, ...] = ()
    page: int | None = None
    preformatted: bool = False
    wrapped: bool = False
    """Hard-wrapped text (plain text, man pages): its line breaks and indentation are layout, not content, and
    are dropped from the text sent (``unwrapped``)."""


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    title: str
    blocks: tuple[Block, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks)


def read_document(path: Path) -> ExtractedDocument:
    """Read ``path`` into blocks. Raises :class:`ReadError` for anything that cannot be ingested."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise ReadError(
            f"{path}: unsupported file type {suffix or '(none)'}; use one of {', '.join(SUPPORTED_SUFFIXES)}"
        )
    try:
        if suffix == ".pdf":
            doc = _read_pdf(path)
        else:
            text = _decode_text(path)
            reader = {".html": _read_html, ".htm": _read_html, ".md": _read_markdown, ".markdown": _read_markdown}
            doc = reader.get(suffix, _read_plain)(text, path.stem)
    except OSError as exc:
        raise ReadError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    if not any(b.text.strip() for b in doc.blocks):
        raise ReadError(f"{path}: no text found (empty, or a scanned PDF without a text layer)")
    return doc


def _decode_text(path: Path) -> str:
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ReadError(
            f"{path}: looks binary (contains NUL bytes); only text, Markdown, HTML and PDF files can be ingested"
        )
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise ReadError(f"{path}: not valid UTF-8 or Windows-1252 text; re-save it as UTF-8")


# --- plain text and Markdown -----------------------------------------------------------------

_ATX_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SETEXT_UNDERLINE = re.compile(r"^(=+|-+)\s*$")


def _paragraphs(lines: list[str]) -> list[str]:
    """Group lines into blank-line separated paragraphs."""
    out, current = [], []
    for line in lines:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


# "1. Definitions", "3.2 Scope", "Section 3", "ARTICLE IV - Term", "§ 5 Notices": a numbered heading line.
_NUMBERED_HEADING = re.compile(
    r"^\s*(?:(?i:section|article|part|chapter|clause|§)\s*)?"
    r"(?P<number>\d+(?:\.\d+)*|[IVXLC]+)(?:[.):]|\s*[-–—]\s*)?(?:\s+(?P<title>[A-Z\"“'(][^\n]{0,78}?))?\s*$",
)
_WORDED = re.compile(r"^\s*(?:section|article|part|chapter|clause|§)", re.IGNORECASE)
# "3. Grant of Patent License. Subject to ...": a numbered paragraph opening with a short titled phrase.
_INLINE_HEADING = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)*)\.\s+(?P<title>[A-Z][\w'’-]*(?:\s+[\w'’-]+){0,5})\.\s+\S")


def _read_plain(text: str, stem: str) -> ExtractedDocument:
    """Paragraphs; numbered headings ("1. Definitions", "Section 3") open sections, nested by their
    numbering (1.2 sits under 1), so plain-text licences and specifications get section paths too."""
    paragraphs = _paragraphs(text.splitlines())
    first = paragraphs[0].split("\n") if paragraphs else [""]
    if len(first) == 2 and _SETEXT_UNDERLINE.match(first[1].strip()):
        first = first[:1]  # an underlined title
    title = " ".join(first[0].split()) if len(first) == 1 and 0 < len(first[0].strip()) <= 120 else stem
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []  # (depth, heading)

    def open_section(depth: int, heading: str) -> None:
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, heading))

    for paragraph in paragraphs:
        lines = paragraph.split("\n")
        heading = _numbered_heading(lines[0]) if _stands_alone(lines) else None
        if heading is not None:
            open_section(*heading)
            rest = lines[1:]
            if rest and _SETEXT_UNDERLINE.match(rest[0].strip()):
                rest = rest[1:]
            if rest:
                blocks.append(Block("\n".join(rest), (title, *(h for _, h in stack)), wrapped=True))
            continue
        inline = _INLINE_HEADING.match(lines[0])
        if inline:  # the heading is part of the text: keep the text whole
            open_section(inline["number"].count(".") + 1, f"{inline['number']}. {inline['title']}")
        blocks.append(Block(paragraph, (title, *(h for _, h in stack)) if stack else (), wrapped=True))
    return ExtractedDocument(title, tuple(blocks))


_COLUMNS = re.compile(r"\S {3,}\S")
"""Three or more spaces inside a line: columns of a table or aligned fields, not wrapped prose."""


_MARKDOWN_LAYOUT = re.compile(r"^(?: {4}|\t|\s*[|>])", re.M)
"""Markdown whose lines carry meaning: indented code, table rows, block quotes."""


def _soft_wrapped(paragraph: str) -> bool:
    """A Markdown paragraph whose line breaks are soft (rendered as spaces): no indented code, table or quote."""
    return not _MARKDOWN_LAYOUT.search(paragraph)


_LIST_ITEM = re.compile(r"^(?:[-*+o•]|\d+[.)])\s")


def unwrapped(text: str, *, continued: bool = False, indent: int = 0) -> str:
    """Hard-wrapped ``text`` as it is sent: each run of lines at one indentation that is prose (no aligned
    columns, no list items) joined into one line, the whole dedented. Man pages indent every line by 7 spaces
    and wrap at 80 columns: each break and indentation costs a token that carries nothing. A run at another
    indentation (an option's description under its name) keeps its own line. ``continued``: the text starts
    mid-line (a sentence after another), so its first line belongs to the run below it; so does a paragraph's
    indented first line. ``indent``: the first line's indentation, when it was stripped."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return text.strip()
    indents = [len(line) - len(line.lstrip()) for line in lines]
    indents[0] = max(indents[0], indent)
    if len(lines) > 1 and (continued or (len(set(indents[1:])) == 1 and indents[0] > indents[1])):
        indents[0] = indents[1]
    levels = sorted(set(indents))
    out: list[str] = []
    for indent, run in groupby(zip(indents, lines, strict=True), key=lambda pair: pair[0]):
        pad = "    " * levels.index(indent)  # a step of four spaces a level says as much as eleven
        current: list[str] = []
        for _, line in run:
            line = line.strip()
            if current and (_COLUMNS.search(line) or _COLUMNS.search(current[-1]) or _LIST_ITEM.match(line)):
                out.append(pad + " ".join(current))
                current = []
            current.append(line)
        out.append(pad + " ".join(current))
    return "\n".join(out)


def _stands_alone(lines: list[str]) -> bool:
    """The first line is a line of its own, not the start of wrapped text: alone, underlined, or short
    and followed by much longer or further indented lines."""
    rest = [len(line.strip()) for line in lines[1:]]
    if not rest or _SETEXT_UNDERLINE.match(lines[1].strip()):
        return True
    first = lines[0].strip()
    indented = len(lines[1]) - len(lines[1].lstrip()) > len(lines[0]) - len(lines[0].lstrip())
    return len(first) <= 60 and (len(first) < 0.7 * max(rest) or indented)


def _numbered_heading(line: str) -> tuple[int, str] | None:
    """(depth, heading) when ``line`` is a numbered heading on its own, else None."""
    match = _NUMBERED_HEADING.match(line)
    if not match or len(line.strip()) > 90:
        return None
    worded = bool(_WORDED.match(line))
    if not match["title"] and not worded:
        return None  # a bare number is a list item or a page number, not a heading
    if match["number"].isalpha() and not worded:
        return None  # "I think ..." is not article I
    depth = match["number"].count(".") + 1 if not match["number"].isalpha() else 1
    return depth, " ".join(line.split()).rstrip(".")


def _read_markdown(text: str, stem: str) -> ExtractedDocument:
    """Split on ATX and setext headings; fenced code blocks are kept whole and never parsed for headings."""
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    buffer: list[str] = []
    title = ""

    def flush() -> None:
        path = tuple(h for _, h in headings)
        blocks.extend(Block(p, path, wrapped=_soft_wrapped(p)) for p in _paragraphs(buffer))
        buffer.clear()

    def open_heading(level: int, name: str) -> None:
        nonlocal title
        flush()
        while headings and headings[-1][0] >= level:
            headings.pop()
        headings.append((level, name))
        title = title or name

    lines = text.splitlines()
    in_fence = False
    fence_lines: list[str] = []
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            if in_fence:
                fence_lines.append(line)
                flush()
                blocks.append(Block("\n".join(fence_lines), tuple(h for _, h in headings), preformatted=True))
                fence_lines = []
            else:
                flush()
                fence_lines = [line]
            in_fence = not in_fence
            continue
        if in_fence:
            fence_lines.append(line)
            continue
        atx = _ATX_HEADING.match(line)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if atx:
            open_heading(len(atx.group(1)), atx.group(2))
        elif line.strip() and _SETEXT_UNDERLINE.match(nxt) and not buffer_has_open_paragraph(buffer):
            open_heading(1 if nxt.lstrip().startswith("=") else 2, line.strip())
        elif _SETEXT_UNDERLINE.match(line) and i > 0 and headings and headings[-1][1] == lines[i - 1].strip():
            continue  # the underline of a setext heading just opened
        else:
            buffer.append(line)
    if fence_lines:  # an unclosed fence: keep its text rather than lose it
        buffer.extend(fence_lines)
    flush()
    return ExtractedDocument(title or stem, tuple(blocks))


def buffer_has_open_paragraph(buffer: list[str]) -> bool:
    """A setext underline only makes a heading of a one-line paragraph."""
    return bool(buffer) and bool(buffer[-1].strip())


# --- HTML ------------------------------------------------------------------------------------

_SKIP_TAGS = {
    "script",
    "style",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "select",
    "svg",
    "noscript",
    "template",
    "head",
}
_SKIP_MARKERS = {
    "nav",
    "navigation",
    "menu",
    "mainmenu",
    "submenu",
    "sidebar",
    "breadcrumb",
    "breadcrumbs",
    "nosearch",
    "toc",
}
_BLOCK_TAGS = {
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "blockquote",
    "section",
    "article",
    "main",
    "pre",
    "br",
    "hr",
    "figure",
    "figcaption",
    "caption",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
}
_VOID_TAGS = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
_HEADING = re.compile(r"^h([1-6])$")


class _HtmlBlocks(HTMLParser):
    """Collects text blocks under their heading path, skipping navigation, scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.title = ""
        self._headings: list[tuple[int, str]] = []
        self._text: list[str] = []
        self._skip: list[str] = []  # tag names of open skipped elements (nesting-aware)
        self._heading_level = 0
        self._pre = 0
        self._in_title = False

    def _skips(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag in _SKIP_TAGS:
            return True
        values = " ".join(v or "" for k, v in attrs if k in {"class", "id", "role"}).lower()
        return bool(_SKIP_MARKERS & set(re.split(r"[\s_-]+", values)))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if self._skip:
            if tag == self._skip[-1] and tag not in _VOID_TAGS:
                self._skip.append(tag)
            return
        if tag not in _VOID_TAGS and self._skips(tag, attrs):
            self._skip.append(tag)
            return
        if tag in _BLOCK_TAGS:
            self._flush()
        if heading := _HEADING.match(tag):
            self._heading_level = int(heading.group(1))
        if tag == "pre":
            self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if self._heading_level and _HEADING.match(tag):
            self._close_heading()
        elif tag in _BLOCK_TAGS:
            self._flush()
        if tag == "pre" and self._pre:
            self._pre -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self._text.append(data)

    def _close_heading(self) -> None:
        name = _squash("".join(self._text))
        self._text = []
        level, self._heading_level = self._heading_level, 0
        if not name:
            return
        while self._headings and self._headings[-1][0] >= level:
            self._headings.pop()
        self._headings.append((level, name))

    def _flush(self) -> None:
        if self._heading_level:
            return  # block tags inside a heading do not end it
        raw = "".join(self._text)
        self._text = []
        text = raw.strip("\n") if self._pre else _squash(raw)
        if text.strip():
            path = tuple(h for _, h in self._headings)
            self.blocks.append(Block(text, path, preformatted=bool(self._pre)))

    def close(self) -> None:
        super().close()
        self._flush()


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _read_html(text: str, stem: str) -> ExtractedDocument:
    parser = _HtmlBlocks()
    parser.feed(text)
    parser.close()
    first_h1 = next((b.headings[0] for b in parser.blocks if b.headings), "")
    title = _squash(parser.title) or first_h1 or stem
    return ExtractedDocument(title, tuple(parser.blocks))


# --- PDF -------------------------------------------------------------------------------------


def _read_pdf(path: Path) -> ExtractedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ReadError(f"{path}: the PDF is encrypted; decrypt it (remove the password) and ingest it again")
        pages = [page.extract_text() or "" for page in reader.pages]
        sections = _outline_by_page(reader)
    except ReadError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise ReadError(f"{path}: not a readable PDF ({exc}); check that the file is complete") from exc
    blocks: list[Block] = []
    current: tuple[str, ...] = ()
    for number, text in enumerate(pages, start=1):
        current = sections.get(number, current)
        blocks.extend(Block(_squash(p), current, page=number) for p in _paragraphs(text.splitlines()))
    meta_title = (reader.metadata.title if reader.metadata else None) or ""
    return ExtractedDocument(meta_title.strip() or path.stem, tuple(b for b in blocks if b.text))


def _outline_by_page(reader: object) -> dict[int, tuple[str, ...]]:
    """Map page number -> heading path of the first bookmark that starts on that page (PDF outline)."""
    out: dict[int, tuple[str, ...]] = {}

    def walk(items: list[object], parents: tuple[str, ...]) -> None:
        last: tuple[str, ...] = parents
        for item in items:
            if isinstance(item, list):
                walk(item, last)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1  # type: ignore[attr-defined]
            except Exception:  # a bookmark without a page: keep its title for children only
                page = None
            last = (*parents, str(getattr(item, "title", "")).strip())
            if page is not None:
                out.setdefault(page, last)

    try:
        walk(list(reader.outline), ())  # type: ignore[attr-defined]
    except Exception:  # a malformed outline is not worth failing the document for
        return {}
    return out
