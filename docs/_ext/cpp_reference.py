"""The C++ reference, generated at build time from the public headers' ``///`` comments.

A page writes

    ```{cpp-reference}
    ```

and gets, per public header (cpp_headers.PUBLIC_HEADERS), a section with the header's file
comment and then every declaration at public scope: its signature as a C++ block, its comment
as text, and ``\\param``/``\\tparam``/``\\return``/``\\throws`` (and an enum's ``///<`` values)
as field lists. Comment text is not parsed as markup: the headers' comments are written for a
C++ reader (``||w||^2``, ``a * b``), so they are set as plain text, with only ``backquoted``
words as code and indented lines as preformatted blocks. Nothing here can fail on a comment's
content, which keeps the build clean under ``-W``; the headers become dependencies of the page,
so editing one rebuilds it.

The parsing is cpp_headers.py, which the test that every public function documents its
parameters (tests/test_cpp_reference.py) uses too.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_id

import cpp_headers

_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> list[nodes.Node]:
    """Plain text with `backquoted` spans as code."""
    out: list[nodes.Node] = []
    pos = 0
    for m in _CODE.finditer(text):
        if m.start() > pos:
            out.append(nodes.Text(text[pos : m.start()]))
        out.append(nodes.literal(m.group(1), m.group(1)))
        pos = m.end()
    if pos < len(text):
        out.append(nodes.Text(text[pos:]))
    return out


def _paragraph(text: str) -> nodes.paragraph:
    para = nodes.paragraph()
    para.extend(_inline(text))
    return para


def _prose(lines: list[str]) -> list[nodes.Node]:
    """Paragraphs split at blank lines; indented lines (tables, formulas) as preformatted text."""
    out: list[nodes.Node] = []
    para: list[str] = []
    pre: list[str] = []

    def flush() -> None:
        if para:
            out.append(_paragraph(" ".join(para)))
            para.clear()
        if pre:
            text = "\n".join(pre)
            out.append(nodes.literal_block(text, text, language="none"))
            pre.clear()

    for line in lines:
        if not line.strip():
            flush()
        elif line.startswith("  "):
            if para:
                flush()
            pre.append(line)
        else:
            if pre:
                flush()
            para.append(line.strip())
    flush()
    return out


def _field(name: str, body: list[nodes.Node]) -> nodes.field:
    f = nodes.field()
    f += nodes.field_name(name, name)
    fb = nodes.field_body()
    fb.extend(body)
    f += fb
    return f


def _named_items(items) -> nodes.Node:
    """A bullet list of (name, text): **name** -- text."""
    lst = nodes.bullet_list()
    for name, text in items:
        para = nodes.paragraph()
        para += nodes.literal(name, name)
        if text:
            para += nodes.Text(" – ")
            para.extend(_inline(text))
        lst += nodes.list_item("", para)
    return lst


def _fields(doc: cpp_headers.Doc | None, decl: cpp_headers.Decl | None = None) -> list[nodes.Node]:
    fl = nodes.field_list()
    if doc is not None:
        if doc.tparams:
            fl += _field("Template parameters", [_named_items(doc.tparams)])
        if doc.params:
            fl += _field("Parameters", [_named_items(doc.params)])
        if doc.returns is not None:
            fl += _field("Returns", [_paragraph(doc.returns)])
        for text in doc.throws:
            fl += _field("Throws", [_paragraph(text)])
    if decl is not None and any(text for _, text in decl.enumerators):
        fl += _field("Values", [_named_items(decl.enumerators)])
    return [fl] if len(fl) else []


def _declaration(decl: cpp_headers.Decl) -> list[nodes.Node]:
    out: list[nodes.Node] = [nodes.literal_block(decl.signature, decl.signature, language="cpp")]
    if decl.doc is not None:
        out.extend(_prose(decl.doc.text))
    out.extend(_fields(decl.doc, decl))
    return out


class CppReference(SphinxDirective):
    """Sections generated from the public headers (cpp_headers.PUBLIC_HEADERS)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        sections = []
        for rel in cpp_headers.PUBLIC_HEADERS:
            path = cpp_headers.INCLUDE_DIR / rel
            self.env.note_dependency(str(path))
            sections.append(self._header(cpp_headers.parse_header(path, rel)))
        return sections

    def _section(self, title: str, key: str) -> nodes.section:
        sec = nodes.section(ids=[make_id(self.env, self.state.document, "cpp", key)])
        sec += nodes.title("", "", nodes.literal(title, title))
        return sec

    def _header(self, header: cpp_headers.Header) -> nodes.section:
        sec = self._section(f"budgetkernel/{header.path}", header.path)
        if header.file_doc is not None:
            sec.extend(_prose(header.file_doc.text))
        # Docutils sections hold their text before their subsections, so the declarations
        # that follow the first class at namespace scope go into a closing subsection.
        target, rest = sec, None
        for decl in header.decls:
            if decl.kind == "class" and not decl.scope:
                target = self._section(decl.name, f"{header.path}-{decl.name}")
                sec += target
            elif not decl.scope and target is not sec:
                if rest is None:
                    rest = self._section("Functions and constants", f"{header.path}-functions")
                target = rest
            target.extend(_declaration(decl))
        if rest is not None:
            sec += rest
        return sec


def setup(app):
    app.add_directive("cpp-reference", CppReference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
