#pragma once
/// \file svm/incremental_svm_storage.hpp
/// Part of svm/incremental_svm.hpp (included at its end; include that header, not this one):
/// the rows of IncrementalSVM (the examples, their y, alpha, g, weight, set and key) and the
/// columns of Q = [y_i y_j K(x_i, x_j) + ridge [i == j]] it computes.
///
/// Storage grows by doubling and never shrinks; a loaded copy holds exactly its examples. Every
/// product over it goes through detail::add_product_compact_order, whose rounding depends on
/// the matrix's size only, so a copy with another capacity continues bit for bit. Pushes and
/// erases are journaled (svm/undo_journal.hpp): a failed operation pops its push and re-inserts
/// what it erased.
///
/// Memory: the examples (N x d), y, alpha, g, weights, set, keys, R ((|S|+1)^2) and, as in
/// the paper (TVM 2.3), the N x |S| block Q_{:,S} of Q against the margin vectors: it gives the
/// bordering row of an example entering S in O(|S|) and dg in O(N |S|) without kernel
/// evaluations; a kernel column (O(N d)) is computed only when an example enters S or is the
/// driven one. A step costs O(N |S| + |S|^2); an operation costs O(N d) plus that per
/// migration. The undo journal adds buffers of the size of R and the per-example vectors, and
/// the columns of Q_{:,S} an operation overwrites.

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace budgetkernel {

/// Empty storage for `cap` examples of dimension d (d from a file is checked against the
/// learner only later).
inline void IncrementalSVM::reset_storage(Index d, Index cap) {
  m_n = 0;
  detail::zero_fresh(m_X, cap, d);  // d from a file is checked against the learner only later
  m_sq.setZero(cap);
  m_y.setZero(cap);
  m_alpha.setZero(cap);
  m_g.setZero(cap);
  m_s.setZero(cap);
  m_h.setZero(cap);
  m_dg.setZero(cap);
  m_colc.setZero(cap);
  m_col.setZero(cap);
  m_colp.setZero(cap);
  m_set.assign(static_cast<std::size_t>(cap), SVMSet::Reserve);
  m_key.assign(static_cast<std::size_t>(cap), 0);
  m_slot.assign(static_cast<std::size_t>(cap), -1);
  m_S.clear();
  m_Q.setZero(cap, 8);
  m_Qss.setZero(8, 8);
  for (Vector* v : {&m_rhs, &m_dir, &m_jw, &m_ajw}) v->setZero(9);
  m_R.reset(9);
  m_index.clear();
}

/// Room for `need` rows (capacity doubled at least).
inline void IncrementalSVM::grow_rows(Index need) {
  const Index cap = m_X.rows();
  if (need <= cap) return;
  const Index nc = (std::max)(need, 2 * cap);
  m_X.conservativeResize(nc, m_d);
  for (Vector* v : {&m_sq, &m_y, &m_alpha, &m_g, &m_s, &m_h, &m_dg, &m_colc, &m_col, &m_colp}) v->conservativeResize(nc);
  m_set.resize(static_cast<std::size_t>(nc), SVMSet::Reserve);
  m_key.resize(static_cast<std::size_t>(nc), 0);
  m_slot.resize(static_cast<std::size_t>(nc), -1);
  m_Q.conservativeResize(nc, m_Q.cols());
}

/// Room for `need` margin vectors: Q_{:,S}, Q_SS, R and the vectors of size |S| + 1.
inline void IncrementalSVM::grow_cols(Index need) {
  if (need <= m_Q.cols()) return;
  const Index nc = (std::max)(need, 2 * m_Q.cols());
  m_Q.conservativeResize(m_Q.rows(), nc);
  m_Qss.conservativeResize(nc, nc);
  for (Vector* v : {&m_rhs, &m_dir, &m_jw, &m_ajw}) v->conservativeResize(nc + 1);
  m_R.reserve(nc + 1);
}

/// Appends example (x, y) as row m_n under key m_next_key (journaled: a failed operation pops it).
inline Index IncrementalSVM::push_example(const double* xp, double y) {
  grow_rows(m_n + 1);
  const Index c = m_n;
  const std::int64_t key = m_next_key;
  m_tx.record_push(c, key, m_kmax);  // first: its undo is right whatever the push did
  m_index.emplace(key, c);
  m_n = c + 1;
  m_next_key = key + 1;
  m_X.row(c) = Eigen::Map<const Eigen::RowVectorXd>(xp, m_d);
  m_sq(c) = m_X.row(c).squaredNorm();
  m_y(c) = y;
  m_alpha(c) = 0.0;
  m_g(c) = 0.0;
  m_s(c) = 0.0;
  m_slot[c] = -1;
  m_key[c] = key;
  m_kmax = (std::max)(m_kmax, std::abs(q_diag(c)));
  return c;
}

/// Row `from` (x, the per-example values, set, key, slot, its first P entries of Q_{:,S})
/// into row `to`, and the index map pointed at `to`; S is the caller's (erase and its undo
/// differ there).
inline void IncrementalSVM::move_row(Index from, Index to, Index P) noexcept {
  m_X.row(to) = m_X.row(from);
  for (Vector* v : {&m_sq, &m_y, &m_alpha, &m_g, &m_s}) (*v)(to) = (*v)(from);
  m_set[to] = m_set[from];
  m_key[to] = m_key[from];
  m_slot[to] = m_slot[from];
  m_Q.row(to).head(P) = m_Q.row(from).head(P);
  m_index.find(m_key[to])->second = to;
}

/// Swap-with-last removal of example i (not in S), journaled: the row is saved first and
/// its index-map node kept, so that the journal's undo restores both without allocating.
inline void IncrementalSVM::erase_example(Index i) {
  m_tx.save_erase(*this, i);
  const Index last = m_n - 1;
  m_tx.nodes.push_back(m_index.extract(m_key[i]));  // capacity reserved by save_erase: no throw
  if (i != last) {
    move_row(last, i, n_margin());
    if (m_slot[i] >= 0) m_S[m_slot[i]] = i;
  }
  m_n = last;
}

/// Q_ii = k(x_i, x_i) + ridge: the one place the diagonal of Q is formed (with ridge 0 the
/// kernel value itself, bit for bit).
inline double IncrementalSVM::q_diag(Index i) const {
  const double k = m_kernel.self(m_sq(i));
  return m_ridge > 0.0 ? k + m_ridge : k;
}

/// out(i) = Q_ij = y_i y_j K(x_i, x_j) for every stored i; the diagonal from q_diag.
inline void IncrementalSVM::compute_column(Index j, Vector& out) const {
  m_kernel.row(m_X, m_sq, m_n, m_X.row(j).transpose(), m_sq(j), out);
  const double yj = m_y(j);
  for (Index i = 0; i < m_n; ++i) out(i) *= m_y(i) * yj;
  out(j) = q_diag(j);
}

}  // namespace budgetkernel
