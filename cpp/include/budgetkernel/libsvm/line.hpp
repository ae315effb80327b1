#pragma once
/// \file libsvm/line.hpp
/// The line grammar of the LIBSVM / svmlight format, `label [qid:q] index:value ... [# comment]`:
/// parse_libsvm_line() checks and converts one line, check_libsvm_row() checks a parsed row
/// against the shape the rows are read into (LibsvmLayout), and LibsvmStatus says why a line
/// was rejected. The numbers inside the tokens are read by libsvm/numbers.hpp.
///
/// What a line may hold is exactly what the Python reader (budgetkernel.io) accepts:
///   - tokens are separated by ASCII whitespace (also the control bytes 0x1c-0x1f, which
///     Python's str.split() counts as whitespace); `#` starts a comment anywhere;
///   - a label written as an integer (`[+-]digits`) is an integer label if it fits int64,
///     else a float label; any other label, and every value, is a decimal;
///   - an index is `[+-]digits` (leading zeros allowed) between 0 and 2^63 - 1; `qid:` tokens
///     need an integer and are ignored; an index may occur once per line;
///   - the text must be UTF-8; bytes >= 0x80 are only accepted inside comments
///     (LibsvmStatus::non_ascii otherwise: Python's reader handles those lines itself, since
///     it also accepts Unicode digits and spaces there).

#include "numbers.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

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
/// \param s  a status.
/// \return its description, e.g. "non-numeric label".
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

/// The label token [p, t): an integer label if written as an integer that fits int64, else a
/// double.
inline LibsvmStatus parse_label(const char* p, const char* t, LibsvmLine& out) {
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
  return LibsvmStatus::ok;
}

/// A token [p, t) after the label that fast_feature() did not take: a `qid:` (checked, then
/// ignored) or a feature, judged part by part in the order Python's reader checks them.
inline LibsvmStatus parse_feature(const char* p, const char* t, LibsvmLine& out) {
  const char* colon = static_cast<const char*>(std::memchr(p, ':', static_cast<std::size_t>(t - p)));
  if (!colon) return LibsvmStatus::missing_colon;
  if (colon - p == 3 && std::memcmp(p, "qid", 3) == 0) {
    if (!integer_syntax(colon + 1, t)) return LibsvmStatus::bad_qid;
    return LibsvmStatus::ok;
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
  return LibsvmStatus::ok;
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
  const LibsvmStatus label = parse_label(p, t, out);
  if (label != LibsvmStatus::ok) return label;
  for (p = skip_space(t); p != e; p = skip_space(t)) {
    if (fast_feature(p, e, t, out)) continue;
    t = token_end(p);
    const LibsvmStatus s = parse_feature(p, t, out);
    if (s != LibsvmStatus::ok) return s;
  }
  if (has_duplicate(out.indices, scratch)) return LibsvmStatus::duplicate_index;
  return LibsvmStatus::ok;
}

}  // namespace detail

/// Parses one line [first, last) without its line terminator.
/// \param first  the line's first byte.
/// \param last   one past its last byte.
/// \param out    receives the label and the (index, value) pairs.
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
/// \param line    a row parse_libsvm_line accepted.
/// \param layout  the bounds it must satisfy.
/// \return ok, or the first rule it breaks.
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

}  // namespace budgetkernel
