#pragma once
/// \file libsvm/numbers.hpp
/// The number syntax of the LIBSVM reader (libsvm.hpp), converted exactly as Python's int()
/// and float() do so that the C++ and the Python reader give the same bits, and the UTF-8
/// check of the text:
///   - an integer (label, index, qid) is `[+-]digits`, leading zeros allowed; parse_int64()
///     says whether it fits int64, or lies above or below it;
///   - a decimal (value, non-integer label) is `[+-]` digits with an optional `.` and fraction
///     (at least one digit in all), then an optional exponent `e[+-]digits`; it is correctly
///     rounded to the nearest double (values too small for a double become a signed zero);
///     `inf`, `nan` and values beyond the double range are non-finite, digit separators
///     (`1_0`) and hexadecimal are syntax errors;
///   - UTF-8 is valid as Python's decoder has it: no overlong forms, no surrogates, nothing
///     above U+10FFFF.
/// All of it is in budgetkernel::detail; the line grammar that uses it is libsvm/line.hpp.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>

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
namespace detail {

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

#if BUDGETKERNEL_LIBSVM_FROM_CHARS
/// For a decimal that from_chars found out of range: true if it lies beyond the double range,
/// false if below the smallest subnormal. The power of ten of the leading significant digit
/// tells which way (no double lies between the two cases).
inline bool decimal_overflows(const char* b, const char* e) {
  const char* p = *b == '-' ? b + 1 : b;
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
  return seen && lead + exp10 > 0;
}
#else
/// strtod of [b, e) in the "C" locale (strtod needs a terminated string; tokens are short, so
/// a stack buffer nearly always does).
inline double strtod_c_locale(const char* b, const char* e) {
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
  return _strtod_l(s, nullptr, c_locale);
#else
  static const locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", static_cast<locale_t>(0));
  return strtod_l(s, nullptr, c_locale);
#endif
}
#endif

/// Decimal to the nearest double (syntax already checked: [-]digits[.digits][e[+-]digits]).
/// Returns false on overflow; a value too small for a double gives a signed zero, as in Python.
inline bool decimal_to_double(const char* b, const char* e, double& out) {
#if BUDGETKERNEL_LIBSVM_FROM_CHARS
  const auto r = std::from_chars(b, e, out, std::chars_format::general);
  if (r.ec == std::errc() && r.ptr == e) return true;
  if (r.ec != std::errc::result_out_of_range) return false;  // not after the caller's syntax check
  // result_out_of_range: beyond the double range either way.
  if (decimal_overflows(b, e)) return false;
  out = *b == '-' ? -0.0 : 0.0;  // underflow
  return true;
#else
  out = strtod_c_locale(b, e);
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

}  // namespace detail
}  // namespace budgetkernel
