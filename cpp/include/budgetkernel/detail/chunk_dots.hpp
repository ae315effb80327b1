#pragma once
/// \file detail/chunk_dots.hpp
/// Learning a chunk with blocked dot products, exactly.
///
/// Learning is a loop over examples, and each step asks for its example's kernel row against
/// the SVs of that moment. Alone, that row streams the whole SV block per example, below the
/// rate of detail::dot_rows over a block of rows (register tiles). So a store, asked for the
/// kernel row of the chunk row the chunk loop is learning now, computes the dot products of
/// the next T rows with its SVs in one dot_rows call (a block), and answers the following
/// rows' requests from it: a slot whose point has not changed since the block began takes its
/// precomputed dot (a point moved by erase's swap-with-last takes its old slot's), and a slot
/// given a new point (push, set_x) gets a column of its own, its dots with the block's
/// remaining rows, computed by the same routine at its first request. Every value of dot_rows
/// depends on its two rows only (detail/dot_block.hpp), so each dot product, hence the whole
/// learning run, is the one of the row-by-row loop, bit for bit.
///
/// Who is asking is decided by pointer identity: OnlineLearner::partial_fit publishes the
/// chunk and its current row for its thread (ChunkScope), and SupportVectors::kernel_row (or
/// dots) takes the block path only for a query whose data is that row. Every other query (a
/// merged point z, an SV's own row, a copy of x) computes as before. Each store keeps its own
/// block (an averaged model's retired store too), started lazily at its first such query, so
/// the chunk loop needs to know nothing about the learner's stores.
///
/// Block size T. Measured (the issue-29 chunk-dots report: a microbenchmark of dot_rows and
/// partial_fit of BSGD-merge and BPA-NN at d = 32, 64, 784, B = 100, 500, AVX2 + FMA): the
/// blocked cost per dot product is flat from T = 3 on (one register tile of rows), so a
/// longer block buys only fewer block starts (a fixed cost of order n: the bookkeeping reset
/// and the call), while a slot changed inside the block costs a column over its remaining
/// rows, about T / 2 dot products of d features. With u new points per learned row (about 1
/// for a learner that adds or merges an SV at every step, near 0 for one that rarely updates),
/// the cost per row is k n / T + u T d / 2 (k the per-SV start cost in units of one
/// multiply-add), minimal at T = sqrt(2 k n / (u d)); with k fitted to those measurements,
/// the rule is T = sqrt(64 n / (u d)), u from the previous block, clamped to [3, 48] and to
/// about 1 MiB of dots (as detail::for_row_blocks). The throughputs did not depend on T
/// within the measurement noise except at its ends (T = 48 with u ~ 1 at d = 784 was slower).
///
/// Where blocks pay: from detail::kDotBlockMinDim features on (below, Kernel::dots has per-row
/// code of its own), for stores beyond L1 (kChunkDotsMinValues), and in builds whose tiles
/// fuse multiply-adds (kChunkDotsPay).

#include "../common.hpp"
#include "dot_block.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

namespace budgetkernel {
namespace detail {

/// Stores of fewer values (SVs x features) compute kernel rows one at a time: their points fit
/// in a 32 KiB L1 data cache, where a single row already runs at the blocked rate (measured at
/// d = 32, 64, 256, 784 with 8 to 500 SVs; see the file comment) and a block only adds its
/// bookkeeping.
inline constexpr Index kChunkDotsMinValues = 4096;

/// Whether blocks pay in this build: with fused multiply-adds. Without them (the baseline
/// x86-64 build, SSE2) blocks of rows measured slower than single rows in the same
/// microbenchmark, likely because each packet product then needs one register more than the
/// 3 x 4 tile leaves of the 16; that build therefore learns row by row as before.
#if defined(EIGEN_VECTORIZE_FMA) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
inline constexpr bool kChunkDotsPay = true;
#else
inline constexpr bool kChunkDotsPay = false;
#endif

/// The chunk a thread is learning and its current row (published by ChunkScope).
struct ChunkRows {
  const double* X = nullptr;
  Index ldx = 0, rows = 0, cols = 0;
  std::uint64_t serial = 0;  // unique per chunk loop, so a block never outlives its chunk
  Index row = -1;            // the row being learned
  const double* row_data() const { return X + row * ldx; }
};

/// Blocks started on this thread (for tests: that the block path runs at all).
inline std::uint64_t& chunk_blocks_started() {
  thread_local std::uint64_t n = 0;
  return n;
}

/// The chunk this thread is learning now (null outside a chunk loop).
inline const ChunkRows*& current_chunk() {
  thread_local const ChunkRows* c = nullptr;
  return c;
}

/// Publishes a chunk for the duration of a chunk loop (restoring the previous one after, for
/// a loop inside another's step); `publish` false: publishes nothing. at(i) before learning
/// row i.
class ChunkScope {
 public:
  ChunkScope(const double* X, Index ldx, Index rows, Index cols, bool publish = true) : m_prev(current_chunk()) {
    if (!publish) return;
    static std::atomic<std::uint64_t> serial{0};
    m_rows.X = X;
    m_rows.ldx = ldx;
    m_rows.rows = rows;
    m_rows.cols = cols;
    m_rows.serial = ++serial;
    current_chunk() = &m_rows;
  }
  ChunkScope(const ChunkScope&) = delete;
  ChunkScope& operator=(const ChunkScope&) = delete;
  ~ChunkScope() { current_chunk() = m_prev; }

  void at(Index i) { m_rows.row = i; }

 private:
  ChunkRows m_rows;
  const ChunkRows* m_prev;
};

/// A store's prefetch block: the dot products of rows [b0, b1) of a chunk with the SVs the
/// store held when the block began, and which slots changed since (see the file comment).
/// A changed slot gets a column of its own: its dots with the block's remaining rows, computed
/// at its first query. Copies start empty (a copied store then starts its own blocks), so
/// copying a store costs nothing extra.
class ChunkDots {
 public:
  ChunkDots() = default;
  ChunkDots(const ChunkDots&) {}
  ChunkDots& operator=(const ChunkDots&) {
    drop();
    return *this;
  }

  /// The store's point in `slot` is new (push, set_x).
  void changed(Index slot) {
    if (m_serial != 0) mark(slot, kNew);
  }
  /// erase(i): the point of slot `last` moved into slot i.
  void moved(Index i, Index last) {
    if (m_serial != 0 && i != last) mark(i, m_src[static_cast<std::size_t>(last)]);
  }
  /// Every slot may hold another point (clear, reset, assign).
  void drop() { m_serial = 0; }

  /// out[j] = x . S_j for j < n (n <= size, the store's size) when x is row c.row of chunk c,
  /// from the block (started here when needed). S: the store's points.
  void fill(const RowMatrix& S, Index size, Index n, const ChunkRows& c, double* out) {
    if (m_serial != c.serial || c.row < m_b0 || c.row >= m_b1) start(S, size, c);
    const Index r = c.row - m_b0;
    const double* drow = m_D.data() + r * m_n0;
    std::copy(drow, drow + (std::min)(n, m_n0), out);
    for (const Index j : m_dirty) {
      if (j >= n) continue;
      Index& s = m_src[static_cast<std::size_t>(j)];
      if (s == kNew) s = new_column(S, j, c);
      out[j] = s >= 0 ? drow[s] : m_E[static_cast<std::size_t>(column(s) * m_T + r)];
    }
  }

 private:
  // m_src codes: >= 0 a column of m_D, kNew a point without dots yet, <= -2 column -2 - s of m_E.
  static constexpr Index kNew = -1;
  static Index column(Index s) { return -2 - s; }

  void mark(Index slot, Index src) {
    const auto s = static_cast<std::size_t>(slot);
    if (s >= m_src.size()) {
      m_src.resize(2 * s + 2, kNew);
      m_listed.resize(2 * s + 2, 0);
    }
    if (!m_listed[s]) {
      m_listed[s] = 1;
      m_dirty.push_back(slot);
    }
    if (src == kNew) ++m_changed;
    m_src[s] = src;
  }

  /// The dots of the changed slot j with rows c.row..b1-1 in one call (same values as
  /// single rows); returns its m_src code.
  Index new_column(const RowMatrix& S, Index j, const ChunkRows& c) {
    const Index k = m_columns++, d = S.cols(), r = c.row - m_b0;
    const auto need = static_cast<std::size_t>(m_columns * m_T);
    if (m_E.size() < need) m_E.resize(2 * need);
    dot_rows(c.row_data(), c.ldx, m_b1 - c.row, S.data() + j * d, d, 1, d, m_E.data() + k * m_T + r, 1);
    return -2 - k;
  }

  /// A new block from row c.row: T from the change rate of the previous one (file comment).
  void start(const RowMatrix& S, Index n, const ChunkRows& c) {
    if (m_serial == c.serial && m_b0 < c.row)
      m_rate = static_cast<double>(m_changed) / static_cast<double>(c.row - m_b0);
    const double u = (std::max)(m_rate, 1e-3);
    const double t = std::sqrt(64.0 * static_cast<double>(n) / (static_cast<double>(S.cols()) * u));
    Index T = std::clamp(static_cast<Index>(t), Index{3}, Index{48});
    T = (std::min)({T, c.rows - c.row, (std::max)(Index{1}, (Index{1} << 17) / n)});
    if (m_D.size() < static_cast<std::size_t>(T * n)) m_D.resize(static_cast<std::size_t>(T * n));
    dot_rows(c.row_data(), c.ldx, T, S.data(), S.cols(), n, S.cols(), m_D.data(), n);
    for (const Index j : m_dirty) m_listed[static_cast<std::size_t>(j)] = 0;
    m_dirty.clear();
    if (m_src.size() < static_cast<std::size_t>(n)) {
      m_src.resize(static_cast<std::size_t>(n));
      m_listed.resize(static_cast<std::size_t>(n), 0);
    }
    for (Index j = 0; j < n; ++j) m_src[static_cast<std::size_t>(j)] = j;
    m_serial = c.serial;
    m_b0 = c.row;
    m_b1 = c.row + T;
    m_T = T;
    m_n0 = n;
    m_changed = 0;
    m_columns = 0;
    ++chunk_blocks_started();
  }

  std::vector<double> m_D;     // (b1 - b0) x n0 dots of the block's SVs, row-major
  std::vector<double> m_E;     // columns of T dots of changed slots (rows before the change unused)
  std::vector<Index> m_src;    // slot -> where its point's dots are (codes above)
  std::vector<char> m_listed;  // slot is in m_dirty
  std::vector<Index> m_dirty;  // slots whose m_src is not the slot itself
  std::uint64_t m_serial = 0;  // the chunk of the block (0: no block)
  Index m_b0 = 0, m_b1 = 0, m_T = 0, m_n0 = 0;
  Index m_changed = 0;  // slots given a new point in this block
  Index m_columns = 0;  // columns of m_E in use
  double m_rate = 1.0;  // new points per row in the previous block
};

}  // namespace detail
}  // namespace budgetkernel
