#pragma once
/// \file libsvm.hpp
/// Reading the LIBSVM / svmlight text format: `label [qid:q] index:value ... [# comment]`.
///
/// Three layers, each usable on its own:
///   - parse_libsvm_line() checks and converts one line;
///   - LibsvmParser is a push parser: feed it byte blocks in any sizes, it splits complete
///     lines (LF, CRLF or a lone CR), numbers them, skips a leading UTF-8 byte order mark,
///     blank and comment lines, and hands out parsed rows or the reason a line was rejected;
///   - LibsvmRows collects checked rows of one chunk and scatters them into a dense
///     row-major array; scan_libsvm() and LibsvmReader do the two passes over a std::istream.
///
/// What a line may hold is exactly what the Python reader (budgetkernel.datasets) accepts,
/// and numbers are converted exactly as Python's float() and int() do, so that both readers
/// give the same bits:
///   - tokens are separated by ASCII whitespace (also the control bytes 0x1c-0x1f, which
///     Python's str.split() counts as whitespace); `#` starts a comment anywhere;
///   - a value or a non-integer label is `[+-]` digits with an optional `.` and fraction
///     (at least one digit in all), then an optional exponent `e[+-]digits`; it is correctly
///     rounded to the nearest double (values too small for a double become a signed zero);
///     `inf`, `nan` and values beyond the double range are rejected as non-finite, digit
///     separators (`1_0`) and hexadecimal are rejected;
///   - a label written as an integer (`[+-]digits`) is an integer label if it fits int64,
///     else a float label;
///   - an index is `[+-]digits` (leading zeros allowed) between 0 and 2^63 - 1; `qid:` tokens
///     need an integer and are ignored; an index may occur once per line;
///   - the text must be UTF-8; bytes >= 0x80 are only accepted inside comments
///     (LibsvmStatus::non_ascii otherwise: Python's reader handles those lines itself, since
///     it also accepts Unicode digits and spaces there).
///
/// Compressed input is the caller's business (the Python package gunzips before feeding).
/// Memory: the parser holds the unparsed tail of its input, about one block plus the
/// longest line; a chunk holds its rows once, sparse, before to_dense().
///
/// A file of unknown shape, in two passes:
/// \code
///   std::ifstream f("data.libsvm", std::ios::binary);
///   const budgetkernel::LibsvmLayout layout = budgetkernel::libsvm_layout(budgetkernel::scan_libsvm(f));
///   f.clear();
///   f.seekg(0);
///   budgetkernel::LibsvmReader reader(f, layout);
///   budgetkernel::RowMatrix X;
///   budgetkernel::Vector y;
///   while (reader.read_chunk(10000, X, y) > 0) { /* learn from X, y */ }
/// \endcode
/// Errors are LibsvmFormatError (a std::invalid_argument) with the line number and status.

#include "common.hpp"

#include <algorithm>
#include <cstring>
#include <istream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

// <charconv> is C++17; it defines __cpp_lib_to_chars only where from_chars reads doubles.
#include <charconv>
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L && !defined(BUDGETKERNEL_LIBSVM_USE_STRTOD)
#define BUDGETKERNEL_LIBSVM_FROM_CHARS 1
#else
// No std::from_chars for double (libc++ before LLVM 20, e.g. Apple's): strtod, correctly
// rounded on glibc, macOS and MSVC, in the "C" locale so that a program that switched
// LC_NUMERIC to a decimal comma still reads "0.5".
#include <cerrno>
#include <clocale>
#include <cstdlib>
#if defined(_WIN32)
#include <locale.h>
#elif defined(__APPLE__)
#include <xlocale.h>
#else
#include <locale.h>
#endif
#define BUDGETKERNEL_LIBSVM_FROM_CHARS 0
#endif

namespace budgetkernel {

/// Why a line was rejected (ok if it was not). The first group is decided by the line alone,
/// the second by the shape the rows are read into (LibsvmLayout), the last by the scan.
enum class LibsvmStatus : int {
  ok = 0,
  missing_label,           ///< the first token has a ':' (a feature where the label belongs)
  bad_label,               ///< the label is not a number
  nonfinite_label,         ///< inf, nan, or beyond the double range
  missing_colon,           ///< a feature token without ':'
  bad_qid,                 ///< qid:<not an integer>
  bad_index,               ///< an index that is not an integer
  negative_index,          ///< an index below 0
  index_too_large,         ///< an index beyond int64
  bad_value,               ///< a value that is not a number
  nonfinite_value,         ///< a value that is inf, nan, or beyond the double range
  duplicate_index,         ///< the same index twice on one line
  invalid_utf8,            ///< a byte sequence that is not UTF-8
  non_ascii,               ///< a byte >= 0x80 outside a comment
  non_integer_label,       ///< a float label where integer labels are required
  label_out_of_range,      ///< a label outside LibsvmLayout's label bounds
  zero_index_one_based,    ///< index 0 in a one-based file
  index_beyond_n_features, ///< index - offset >= n_features
  value_out_of_range,      ///< |value| above LibsvmLayout::value_max (e.g. float32's range)
};

/// A short English description of a status (the Python package words its own messages).
inline const char* describe(LibsvmStatus s) {
  switch (s) {
    case LibsvmStatus::ok: return "ok";
    case LibsvmStatus::missing_label: return "missing label (line starts with a feature)";
    case LibsvmStatus::bad_label: return "non-numeric label";
    case LibsvmStatus::nonfinite_label: return "non-finite label";
    case LibsvmStatus::missing_colon: return "missing ':' in a feature";
    case LibsvmStatus::bad_qid: return "non-integer qid";
    case LibsvmStatus::bad_index: return "non-integer feature index";
    case LibsvmStatus::negative_index: return "negative feature index";
    case LibsvmStatus::index_too_large: return "feature index beyond int64";
    case LibsvmStatus::bad_value: return "non-numeric feature value";
    case LibsvmStatus::nonfinite_value: return "non-finite feature value";
    case LibsvmStatus::duplicate_index: return "duplicate feature index";
    case LibsvmStatus::invalid_utf8: return "bytes that are not valid UTF-8 text";
    case LibsvmStatus::non_ascii: return "non-ASCII byte outside a comment";
    case LibsvmStatus::non_integer_label: return "non-integer label with integer labels required";
    case LibsvmStatus::label_out_of_range: return "label outside the label type's range";
    case LibsvmStatus::zero_index_one_based: return "feature index 0 in a one-based file";
    case LibsvmStatus::index_beyond_n_features: return "feature index beyond n_features";
    case LibsvmStatus::value_out_of_range: return "feature value outside the value type's range";
  }
  return "unknown status";
}

/// A rejected line, as thrown by scan_libsvm() and LibsvmReader.
class LibsvmFormatError : public std::invalid_argument {
 public:
  /// \param line one-based line number of the rejected line.
  LibsvmFormatError(std::int64_t line, LibsvmStatus status)
      : std::invalid_argument("malformed LIBSVM line " + std::to_string(line) + ": " + describe(status)),
        m_line(line),
        m_status(status) {}
  std::int64_t line() const { return m_line; }
  LibsvmStatus status() const { return m_status; }

 private:
  std::int64_t m_line;
  LibsvmStatus m_status;
};

/// One parsed line: the label (as a double, and as an integer when written as one that fits
/// int64) and the raw indices and values in the order of the line.
struct LibsvmLine {
  double label = 0.0;
  std::int64_t label_int = 0;  ///< valid when label_is_int
  bool label_is_int = false;
  bool blank = true;  ///< only whitespace and comments: no row
  std::vector<std::int64_t> indices;
  std::vector<double> values;
};

namespace detail {

inline bool libsvm_space(unsigned char c) {
  // Python's str.split() on ASCII: \t \n \v \f \r, the separators 0x1c-0x1f, and space.
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
}
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// [+-]?[0-9]+ : the integer syntax of labels, indices and qids.
inline bool integer_syntax(const char* b, const char* e) {
  if (b != e && (*b == '+' || *b == '-')) ++b;
  if (b == e) return false;
  for (; b != e; ++b)
    if (!is_digit(*b)) return false;
  return true;
}

enum class IntFit { fits, above, below };

/// The value of a token with integer_syntax, if it fits int64.
inline IntFit parse_int64(const char* b, const char* e, std::int64_t& out) {
  bool neg = false;
  if (*b == '+' || *b == '-') neg = *b++ == '-';
  while (b != e && *b == '0') ++b;  // leading zeros carry no value (and no limit on them)
  if (e - b > 19) return neg ? IntFit::below : IntFit::above;
  std::uint64_t mag = 0;
  for (; b != e; ++b) mag = mag * 10 + static_cast<std::uint64_t>(*b - '0');  // < 10^19 < 2^64
  constexpr std::uint64_t max = static_cast<std::uint64_t>((std::numeric_limits<std::int64_t>::max)());
  if (!neg) {
    if (mag > max) return IntFit::above;
    out = static_cast<std::int64_t>(mag);
  } else {
    if (mag > max + 1) return IntFit::below;
    out = mag == max + 1 ? (std::numeric_limits<std::int64_t>::min)() : -static_cast<std::int64_t>(mag);
  }
  return IntFit::fits;
}

enum class FloatParse { ok, syntax, nonfinite };

inline bool equals_nocase(const char* b, const char* e, const char* word) {
  const std::size_t n = std::strlen(word);
  if (static_cast<std::size_t>(e - b) != n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    char c = b[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != word[i]) return false;
  }
  return true;
}

/// Decimal to the nearest double (syntax already checked: [-]digits[.digits][e[+-]digits]).
/// Returns false on overflow; a value too small for a double gives a signed zero, as in Python.
inline bool decimal_to_double(const char* b, const char* e, double& out) {
#if BUDGETKERNEL_LIBSVM_FROM_CHARS
  const auto r = std::from_chars(b, e, out, std::chars_format::general);
  if (r.ec == std::errc() && r.ptr == e) return true;
  if (r.ec != std::errc::result_out_of_range) return false;  // not after the caller's syntax check
  // result_out_of_range: beyond the double range either way. The power of ten of the leading
  // significant digit tells which way (no double lies between the two cases).
  const bool neg = *b == '-';
  const char* p = neg ? b + 1 : b;
  std::int64_t int_digits = 0;  // integer digits from the first nonzero one
  std::int64_t frac_zeros = 0;  // zeros after the point before the first nonzero digit
  bool seen = false, in_frac = false;
  for (; p != e && *p != 'e' && *p != 'E'; ++p) {
    if (*p == '.') {
      in_frac = true;
    } else if (!in_frac) {
      if (seen || *p != '0') seen = true, ++int_digits;
    } else if (!seen) {
      if (*p != '0') seen = true;
      else ++frac_zeros;
    }
  }
  const std::int64_t lead = int_digits > 0 ? int_digits - 1 : -(frac_zeros + 1);
  std::int64_t exp10 = 0;
  if (p != e) {
    ++p;
    bool eneg = false;
    if (*p == '+' || *p == '-') eneg = *p++ == '-';
    for (; p != e; ++p) exp10 = (std::min)(exp10 * 10 + (*p - '0'), std::int64_t{1} << 40);  // saturates
    if (eneg) exp10 = -exp10;
  }
  if (seen && lead + exp10 > 0) return false;  // overflow
  out = neg ? -0.0 : 0.0;  // underflow
  return true;
#else
  // strtod needs a terminated string; tokens are short, so a stack buffer nearly always does.
  char small[64];
  std::string big;
  const std::size_t n = static_cast<std::size_t>(e - b);
  const char* s;
  if (n < sizeof small) {
    std::memcpy(small, b, n);
    small[n] = '\0';
    s = small;
  } else {
    big.assign(b, e);
    s = big.c_str();
  }
#if defined(_WIN32)
  static const _locale_t c_locale = _create_locale(LC_NUMERIC, "C");
  out = _strtod_l(s, nullptr, c_locale);
#else
  static const locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", static_cast<locale_t>(0));
  out = strtod_l(s, nullptr, c_locale);
#endif
  return std::isfinite(out);
#endif
}

/// A number as Python's float() reads it, minus digit separators (which LIBSVM has not).
inline FloatParse parse_float(const char* b, const char* e, double& out) {
  const char* p = b;
  if (p != e && (*p == '+' || *p == '-')) ++p;
  if (equals_nocase(p, e, "inf") || equals_nocase(p, e, "infinity") || equals_nocase(p, e, "nan"))
    return FloatParse::nonfinite;
  std::size_t n_digits = 0;
  while (p != e && is_digit(*p)) ++p, ++n_digits;
  if (p != e && *p == '.') {
    ++p;
    while (p != e && is_digit(*p)) ++p, ++n_digits;
  }
  if (n_digits == 0) return FloatParse::syntax;
  if (p != e && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p != e && (*p == '+' || *p == '-')) ++p;
    if (p == e || !is_digit(*p)) return FloatParse::syntax;
    while (p != e && is_digit(*p)) ++p;
  }
  if (p != e) return FloatParse::syntax;
  // from_chars takes '-' but not '+'.
  const char* start = *b == '+' ? b + 1 : b;
  return decimal_to_double(start, e, out) ? FloatParse::ok : FloatParse::nonfinite;
}

/// Length of the valid UTF-8 sequence at p (1 to 4), or 0 if it is not one (the rules of
/// Python's decoder: no overlong forms, no surrogates, nothing above U+10FFFF).
inline int utf8_sequence(const unsigned char* p, const unsigned char* e) {
  const unsigned char c = *p;
  if (c < 0x80) return 1;
  auto cont = [&](int i, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return p + i < e && p[i] >= lo && p[i] <= hi;
  };
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

inline bool has_high_byte(const char* b, const char* e) {
  for (; b != e; ++b)
    if (static_cast<unsigned char>(*b) >= 0x80) return true;
  return false;
}

inline bool valid_utf8(const char* b, const char* e) {
  auto p = reinterpret_cast<const unsigned char*>(b);
  const auto end = reinterpret_cast<const unsigned char*>(e);
  while (p != end) {
    const int n = utf8_sequence(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

/// No index twice. Files nearly always list indices in increasing order, which settles it in
/// one pass; otherwise a sorted copy (scratch is reused to avoid an allocation per line).
inline bool has_duplicate(const std::vector<std::int64_t>& idx, std::vector<std::int64_t>& scratch) {
  bool increasing = true;
  for (std::size_t i = 1; i < idx.size() && increasing; ++i) increasing = idx[i - 1] < idx[i];
  if (increasing) return false;
  scratch.assign(idx.begin(), idx.end());
  std::sort(scratch.begin(), scratch.end());
  return std::adjacent_find(scratch.begin(), scratch.end()) != scratch.end();
}

/// The common feature token, `digits:number` followed by a space or the end, in one sweep
/// (the general path finds the token's end, its ':', then checks each part). Returns false,
/// adding nothing, for anything else, which the general path then judges.
inline bool fast_feature(const char* p, const char* e, const char*& t, LibsvmLine& out) {
  const char* q = p;
  std::int64_t idx = 0;
  while (q != e && is_digit(*q) && q - p < 18) idx = idx * 10 + (*q++ - '0');  // < 10^18: no overflow
  if (q == p || q == e || *q != ':') return false;
  const char* v = ++q;
  if (q != e && (*q == '+' || *q == '-')) ++q;
  std::size_t n_digits = 0;
  while (q != e && is_digit(*q)) ++q, ++n_digits;
  if (q != e && *q == '.') {
    ++q;
    while (q != e && is_digit(*q)) ++q, ++n_digits;
  }
  if (n_digits == 0) return false;
  if (q != e && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q != e && (*q == '+' || *q == '-')) ++q;
    if (q == e || !is_digit(*q)) return false;
    while (q != e && is_digit(*q)) ++q;
  }
  if (q != e && !libsvm_space(static_cast<unsigned char>(*q))) return false;
  double x;
  if (!decimal_to_double(*v == '+' ? v + 1 : v, q, x)) return false;  // overflow: said by the general path
  out.indices.push_back(idx);
  out.values.push_back(x);
  t = q;
  return true;
}

/// The tokens of [b, e) up to the first error, in the order Python's reader checks them.
inline LibsvmStatus parse_tokens(const char* b, const char* e, LibsvmLine& out, std::vector<std::int64_t>& scratch) {
  auto skip_space = [&](const char* p) {
    while (p != e && libsvm_space(static_cast<unsigned char>(*p))) ++p;
    return p;
  };
  auto token_end = [&](const char* p) {
    while (p != e && !libsvm_space(static_cast<unsigned char>(*p))) ++p;
    return p;
  };
  const char* p = skip_space(b);
  if (p == e) return LibsvmStatus::ok;  // blank
  out.blank = false;
  const char* t = token_end(p);
  if (std::memchr(p, ':', static_cast<std::size_t>(t - p))) return LibsvmStatus::missing_label;
  if (integer_syntax(p, t)) {
    const IntFit fit = parse_int64(p, t, out.label_int);
    if (fit == IntFit::fits) {
      out.label_is_int = true;
      out.label = static_cast<double>(out.label_int);  // round to nearest, as Python's float(int)
    } else {
      double v;
      if (!decimal_to_double(*p == '+' ? p + 1 : p, t, v)) return LibsvmStatus::nonfinite_label;
      out.label = v;
    }
  } else {
    double v;
    const FloatParse r = parse_float(p, t, v);
    if (r == FloatParse::syntax) return LibsvmStatus::bad_label;
    if (r == FloatParse::nonfinite) return LibsvmStatus::nonfinite_label;
    out.label = v;
  }
  for (p = skip_space(t); p != e; p = skip_space(t)) {
    if (fast_feature(p, e, t, out)) continue;
    t = token_end(p);
    const char* colon = static_cast<const char*>(std::memchr(p, ':', static_cast<std::size_t>(t - p)));
    if (!colon) return LibsvmStatus::missing_colon;
    if (colon - p == 3 && std::memcmp(p, "qid", 3) == 0) {
      if (!integer_syntax(colon + 1, t)) return LibsvmStatus::bad_qid;
      continue;
    }
    if (!integer_syntax(p, colon)) return LibsvmStatus::bad_index;
    std::int64_t idx = 0;
    const IntFit fit = parse_int64(p, colon, idx);
    if (fit == IntFit::below || (fit == IntFit::fits && idx < 0)) return LibsvmStatus::negative_index;
    if (fit == IntFit::above) return LibsvmStatus::index_too_large;
    double v;
    const FloatParse r = parse_float(colon + 1, t, v);
    if (r == FloatParse::syntax) return LibsvmStatus::bad_value;
    if (r == FloatParse::nonfinite) return LibsvmStatus::nonfinite_value;
    out.indices.push_back(idx);
    out.values.push_back(v);
  }
  if (has_duplicate(out.indices, scratch)) return LibsvmStatus::duplicate_index;
  return LibsvmStatus::ok;
}

}  // namespace detail

/// Parses one line [first, last) without its line terminator.
/// \param scratch reusable buffer for the duplicate check (kept by the caller to avoid
///        allocations per line).
/// \return ok (then `out.blank` says whether the line holds a row) or why it was rejected.
///         Lines with bytes >= 0x80 outside the comment give LibsvmStatus::non_ascii when
///         they do not parse (Unicode spaces or digits would need Python's rules).
inline LibsvmStatus parse_libsvm_line(const char* first, const char* last, LibsvmLine& out,
                                      std::vector<std::int64_t>& scratch) {
  out.blank = true;
  out.label_is_int = false;
  out.indices.clear();
  out.values.clear();
  const char* hash = static_cast<const char*>(std::memchr(first, '#', static_cast<std::size_t>(last - first)));
  const char* data_end = hash ? hash : last;
  const LibsvmStatus s = detail::parse_tokens(first, data_end, out, scratch);
  if (s != LibsvmStatus::ok) {
    // A non-ASCII byte always fails the ASCII grammar above; whether Python's rules (Unicode
    // spaces and digits) accept the line is for the caller to decide.
    if (detail::has_high_byte(first, data_end)) return LibsvmStatus::non_ascii;
    return s;
  }
  if (hash && detail::has_high_byte(hash, last) && !detail::valid_utf8(hash, last)) return LibsvmStatus::invalid_utf8;
  return LibsvmStatus::ok;
}

/// What the rows are read into; check_libsvm_row() enforces it before LibsvmRows stores a row.
struct LibsvmLayout {
  std::int64_t n_features = 0;
  std::int64_t offset = 1;            ///< 1: one-based indices (index 1 is column 0), 0: zero-based
  bool integer_labels = false;         ///< reject float labels (an integer label type)
  std::int64_t label_int_min = (std::numeric_limits<std::int64_t>::min)();  ///< bounds of integer labels
  std::int64_t label_int_max = (std::numeric_limits<std::int64_t>::max)();
  double label_max = std::numeric_limits<double>::infinity();  ///< |float label| bound (float labels)
  double value_max = std::numeric_limits<double>::infinity();  ///< |value| bound, e.g. FLT_MAX for float32
};

/// Checks a parsed row against a layout, in the order the Python reader does.
inline LibsvmStatus check_libsvm_row(const LibsvmLine& line, const LibsvmLayout& layout) {
  if (line.label_is_int) {
    if (line.label_int < layout.label_int_min || line.label_int > layout.label_int_max)
      return LibsvmStatus::label_out_of_range;
  } else {
    if (layout.integer_labels) return LibsvmStatus::non_integer_label;
    if (!(std::fabs(line.label) <= layout.label_max)) return LibsvmStatus::label_out_of_range;
  }
  for (const std::int64_t i : line.indices) {
    if (i < layout.offset) return LibsvmStatus::zero_index_one_based;
    if (i - layout.offset >= layout.n_features) return LibsvmStatus::index_beyond_n_features;
  }
  for (const double v : line.values)
    if (std::fabs(v) > layout.value_max) return LibsvmStatus::value_out_of_range;
  return LibsvmStatus::ok;
}

/// What LibsvmParser::next() found.
enum class LibsvmNext {
  row,         ///< a parsed row (blank and comment lines are skipped)
  need_input,  ///< no complete line left: feed() more bytes, or finish()
  end,         ///< finish() was called and every line was handed out
  rejected,    ///< the line was rejected: status(), line_number() and line_text() say which
};

/// Push parser of LIBSVM text: feed() blocks of any size, then call next() until it asks for
/// more input. Only complete lines are parsed, so a line may span any number of blocks; the
/// memory held is the unparsed tail (at most one block plus the longest line). A rejected
/// line is consumed like any other: next() continues with the following line.
class LibsvmParser {
 public:
  /// Appends bytes. Invalidates line_text().
  void feed(const char* data, std::size_t n) {
    detail::require(!m_finished, "LibsvmParser::feed after finish");
    // Drop what was parsed once it is at least half the buffer: amortised O(1) per byte,
    // and a line that spans many blocks is not moved again and again.
    if (m_pos > 0 && m_pos >= m_buf.size() - m_pos) {
      m_buf.erase(m_buf.begin(), m_buf.begin() + static_cast<std::ptrdiff_t>(m_pos));
      rebase(m_nl, m_nl_scanned);
      rebase(m_cr, m_cr_scanned);
      m_pos = 0;
    }
    m_buf.insert(m_buf.end(), data, data + n);
  }
  /// No more input: a last line without terminator is complete.
  void finish() { m_finished = true; }

  /// The next row, or why there is none.
  LibsvmNext next(LibsvmLine& line) {
    for (;;) {
      if (m_skip_lf) {  // the line before ended with CR: a LF right after belongs to it
        if (m_pos == m_buf.size() && !m_finished) return LibsvmNext::need_input;
        if (m_pos < m_buf.size() && m_buf[m_pos] == '\n') ++m_pos;
        m_skip_lf = false;
      }
      if (!m_bom_checked) {
        if (m_buf.size() - m_pos < 3 && !m_finished) return LibsvmNext::need_input;
        if (m_buf.size() - m_pos >= 3 && std::memcmp(m_buf.data() + m_pos, "\xef\xbb\xbf", 3) == 0) m_pos += 3;
        m_bom_checked = true;
      }
      if (m_pos == m_buf.size()) return m_finished ? LibsvmNext::end : LibsvmNext::need_input;
      std::size_t stop = (std::min)(find('\n', m_nl, m_nl_scanned), find('\r', m_cr, m_cr_scanned));
      if (stop == npos) {
        if (!m_finished) return LibsvmNext::need_input;
        stop = m_buf.size();
      }
      m_line_begin = m_pos;
      m_line_end = stop;
      ++m_line;
      m_pos = stop;
      if (stop < m_buf.size()) {
        ++m_pos;
        m_skip_lf = m_buf[stop] == '\r';
      }
      const char* base = m_buf.data();
      m_status = parse_libsvm_line(base + m_line_begin, base + m_line_end, line, m_scratch);
      if (m_status != LibsvmStatus::ok) return LibsvmNext::rejected;
      if (!line.blank) return LibsvmNext::row;
    }
  }

  /// Why the last line handed out was rejected (ok after a row).
  LibsvmStatus status() const { return m_status; }
  /// One-based number of the last line handed out (row or rejected).
  std::int64_t line_number() const { return m_line; }
  /// The bytes of that line, without terminator (and without a byte order mark); valid until
  /// the next feed().
  std::string_view line_text() const {
    return std::string_view(m_buf.data() + m_line_begin, m_line_end - m_line_begin);
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  /// Moves a cached terminator position when the first m_pos bytes are dropped.
  void rebase(std::size_t& cached, std::size_t& scanned) {
    if (cached != npos && cached >= m_pos) {
      cached -= m_pos;
      scanned = cached;
    } else if (cached == npos) {
      scanned = scanned >= m_pos ? scanned - m_pos : 0;
    } else {  // behind the parsed part: stale
      cached = npos;
      scanned = 0;
    }
  }

  /// Position of the next c at or after m_pos, or npos; remembers it (and how far the
  /// buffer was searched) so that a file of CR-only lines is not rescanned for LF per line.
  std::size_t find(char c, std::size_t& cached, std::size_t& scanned) {
    if (cached != npos && cached >= m_pos) return cached;
    const std::size_t from = (std::max)(m_pos, scanned);
    const void* q = from < m_buf.size() ? std::memchr(m_buf.data() + from, c, m_buf.size() - from) : nullptr;
    if (q) {
      cached = static_cast<std::size_t>(static_cast<const char*>(q) - m_buf.data());
      scanned = cached;
    } else {
      cached = npos;
      scanned = m_buf.size();
    }
    return cached;
  }

  std::vector<char> m_buf;
  std::size_t m_pos = 0;
  std::size_t m_nl = npos, m_cr = npos, m_nl_scanned = 0, m_cr_scanned = 0;
  std::size_t m_line_begin = 0, m_line_end = 0;
  std::int64_t m_line = 0;
  bool m_finished = false, m_bom_checked = false, m_skip_lf = false;
  LibsvmStatus m_status = LibsvmStatus::ok;
  std::vector<std::int64_t> m_scratch;
};

/// What a first pass learns about a file: enough to choose n_features, the index base and
/// the label type before reading it.
struct LibsvmSummary {
  std::int64_t rows = 0;
  std::int64_t min_index = -1;  ///< -1: no feature at all
  std::int64_t max_index = -1;
  bool all_integer_labels = true;

  /// Adds a row (already checked).
  void add(const LibsvmLine& line) {
    ++rows;
    all_integer_labels = all_integer_labels && line.label_is_int;
    for (const std::int64_t i : line.indices) {
      if (min_index < 0 || i < min_index) min_index = i;
      if (i > max_index) max_index = i;
    }
  }
};

/// The checked rows of one chunk in compressed sparse form, scattered into dense arrays by
/// to_dense(). Buffers are kept across clear(), so a stream of chunks allocates once.
class LibsvmRows {
 public:
  void clear() {
    m_labels.clear();
    m_label_ints.clear();
    m_label_is_int.clear();
    m_lines.clear();
    m_cols.clear();
    m_values.clear();
    m_row_end.clear();
  }
  Index size() const { return static_cast<Index>(m_labels.size()); }

  /// Appends a row that passed check_libsvm_row() for this offset and n_features.
  void append(const LibsvmLine& line, std::int64_t offset, std::int64_t line_number) {
    m_labels.push_back(line.label);
    m_label_ints.push_back(line.label_is_int ? line.label_int : 0);
    m_label_is_int.push_back(line.label_is_int ? 1 : 0);
    m_lines.push_back(line_number);
    for (std::size_t k = 0; k < line.indices.size(); ++k) {
      m_cols.push_back(line.indices[k] - offset);
      m_values.push_back(line.values[k]);
    }
    m_row_end.push_back(static_cast<std::int64_t>(m_cols.size()));
  }

  /// Writes the rows into X (size() rows x n_features, row-major, already zero), converting
  /// values to Scalar by rounding to nearest (the caller bounded them; -0.0 stays -0.0).
  template <class Scalar>
  void to_dense(Scalar* X, std::int64_t n_features) const {
    std::int64_t k = 0;
    for (std::size_t r = 0; r < m_row_end.size(); ++r) {
      Scalar* row = X + static_cast<std::ptrdiff_t>(r) * n_features;
      for (; k < m_row_end[r]; ++k) row[m_cols[static_cast<std::size_t>(k)]] = static_cast<Scalar>(m_values[static_cast<std::size_t>(k)]);
    }
  }

  const std::vector<double>& labels() const { return m_labels; }                 ///< every label as a double
  const std::vector<std::int64_t>& label_ints() const { return m_label_ints; }   ///< integer labels (0 where float)
  const std::vector<unsigned char>& label_is_int() const { return m_label_is_int; }
  const std::vector<std::int64_t>& line_numbers() const { return m_lines; }    ///< one-based file line of each row

 private:
  std::vector<double> m_labels;
  std::vector<std::int64_t> m_label_ints;
  std::vector<unsigned char> m_label_is_int;
  std::vector<std::int64_t> m_lines;
  std::vector<std::int64_t> m_cols;
  std::vector<double> m_values;
  std::vector<std::int64_t> m_row_end;
};

namespace detail {

/// Feeds the parser from a stream when it asks for input; false once the stream is done.
inline void refill(std::istream& in, LibsvmParser& parser, std::vector<char>& block) {
  in.read(block.data(), static_cast<std::streamsize>(block.size()));
  const std::streamsize got = in.gcount();
  if (got > 0) parser.feed(block.data(), static_cast<std::size_t>(got));
  if (got < static_cast<std::streamsize>(block.size())) {
    if (in.bad()) throw std::runtime_error("error reading LIBSVM input");
    parser.finish();
  }
}

}  // namespace detail

/// First pass over a LIBSVM stream: validates every line and summarises the file.
/// \param in the text (not compressed); read to its end.
/// \param one_based reject index 0 (a file known to be one-based).
/// \throws LibsvmFormatError naming the first rejected line.
inline LibsvmSummary scan_libsvm(std::istream& in, bool one_based = false) {
  LibsvmParser parser;
  LibsvmLine line;
  LibsvmSummary summary;
  std::vector<char> block(std::size_t{1} << 20);
  for (;;) {
    const LibsvmNext r = parser.next(line);
    if (r == LibsvmNext::end) return summary;
    if (r == LibsvmNext::need_input) {
      detail::refill(in, parser, block);
    } else if (r == LibsvmNext::rejected) {
      throw LibsvmFormatError(parser.line_number(), parser.status());
    } else {
      if (one_based && std::find(line.indices.begin(), line.indices.end(), 0) != line.indices.end())
        throw LibsvmFormatError(parser.line_number(), LibsvmStatus::zero_index_one_based);
      summary.add(line);
    }
  }
}

/// The layout that reads a scanned file as the Python reader's defaults do: zero-based iff
/// index 0 occurs, n_features from the largest index, integer labels iff every label is one.
inline LibsvmLayout libsvm_layout(const LibsvmSummary& s) {
  LibsvmLayout layout;
  layout.offset = s.min_index == 0 ? 0 : 1;
  layout.n_features = s.max_index < 0 ? 0 : s.max_index - layout.offset + 1;
  layout.integer_labels = s.all_integer_labels;
  return layout;
}

/// Reads a LIBSVM stream in dense chunks of a fixed layout (a single pass).
class LibsvmReader {
 public:
  /// \param in the text (not compressed), read block by block.
  /// \param layout n_features, index base and bounds every row must satisfy.
  LibsvmReader(std::istream& in, const LibsvmLayout& layout) : m_in(in), m_layout(layout), m_block(std::size_t{1} << 20) {
    detail::require(layout.n_features >= 0, "LibsvmReader: n_features must be non-negative");
    detail::require(layout.offset == 0 || layout.offset == 1, "LibsvmReader: offset must be 0 or 1");
  }

  /// Reads up to max_rows rows.
  /// \param X resized to (rows, n_features), the values of the rows.
  /// \param y resized to (rows), the labels.
  /// \param lines if not null, receives the one-based file line of each row.
  /// \return the number of rows read; 0 at the end of the stream.
  /// \throws LibsvmFormatError naming the first rejected line.
  Index read_chunk(Index max_rows, RowMatrix& X, Vector& y, std::vector<std::int64_t>* lines = nullptr) {
    detail::require(max_rows > 0, "LibsvmReader::read_chunk: max_rows must be positive");
    m_rows.clear();
    while (m_rows.size() < max_rows) {
      const LibsvmNext r = m_parser.next(m_line);
      if (r == LibsvmNext::end) break;
      if (r == LibsvmNext::need_input) {
        detail::refill(m_in, m_parser, m_block);
        continue;
      }
      if (r == LibsvmNext::rejected) throw LibsvmFormatError(m_parser.line_number(), m_parser.status());
      const LibsvmStatus s = check_libsvm_row(m_line, m_layout);
      if (s != LibsvmStatus::ok) throw LibsvmFormatError(m_parser.line_number(), s);
      m_rows.append(m_line, m_layout.offset, m_parser.line_number());
    }
    const Index n = m_rows.size();
    X.setZero(n, static_cast<Index>(m_layout.n_features));
    m_rows.to_dense(X.data(), m_layout.n_features);
    y = Eigen::Map<const Vector>(m_rows.labels().data(), n);
    if (lines) *lines = m_rows.line_numbers();
    return n;
  }

 private:
  std::istream& m_in;
  LibsvmLayout m_layout;
  LibsvmParser m_parser;
  LibsvmLine m_line;
  LibsvmRows m_rows;
  std::vector<char> m_block;
};

}  // namespace budgetkernel
