"""Reads the ``///`` comments of budgetkernel's public C++ headers and the declarations they document.

Not a C++ parser: it splits a header into comments and statements, tracks braces to know
whether a statement sits at namespace scope, in the public part of a class, in the ``detail``
namespace or inside a body, and keeps the ``///`` block (or trailing ``///<`` comment) that
documents each declaration. A function's parameters are the top-level commas of its first
parenthesised list. That is enough for the library's own headers, which keep to one style,
and it needs nothing but Python: the documentation build (docs/_ext/cpp_reference.py) and the
test that every public function documents its parameters (tests/test_cpp_reference.py) read
the headers through the same code. Pure Python, no Sphinx import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "cpp" / "include" / "budgetkernel"

# The headers a program that embeds the library calls into, in reading order. budgetkernel.hpp
# includes more (the budget-maintenance steps, the exact SVM's solver, the support-vector
# store, caches): building blocks the learners are made of, public only because the library is
# header-only. Their comments document them for contributors; the reference covers these.
PUBLIC_HEADERS = [
    "budgetkernel.hpp",
    "version.hpp",
    "common.hpp",
    "kernel.hpp",
    "learners/learner_base.hpp",
    "learners/calibration.hpp",
    "learners/pegasos.hpp",
    "learners/linear_pegasos.hpp",
    "learners/passive_aggressive.hpp",
    "learners/sparse_pa.hpp",
    "learners/bogd.hpp",
    "learners/perceptron.hpp",
    "learners/incremental_svc.hpp",
    "learners/twin_vector_machine.hpp",
    "learners/combine.hpp",
    "budget/maintainer.hpp",
    "budget/result.hpp",
    "io.hpp",
    "stop_poll.hpp",
    "libsvm.hpp",
    "libsvm/line.hpp",
    "parallel.hpp",
]

_COMMAND = re.compile(r"^\\(param|tparam|return|returns|throws|throw)\b\s*(.*)$")
_ACCESS = re.compile(r"^(public|private|protected)\s*:")
_SPECIFIERS = {"inline", "static", "constexpr", "virtual", "explicit", "friend", "extern", "[[nodiscard]]"}


@dataclass
class Doc:
    """A ``///`` comment split into its text and its commands."""

    text: list[str] = field(default_factory=list)  # lines; "" separates paragraphs
    params: list[tuple[str, str]] = field(default_factory=list)  # (\param or \tparam name, text)
    tparams: list[tuple[str, str]] = field(default_factory=list)
    returns: str | None = None
    throws: list[str] = field(default_factory=list)


@dataclass
class Decl:
    """A declaration at public scope: its signature and the comment that documents it."""

    signature: str
    kind: str  # "function", "class", "enum", "type", "variable", "macro"
    name: str
    scope: list[str]  # enclosing class names, outermost first
    line: int
    doc: Doc | None
    params: list[str] = field(default_factory=list)  # parameter names ("" when unnamed)
    returns_value: bool = False
    enumerators: list[list[str]] = field(default_factory=list)  # [name = value, its ///< comment]


@dataclass
class Header:
    path: str
    file_doc: Doc | None
    decls: list[Decl]


def parse_doc(lines: list[str]) -> Doc:
    """Splits the text of a ``///`` block (markers removed) into prose and \\param etc."""
    doc = Doc()
    target: str | None = None  # "returns" or "throws": where continuation lines go
    current: list | None = None  # or the [name, text] of the \\param being continued
    for raw in lines:
        line = raw.rstrip()
        m = _COMMAND.match(line.strip())
        if m:
            cmd, rest = m.groups()
            if cmd in ("param", "tparam"):
                name, _, text = rest.partition(" ")
                name = re.sub(r"^\[(in|out|in,out)\]\s*", "", name)
                entry = [name, text.strip()]
                (doc.params if cmd == "param" else doc.tparams).append(entry)
                current, target = entry, None
            elif cmd.startswith("return"):
                doc.returns = rest.strip()
                current, target = None, "returns"
            else:
                doc.throws.append(rest.strip())
                current, target = None, "throws"
            continue
        if not line.strip():
            current, target = None, None
            doc.text.append("")
            continue
        if current is not None:
            current[1] = (current[1] + " " + line.strip()).strip()
        elif target == "returns":
            doc.returns = (doc.returns + " " + line.strip()).strip()
        elif target == "throws":
            doc.throws[-1] = (doc.throws[-1] + " " + line.strip()).strip()
        else:
            doc.text.append(line)
    doc.params = [tuple(p) for p in doc.params]
    doc.tparams = [tuple(p) for p in doc.tparams]
    while doc.text and not doc.text[-1]:
        doc.text.pop()
    while doc.text and not doc.text[0]:
        doc.text.pop(0)
    return doc


def _strip_code(line: str, in_block: bool) -> tuple[str, bool]:
    """The line without its comments (string and character literals kept whole)."""
    out = []
    i, n = 0, len(line)
    while i < n:
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_block = end + 2, False
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block, i = True, i + 2
            continue
        if c in "\"'":  # kept whole: the walker copies literals without reading braces in them
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            out.append(line[i : j + 1])
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), in_block


def _top_level(text: str, chars: str, angle: bool = False) -> list[int]:
    """Positions of `chars` in text outside (), [], {} (and <> when angle)."""
    depth, found = 0, []
    opens, closes = "([{" + ("<" if angle else ""), ")]}" + (">" if angle else "")
    for i, c in enumerate(text):
        if c in chars and depth == 0:
            found.append(i)
        if c in opens:
            depth += 1
        elif c in closes:
            depth = max(depth - 1, 0)
    return found


def _matching(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _param_name(param: str) -> str:
    """The name of one parameter ("" when it has none)."""
    eq = _top_level(param, "=", angle=True)
    if eq:
        param = param[: eq[0]]
    param = re.sub(r"\[[^\]]*\]\s*$", "", param).strip()
    if param in ("", "void", "..."):
        return ""
    m = re.search(r"([A-Za-z_]\w*)$", param)
    if not m:
        return ""  # ends with &, * or >: a type only
    before = param[: m.start()].rstrip()
    if not before or before.endswith("::") or before in ("const", "unsigned", "signed", "long", "short"):
        return ""
    return m.group(1)


def _classify(stmt: str, scope: list[str]) -> tuple[str, str, list[str], bool]:
    """kind, name, parameter names and whether a function returns a value."""
    body = re.sub(r"^template\s*<.*?>\s*(?=[A-Za-z\[])", "", stmt, flags=re.S).strip()
    if re.match(r"^#\s*define\b", body):
        return "macro", body.split()[2] if len(body.split()) > 2 else "", [], False
    m = re.match(r"^(class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)", body)
    if m and "(" not in body.split("{")[0].split(":")[0]:
        return "class", m.group(2), [], False
    m = re.match(r"^enum(?:\s+class|\s+struct)?\s+([A-Za-z_]\w*)", body)
    if m:
        return "enum", m.group(1), [], False
    m = re.match(r"^(?:using|typedef)\s+([A-Za-z_]\w*)", body)
    if m:
        return "type", m.group(1), [], False
    masked = re.sub(r"operator\s*(\(\)|[^\s(]+)", lambda o: "operator" + "_" * (len(o.group(0)) - 8), body)
    parens = _top_level(masked, "(")
    equals = _top_level(masked, "=")
    if not parens or (equals and equals[0] < parens[0]):
        name = re.findall(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:=|\{|;|$)", masked.split("=")[0] + ";")
        return "variable", name[0] if name else "", [], False
    open_ = parens[0]
    head = body[:open_].rstrip()
    name_m = re.search(r"(~?[A-Za-z_][\w:]*(?:\s*operator\s*\S+?)?)$", head)
    name = name_m.group(1) if name_m else head
    params_text = body[open_ + 1 : _matching(body, open_)]
    params = [_param_name(p) for p in (_split_params(params_text))]
    rtype = [t for t in head[: name_m.start() if name_m else 0].split() if t not in _SPECIFIERS]
    simple = name.split("::")[-1]
    ctor = simple.lstrip("~") in scope[-1:] or ("::" in name and name.split("::")[-2] == simple.lstrip("~"))
    returns_value = bool(rtype) and rtype != ["void"] and not ctor
    return "function", name, params, returns_value


def _split_params(text: str) -> list[str]:
    text = text.strip()
    if not text or text == "void":
        return []
    cuts = [-1] + _top_level(text, ",", angle=True) + [len(text)]
    return [text[a + 1 : b].strip() for a, b in zip(cuts, cuts[1:])]


def signature_of(stmt: str, kind: str) -> str:
    """The declaration as shown: one line, without body, initialisers or trailing comments."""
    sig = " ".join(stmt.split())
    if kind == "function":
        masked = re.sub(r"operator\s*(\(\)|[^\s(]+)", lambda o: "operator" + "_" * (len(o.group(0)) - 8), sig)
        open_ = _top_level(masked, "(")[0]
        close = _matching(masked, open_)
        tail = sig[close + 1 :]
        colon = re.search(r"(?<!:):(?!:)", tail)  # a constructor's member initialisers
        if colon:
            tail = tail[: colon.start()]
        sig = (sig[: close + 1] + tail).rstrip(" {;")
    elif kind == "class":
        sig = sig.split("{")[0].rstrip()
    return sig.rstrip(" ;")


class _Scope:
    """A brace level: "namespace", "detail", "class" (with its current access), "enum",
    "block" (a function body) or "init" (a braced initialiser, read as part of its statement)."""

    def __init__(self, kind: str, name: str = "", access: str = "public"):
        self.kind, self.name, self.access = kind, name, access


def _scope_of(stmt: str) -> _Scope:
    """The scope that a '{' after the statement `stmt` opens."""
    body = re.sub(r"^template\s*<.*?>\s*", "", stmt.strip(), flags=re.S)
    m = re.match(r"^namespace\s*([\w:]*)", body)
    if m:
        return _Scope("detail" if "detail" in m.group(1).split("::") else "namespace", m.group(1))
    m = re.match(r"^(class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)(?:\s+final)?\s*(?::[^()]*)?$", body)
    if m:
        return _Scope("class", m.group(2), "private" if m.group(1) == "class" else "public")
    if re.match(r"^enum\b", body):
        return _Scope("enum")
    if re.match(r'^extern\s*"', body):
        return _Scope("namespace")
    return _Scope("block")


def _doc_text(line: str) -> str | None:
    """The text of a ``///`` line (not ``///<``), else None."""
    s = line.strip()
    if not s.startswith("///") or s.startswith("///<") or s.startswith("////"):
        return None
    text = s[3:]
    return text[1:] if text.startswith(" ") else text


class _Parser:
    """One pass over a header's lines; see the module docstring."""

    def __init__(self):
        self.scopes = [_Scope("namespace")]
        self.decls: list[Decl] = []
        self.file_doc: Doc | None = None
        self.pending: list[str] | None = None  # the /// block waiting for its declaration
        self.stmt, self.stmt_line, self.stmt_doc = "", 0, None
        self.enum: Decl | None = None  # the enum whose enumerators are being read
        self.in_comment = False

    def public(self) -> bool:
        return all(s.kind == "namespace" or (s.kind == "class" and s.access == "public") for s in self.scopes)

    def classes(self) -> list[str]:
        return [s.name for s in self.scopes if s.kind == "class"]

    def record(self, text: str, doc: Doc | None, trailing: str | None) -> Decl | None:
        if not self.public() or not text.strip():
            return None
        if doc is None and trailing:
            doc = parse_doc([trailing])
        kind, name, params, returns_value = _classify(text, self.classes())
        if not name or name == "static_assert" or "::" in name:  # out-of-line definitions: documented in their class
            return None
        decl = Decl(signature_of(text, kind), kind, name, self.classes(), self.stmt_line, doc, params, returns_value)
        self.decls.append(decl)
        return decl

    def line(self, no: int, raw: str) -> None:
        text = _doc_text(raw)
        if text is not None:
            self.pending = (self.pending or []) + [text]
            return
        s = raw.strip()
        if s.startswith("#") or not s:  # a blank line or directive detaches a /// block
            if self.pending is not None and self.file_doc is None and any(t.startswith("\\file") for t in self.pending):
                self.file_doc = parse_doc([t for t in self.pending if not t.startswith("\\file")])
            elif self.pending is not None and s.startswith("#define") and self.public():
                self.decls.append(Decl(s, "macro", s.split()[1], [], no, parse_doc(self.pending)))
            self.pending = None
            return
        trailing = raw.split("///<", 1)[1].strip() if "///<" in raw else None
        code, self.in_comment = _strip_code(raw, self.in_comment)
        if not code.strip():
            return
        if not self.stmt.strip():
            self.stmt, self.stmt_line = "", no
            self.stmt_doc = parse_doc(self.pending) if self.pending is not None else None
        self.pending = None
        if self.enum is not None:
            code = self.enumerators(code, trailing)
            if code is None:
                return
        self.walk(code, no, trailing)
        self.stmt += " "

    def enumerators(self, code: str, trailing: str | None) -> str | None:
        """Reads enumerators up to the enum's '}'; returns the code after it (None: not closed)."""
        body, closed, rest = code.partition("}")
        for item in body.split(","):
            if item.strip():
                self.enum.enumerators.append([item.strip(), ""])
        if trailing and self.enum.enumerators:
            self.enum.enumerators[-1][1] = trailing
        if not closed:
            return None
        self.enum, self.stmt = None, ""
        self.scopes.pop()
        return rest

    def walk(self, code: str, no: int, trailing: str | None) -> None:
        """Statements end at ';', '{' opens a scope, '}' closes one."""
        i = 0
        while i < len(code):
            c, top = code[i], self.scopes[-1]
            if c in "\"'":  # a literal, copied whole: braces in it are text
                end = i + 1
                while end < len(code) and code[end] != c:
                    end += 2 if code[end] == "\\" else 1
                self.stmt += code[i : end + 1]
                i = end + 1
                continue
            if top.kind == "class" and not self.stmt.strip():
                m = _ACCESS.match(code[i:].lstrip())
                if m:
                    top.access = m.group(1)
                    i = len(code) - len(code[i:].lstrip()) + m.end()
                    continue
            i += 1
            if top.kind == "init":
                self.stmt += c
                if c == "{":
                    self.scopes.append(_Scope("init"))
                elif c == "}":
                    self.scopes.pop()
            elif c == "{":
                rest = self.open_brace(code[i:], no, trailing)
                if rest is None:
                    return
                code, i = rest, 0
            elif c == "}":
                if len(self.scopes) > 1:
                    self.scopes.pop()
                self.stmt, self.stmt_doc = "", None
            elif c == ";":
                if top.kind in ("namespace", "class"):
                    self.record(self.stmt, self.stmt_doc, trailing)
                self.stmt, self.stmt_doc = "", None
            else:
                if not self.stmt.strip() and not c.isspace():
                    self.stmt_line = no
                self.stmt += c

    def open_brace(self, after: str, no: int, trailing: str | None) -> str | None:
        """Handles a '{'; returns the code still to walk (None: the line is done)."""
        head = self.stmt.strip()
        opened = _scope_of(head)
        if head.count("(") > head.count(")") or (
            opened.kind == "block" and head and _classify(head, self.classes())[0] == "variable"
        ):
            self.stmt += "{"  # a braced initialiser (or one in a default argument): part of the statement
            self.scopes.append(_Scope("init"))
            return after
        decl = self.record(head, self.stmt_doc, None) if opened.kind in ("class", "enum", "block") else None
        self.scopes.append(opened)
        self.stmt, self.stmt_doc = "", None
        if opened.kind != "enum":
            return after
        self.enum = decl if decl is not None else Decl("", "enum", "", [], no, None)
        return self.enumerators(after, trailing)


def parse_header(path: Path, rel: str | None = None) -> Header:
    """Every declaration of one header at public scope, documented or not, in order."""
    p = _Parser()
    for no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        p.line(no, raw)
    for d in p.decls:
        if d.kind == "enum":
            d.signature = d.signature.split("{")[0].rstrip() + " { " + ", ".join(e[0] for e in d.enumerators) + " }"
    return Header(rel or path.name, p.file_doc, p.decls)


def public_headers(include_dir: Path = INCLUDE_DIR) -> list[Header]:
    return [parse_header(include_dir / rel, rel) for rel in PUBLIC_HEADERS]


def missing_docs(header: Header) -> list[str]:
    """What a header's public functions that take parameters leave undocumented: the comment
    itself, a \\param per named parameter (and none for a parameter that does not exist), a
    \\return unless void. (A function without parameters, mostly an accessor, needs only its
    comment, when its name does not say it all.)"""
    problems = []
    for d in header.decls:
        where = f"{header.path}:{d.line}: {'::'.join(d.scope + [d.name])}"
        if d.kind != "function" or not any(d.params):
            continue
        if d.doc is None:
            problems.append(f"{where}: no /// comment")
            continue
        documented = [p[0] for p in d.doc.params]
        for p in d.params:
            if p and p not in documented:
                problems.append(f"{where}: no \\param {p}")
        for p in documented:
            if p not in d.params:
                problems.append(f"{where}: \\param {p} names no parameter")
        if d.returns_value and d.doc.returns is None:
            problems.append(f"{where}: no \\return")
    return problems
