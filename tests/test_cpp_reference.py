"""The C++ reference's completeness: every public function of the public headers that takes
parameters documents each of them with \\param, and its result with \\return unless it returns
void. Read with the parser that generates docs/cpp/reference.md (docs/_ext/cpp_headers.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import cpp_headers  # noqa: E402

HEADERS = cpp_headers.public_headers()


def test_public_headers_exist_and_have_a_file_comment():
    for header in HEADERS:
        assert header.file_doc is not None and header.file_doc.text, header.path


@pytest.mark.parametrize("header", HEADERS, ids=[h.path for h in HEADERS])
def test_functions_document_parameters_and_result(header):
    assert cpp_headers.missing_docs(header) == []


def test_parser_sees_the_api():
    """The parser finds the declarations an embedder uses (guards against it silently finding none)."""
    names = {(tuple(d.scope), d.name, d.kind) for h in HEADERS for d in h.decls}
    for expected in [
        ((), "load_model", "function"),
        ((), "Model", "class"),
        (("Model",), "decision_function", "function"),
        (("OnlineLearner",), "partial_fit", "function"),
        ((), "KernelPegasos", "class"),
        (("BSGDParams",), "budget", "variable"),
        ((), "KernelType", "enum"),
        ((), "StopPoll", "class"),
    ]:
        assert expected in names, expected
    private = {d.name for h in HEADERS for d in h.decls if d.scope == ["KernelPegasos"]}
    assert "shrink_weights" not in private and "m_scale" not in private  # private members stay out
    detail = {d.name for h in HEADERS for d in h.decls}
    assert "require_positive" not in detail  # namespace detail stays out


def test_parser_reads_params_returns_and_defaults(tmp_path):
    header = tmp_path / "h.hpp"
    header.write_text(
        "#pragma once\n/// \\file h.hpp\n/// A test header.\n\nnamespace budgetkernel {\n"
        "/// Adds.\n/// \\param a first\n/// \\param b second,\n///   continued\n/// \\return a + b\n"
        "inline int add(int a, const std::pair<int, int>& b = {1, 2}) { return a + b.first; }\n"
        "class C {\n public:\n  /// Sets.\n  /// \\param v the value\n  void set(double v) { m_v = v; }\n"
        "  C(int n) : m_v{n} {}\n private:\n  /// hidden\n  void hide(int x);\n  double m_v;\n};\n"
        "namespace detail { inline void internal(int y) {} }\n"
        "enum class E : int {\n  A = 0,  ///< first\n  B = 1,  ///< second\n};\n}\n"
    )
    h = cpp_headers.parse_header(header)
    assert h.file_doc.text == ["A test header."]
    by_name = {d.name: d for d in h.decls}
    assert set(by_name) == {"add", "C", "set", "E"}
    add = by_name["add"]
    assert add.params == ["a", "b"] and add.returns_value
    assert add.doc.params == [("a", "first"), ("b", "second, continued")] and add.doc.returns == "a + b"
    assert by_name["set"].scope == ["C"] and not by_name["set"].returns_value
    assert by_name["E"].enumerators == [["A = 0", "first"], ["B = 1", "second"]]
    # the undocumented constructor with a parameter is reported, the private hide() is not
    assert cpp_headers.missing_docs(h) == ["h.hpp:17: C::C: no /// comment"]
