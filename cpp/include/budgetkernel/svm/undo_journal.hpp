#pragma once
/// \file svm/undo_journal.hpp
/// The undo journal of IncrementalSVM (svm/incremental_svm.hpp): what makes every operation
/// strongly exception-safe and lets several operations form one transaction.
///
/// An operation changes far less than the whole state, so the journal records the changes as
/// they happen instead of copying the object:
///  - Push: a new row (O(1) to pop);
///  - Erase: a removed row, O(d + |S|) values, re-inserted with its index-map node;
///  - Weight: an old weight;
///  - QRow / QCol: the entries of Q_{:,S} about to be overwritten (learn's row of the new
///    example, O(|S|); the column a migration overwrites, O(N), once per column while the rows
///    stay put);
///  - Snapshot: once per transaction, before its first path or repair, what those do not cover:
///    alpha, g, weights, sets, slots, S, R, b, C and the counters. O(|S|^2 + N), within the
///    cost of one migration (an O(|S|^2) update of R), into buffers grown to the machine's
///    capacities and reused.
/// The rows' x, y and keys, the index map, the next key and the kernel scale are never copied:
/// only pushes and erases change them. The fast paths take no snapshot at all (a new example
/// that goes straight to R, unlearning an example with alpha = 0 outside S, a weight change
/// that moves no alpha). Replayed in reverse order (undo), every entry gets back what it
/// overwrote, allocating nothing.
///
/// The operations on the machine are templates over its type M (IncrementalSVM, which makes
/// this struct a friend) only so that they can be written before that class is.

#include "idsvm_types.hpp"

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

namespace budgetkernel {
namespace detail {

/// What the open transaction changed, undone in reverse order by undo(). Later paths of a
/// transaction need no second snapshot: undoing the entries made after it takes the rows and
/// the index back to that moment, and the snapshot restores the rest. Q_{:,S} is journaled
/// write by write instead of copied: a migration writes one column, while a copy of Q_{:,S}
/// costs O(N |S|) per operation (see docs/idsvm.md). A column is saved only at its first write
/// while the rows stay where they are (between two pushes or erases, see `stamp`): no undo step
/// reads a column between its later writes, so its first content is all the undo needs, and a
/// transaction's column saves never exceed one copy of Q_{:,S} per such stretch (a set_C path
/// can migrate thousands of times).
struct IDSVMJournal {
  enum class Kind : std::int8_t { Push, Erase, Weight, Snapshot, QRow, QCol };
  struct Entry {
    Kind kind;
    Index i;           ///< Push / Erase / Weight / QRow: the row; QCol: the column
    Index n;           ///< Erase: the number of rows before it; QCol: the saved length
    Index p;           ///< Erase / QRow: |S| then (length of the saved Q row)
    std::int64_t key;  ///< Push / Erase: the example's key
    double v;          ///< Push: m_kmax before; Weight: the old weight
    std::size_t at;    ///< Erase / QRow / QCol: offset of the saved values in `rows`
    SVMSet set;        ///< Erase: the row's set
  };
  using Node = std::unordered_map<std::int64_t, Index>::node_type;

  /// The state a path or a repair can change (Q_{:,S} aside). Buffers grow to the machine's
  /// capacities and are reused: no allocation once grown (Eigen assigns a block without
  /// reallocating).
  struct Snapshot {
    Index n = 0, r = 0;  ///< rows, size of R
    double b = 0.0, C = 0.0;
    std::int64_t steps = 0, refactors = 0, since_check = 0, repairs = 0;
    Vector alpha, g, s;
    std::vector<SVMSet> set;
    std::vector<Index> slot, S;
    Eigen::MatrixXd R;
  };

  bool open = false, saved = false;
  std::vector<Entry> log;
  std::vector<double> rows;  ///< erased rows: sq, y, s, alpha, g, x (d values), Q row (p values); Q rows and columns
  std::vector<Node> nodes;   ///< the erased rows' index-map nodes, in erase order
  /// Advanced by start() and by every push and erase, never reset: a column whose
  /// col_stamp equals it was saved since the rows last moved, in this transaction.
  std::int64_t stamp = 0;
  std::vector<std::int64_t> col_stamp;
  Snapshot snap;

  IDSVMJournal() = default;
  // Scratch state of one operation: a copy of the machine starts with an empty journal.
  IDSVMJournal(const IDSVMJournal&) {}
  IDSVMJournal& operator=(const IDSVMJournal&) {
    close();
    return *this;
  }
  IDSVMJournal(IDSVMJournal&&) = default;
  IDSVMJournal& operator=(IDSVMJournal&&) = default;

  void start() {
    close();
    open = true;
    ++stamp;
  }
  void close() noexcept {
    open = saved = false;
    log.clear();
    rows.clear();
    nodes.clear();
  }

  /// One public operation of machine M: it joins the open transaction, or runs as its own,
  /// which it rolls back unless done() was reached (the destructor runs during the unwinding
  /// of any exception).
  template <class M>
  class Operation {
   public:
    explicit Operation(M& m) : m_m(m), m_own(!m.m_tx.open) {
      if (m_own) m.m_tx.start();
    }
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;
    ~Operation() {
      if (!m_own) return;  // a caller's transaction: its rollback() or commit() decides
      if (m_done)
        m_m.m_tx.close();
      else
        m_m.rollback();
    }
    void done() { m_done = true; }

   private:
    M& m_m;
    bool m_own, m_done = false;
  };

  /// A row was pushed as row c under `key`; kmax: the machine's m_kmax before. Written before
  /// the push changes anything: its undo sets the row count, the next key and m_kmax back by
  /// value and drops the key, which is right whatever point of the push an exception
  /// (bad_alloc) interrupted.
  void record_push(Index c, std::int64_t key, double kmax) {
    log.push_back({Kind::Push, c, 0, 0, key, kmax, 0, SVMSet::Reserve});
    ++stamp;  // the rows change: columns saved before no longer cover them
  }

  /// Saves, once per transaction, what a path or a repair can change (Q_{:,S} aside, which is
  /// journaled write by write): alpha, g, weights, sets, slots, S, R, b, C and the counters.
  template <class M>
  void snapshot(const M& m) {
    if (saved) return;
    Snapshot& j = snap;
    const Index n = m.m_n, r = m.m_R.size();
    if (j.alpha.size() < n) {
      const Index cap = m.m_alpha.size();
      for (Vector* v : {&j.alpha, &j.g, &j.s}) v->resize(cap);
      j.set.resize(static_cast<std::size_t>(cap));
      j.slot.resize(static_cast<std::size_t>(cap));
    }
    if (j.R.rows() < r) j.R.resize(m.m_R.capacity(), m.m_R.capacity());
    j.n = n;
    j.r = r;
    j.b = m.m_b;
    j.C = m.m_C;
    j.steps = m.m_steps;
    j.refactors = m.m_refactors;
    j.since_check = m.m_since_check;
    j.repairs = m.m_repairs;
    j.alpha.head(n) = m.m_alpha.head(n);
    j.g.head(n) = m.m_g.head(n);
    j.s.head(n) = m.m_s.head(n);
    std::copy(m.m_set.begin(), m.m_set.begin() + n, j.set.begin());
    std::copy(m.m_slot.begin(), m.m_slot.begin() + n, j.slot.begin());
    j.S.assign(m.m_S.begin(), m.m_S.end());
    if (r > 0) j.R.topLeftCorner(r, r) = m.m_R.inverse();
    log.push_back({Kind::Snapshot, 0, 0, 0, 0, 0.0, 0, SVMSet::Reserve});
    saved = true;
  }

  /// Saves Q_{:,S}'s row c (learn's new example, about to be written).
  template <class M>
  void save_q_row(const M& m, Index c) {
    const Index P = m.n_margin();
    const std::size_t at = rows.size();
    rows.resize(at + static_cast<std::size_t>(P));
    Eigen::Map<Eigen::RowVectorXd>(rows.data() + at, P) = m.m_Q.row(c).head(P);
    log.push_back({Kind::QRow, c, 0, P, 0, 0.0, at, SVMSet::Reserve});
  }

  /// Saves column p of Q_{:,S} (rows 0..N-1) before a migration overwrites it, unless it was
  /// saved since the rows last moved (see `stamp`).
  template <class M>
  void save_q_col(const M& m, Index p) {
    if (col_stamp.size() < static_cast<std::size_t>(m.m_Q.cols())) col_stamp.resize(static_cast<std::size_t>(m.m_Q.cols()), 0);
    std::int64_t& saved_at = col_stamp[static_cast<std::size_t>(p)];
    if (saved_at == stamp) return;
    const std::size_t at = rows.size();
    rows.resize(at + static_cast<std::size_t>(m.m_n));
    Eigen::Map<Vector>(rows.data() + at, m.m_n) = m.m_Q.col(p).head(m.m_n);
    log.push_back({Kind::QCol, p, m.m_n, 0, 0, 0.0, at, SVMSet::Reserve});
    saved_at = stamp;
  }

  /// Saves example c's weight before it changes.
  template <class M>
  void save_weight(const M& m, Index c) {
    log.push_back({Kind::Weight, c, 0, 0, 0, m.m_s(c), 0, SVMSet::Reserve});
  }

  /// Saves row i before the machine erases it (everything that may allocate happens here,
  /// before the erase changes anything).
  template <class M>
  void save_erase(const M& m, Index i) {
    const Index P = m.n_margin(), d = m.m_d;
    if (nodes.size() == nodes.capacity()) nodes.reserve(2 * nodes.size() + 4);
    const std::size_t at = rows.size();
    rows.resize(at + static_cast<std::size_t>(5 + d + P));
    double* r = rows.data() + at;
    r[0] = m.m_sq(i), r[1] = m.m_y(i), r[2] = m.m_s(i), r[3] = m.m_alpha(i), r[4] = m.m_g(i);
    Eigen::Map<Eigen::RowVectorXd>(r + 5, d) = m.m_X.row(i);
    Eigen::Map<Eigen::RowVectorXd>(r + 5 + d, P) = m.m_Q.row(i).head(P);
    log.push_back({Kind::Erase, i, m.m_n, P, m.m_key[i], 0.0, at, m.m_set[i]});
    ++stamp;  // the rows change: columns saved before no longer cover them
  }

  /// Replays the log backwards into m (the machine's rollback() then rebuilds Q_SS and closes
  /// the journal). Allocates nothing and cannot throw: every buffer it writes to has at least
  /// the size it had when the entry was made.
  template <class M>
  void undo(M& m) noexcept {
    for (auto e = log.rbegin(); e != log.rend(); ++e) {
      switch (e->kind) {
        case Kind::Push: unpush(m, *e); break;
        case Kind::Erase: unerase(m, *e); break;
        case Kind::Weight: m.m_s(e->i) = e->v; break;
        case Kind::Snapshot: restore(m); break;
        case Kind::QRow: m.m_Q.row(e->i).head(e->p) = Eigen::Map<const Eigen::RowVectorXd>(rows.data() + e->at, e->p); break;
        case Kind::QCol: m.m_Q.col(e->i).head(e->n) = Eigen::Map<const Vector>(rows.data() + e->at, e->n); break;
      }
    }
  }

 private:
  template <class M>
  void restore(M& m) const noexcept {
    const Snapshot& j = snap;
    const Index n = j.n;
    m.m_n = n;
    m.m_b = j.b;
    m.m_C = j.C;
    m.m_steps = j.steps;
    m.m_refactors = j.refactors;
    m.m_since_check = j.since_check;
    m.m_repairs = j.repairs;
    m.m_alpha.head(n) = j.alpha.head(n);
    m.m_g.head(n) = j.g.head(n);
    m.m_s.head(n) = j.s.head(n);
    std::copy(j.set.begin(), j.set.begin() + n, m.m_set.begin());
    std::copy(j.slot.begin(), j.slot.begin() + n, m.m_slot.begin());
    m.m_S.assign(j.S.begin(), j.S.end());  // within m_S's capacity (it held as many then)
    if (j.r > 0)
      m.m_R.assign(j.R.topLeftCorner(j.r, j.r));
    else
      m.m_R.clear();
  }

  template <class M>
  static void unpush(M& m, const Entry& e) noexcept {
    m.m_index.erase(e.key);
    m.m_n = e.i;
    m.m_next_key = e.key;
    m.m_kmax = e.v;
  }

  /// The inverse of the machine's erase: the row that moved into slot i goes back to the end,
  /// the saved row into slot i (its S membership, if any, is the snapshot's business: an
  /// erased row is never in S).
  template <class M>
  void unerase(M& m, const Entry& e) noexcept {
    const Index i = e.i, last = e.n - 1, P = e.p, d = m.m_d;
    if (i != last) {
      m.move_row(i, last, P);
      // (a path after the erase may have changed S; the snapshot taken before it restores S)
      if (m.m_slot[last] >= 0 && m.m_slot[last] < m.n_margin()) m.m_S[m.m_slot[last]] = last;
    }
    const double* r = rows.data() + e.at;
    m.m_sq(i) = r[0], m.m_y(i) = r[1], m.m_s(i) = r[2], m.m_alpha(i) = r[3], m.m_g(i) = r[4];
    m.m_X.row(i) = Eigen::Map<const Eigen::RowVectorXd>(r + 5, d);
    m.m_Q.row(i).head(P) = Eigen::Map<const Eigen::RowVectorXd>(r + 5 + d, P);
    m.m_set[i] = e.set;
    m.m_key[i] = e.key;
    m.m_slot[i] = -1;
    m.m_index.insert(std::move(nodes.back()));  // the node extracted by the erase: no allocation
    nodes.pop_back();
    m.m_n = e.n;
  }
};

}  // namespace detail
}  // namespace budgetkernel
