#pragma once
/// \file libsvm/parser.hpp
/// LibsvmParser, the push parser of LIBSVM text: it takes byte blocks in any sizes, splits
/// complete lines (LF, CRLF or a lone CR), numbers them, skips a leading UTF-8 byte order mark,
/// blank and comment lines, and hands out rows parsed by parse_libsvm_line() (libsvm/line.hpp)
/// or the reason a line was rejected. It reads no input itself: libsvm.hpp feeds it from a
/// std::istream, the Python binding (_core.LibsvmPass) with blocks that Python read.

#include "../common.hpp"
#include "line.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace budgetkernel {

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

}  // namespace budgetkernel
