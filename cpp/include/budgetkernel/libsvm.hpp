#pragma once
/// \file libsvm.hpp
/// Reading the LIBSVM / svmlight text format: `label [qid:q] index:value ... [# comment]`.
/// This header is the entry point; it includes the other layers, each usable on its own:
///   - libsvm/numbers.hpp: integers and decimals read exactly as Python's int() and float()
///     (so that this reader and the Python one give the same bits), and the UTF-8 check;
///   - libsvm/line.hpp: the line grammar: parse_libsvm_line() checks and converts one line,
///     check_libsvm_row() checks it against a LibsvmLayout, LibsvmStatus says why not;
///   - libsvm/parser.hpp: LibsvmParser, a push parser that takes byte blocks in any sizes and
///     hands out the rows of complete lines;
///   - here: LibsvmRows collects checked rows of one chunk and scatters them into a dense
///     row-major array; scan_libsvm() and LibsvmReader do the two passes over a std::istream.
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
#include "libsvm/numbers.hpp"
#include "libsvm/line.hpp"
#include "libsvm/parser.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

namespace budgetkernel {

/// A rejected line, as thrown by scan_libsvm() and LibsvmReader.
class LibsvmFormatError : public std::invalid_argument {
 public:
  /// \param line one-based line number of the rejected line.
  /// \param status what is wrong with it (its message is describe(status)).
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

/// What a first pass learns about a file: enough to choose n_features, the index base and
/// the label type before reading it.
struct LibsvmSummary {
  std::int64_t rows = 0;
  std::int64_t min_index = -1;  ///< -1: no feature at all
  std::int64_t max_index = -1;
  bool all_integer_labels = true;

  /// Adds a row (already checked).
  /// \param line  the parsed row.
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
  /// \param line         the parsed row.
  /// \param offset       the index base (0 or 1), subtracted from its feature indices.
  /// \param line_number  its one-based line in the file, for messages about it later.
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
  /// \tparam Scalar     double or float.
  /// \param X           size() x n_features values, zeroed by the caller.
  /// \param n_features  the row stride of X.
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
/// \return the row count, the smallest and largest feature index and whether every label is
///         an integer.
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
/// \param s  the summary of scan_libsvm().
/// \return the layout to pass to LibsvmReader.
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
  /// \param max_rows the most rows to read, > 0.
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
