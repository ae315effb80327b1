#pragma once
/// \file svm/adiabatic_path.hpp
/// Part of svm/incremental_svm.hpp (included at its end; include that header, not this one):
/// the adiabatic path of IncrementalSVM, i.e. the Cauwenberghs & Poggio bookkeeping.
///
/// A path drives a parameter linearly in t: 0 -> 1 (Mode::Weight: the weight s_c of example c,
/// learn's increment a_c += delta while c sits in E; Mode::RegC: C, every E alpha following
/// its bound C s_i, the regularisation-parameter perturbation of Diehl & Cauwenberghs;
/// Mode::Unlearn: alpha_c -> 0 with c outside the KT system). The margin vectors and b follow
/// so that g_S = 0 and sum y a = 0 keep holding. One bookkeeping step:
///  1. driven rates (path_rates): da_N of the non-S alphas that move with t, their sum
///     r = sum_N y_j da_j and the column Q_{:,N} da_N (Q_{:,c} or h = Q_{:,E} s_E, times a rate);
///  2. direction (path_direction), TVM eq. 2.1, the sensitivities beta = [db; da_S] / dt:
///       [db; da_S] = -R [r; Q_SN da_N],  R = J^{-1},  J = [[0, y_S^T], [y_S, Q_SS]];
///     with S empty J = [0] cannot balance r != 0, so only b moves (sign(r), t frozen) until an
///     E or R example reaches g = 0 and enters S (such an example exists when r != 0);
///  3. gradient rates (path_gradient_rates), the sensitivities gamma = dg / dt:
///       dg = y db + Q_{:,S} da_S + Q_{:,N} da_N,
///     with noise levels kGNoise and kANoise relative to the step's scale;
///  4. step limit (path_next_event): the largest step before an example reaches a boundary,
///     an S alpha reaching 0 (-> R) or its bound C s_i (-> E), an E or R example's g reaching
///     0 (-> S); one migration per step, ties one after the other (the second at step 0), the
///     smallest index first;
///  5. move (path_move): b, alpha_S, g by the step, t and the driven parameter with it;
///  6. migration (path_migrate) of the example that reached its boundary, then refine().
/// Rates below the noise levels trigger no event: a dependent candidate for S (its row of J a
/// combination of the margin rows, see enter_margin in svm/margin_set.hpp) moves its g at
/// rounding speed only and is blocked until S changes; a near-dependent one is swapped in as
/// a *pivot*: with t frozen its alpha is driven into its box (+1 from R, -1 from E) while the
/// margin vectors compensate by -R [y_i; Q_Si], until a margin vector leaves S (then the pivot
/// enters) or the pivot's alpha reaches its other bound. An example that leaves S at step 0
/// right after entering it stays out until S changes otherwise, or the path would cycle.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#ifdef BUDGETKERNEL_IDSVM_TEST_HOOKS
namespace budgetkernel {
namespace detail {
/// Test hook, compiled only where BUDGETKERNEL_IDSVM_TEST_HOOKS is defined (the C++ tests of
/// the strong exception guarantee, cpp/tests/CMakeLists.txt): while > 0, every bookkeeping
/// step of every IncrementalSVM on this thread counts it down, and the step that brings it to
/// 0 throws std::runtime_error in the middle of its operation (after the step moved alpha, g
/// and b, before its migration), as a numerical breakdown would.
inline thread_local std::int64_t idsvm_fail_countdown = 0;
}  // namespace detail
}  // namespace budgetkernel
#endif

namespace budgetkernel {

/// The state of one path: its driven parameter, t, the pivot being swapped in, and what the
/// steps of one bookkeeping step hand to each other.
struct IncrementalSVM::Path {
  const Mode mode;
  const Index c;      ///< the driven example (-1 for RegC)
  const double from;  ///< the driven parameter at t = 0 ...
  const double to;    ///< ... and at t = 1
  double t = 0.0;
  Index pivot = -1;      ///< a near-dependent example being swapped into S
  double prate = 0.0;    ///< its alpha rate: +1 from R, -1 from E
  bool retried = false;  ///< R was refactorised for a non-finite direction at this step
  Index entered = -1;    ///< the example that entered S at the previous migration, if any
  // Set anew by every bookkeeping step:
  Index n = 0, P = 0;                                ///< N and |S| at its start
  double r = 0.0;                                    ///< sum_N y_j da_j
  const Vector* qcol = nullptr;                      ///< Q_{:,N} da_N = qmul * (*qcol)
  double qmul = 0.0, rate_scale = 0.0;               ///< the step's scale of alpha rates
  bool b_only = false, frozen = false;               ///< only b moves; t does not move
  double db = 0.0, sum_da = 0.0, gnoise = 0.0, anoise = 0.0;
  double best = 0.0;                                 ///< the step to the next event
  Index who = -1;                                    ///< the example it migrates (-1: none)
  SVMSet target = SVMSet::Margin;                    ///< and where to
};

/// Bound rate du_i / dt of example i on the current path.
inline double IncrementalSVM::bound_rate(Mode mode, Index c, double from, double to, Index i) const {
  if (mode == Mode::RegC) return m_s(i) * (to - from);
  if (mode == Mode::Weight && i == c) return m_C * (to - from);
  return 0.0;
}

/// Sets the driven parameter to its value at t (exactly `to` at t = 1); E alphas follow.
inline void IncrementalSVM::set_parameter(Mode mode, Index c, double from, double to, double t) {
  const double v = t >= 1.0 ? to : from + t * (to - from);
  if (mode == Mode::RegC) {
    m_C = v;
    for (Index i = 0; i < m_n; ++i)
      if (m_set[i] == SVMSet::Error) m_alpha(i) = m_C * m_s(i);
  } else if (mode == Mode::Weight) {
    m_s(c) = v;
    if (m_set[c] == SVMSet::Error) m_alpha(c) = m_C * v;
  } else {
    m_alpha(c) = t >= 1.0 ? 0.0 : from * (1.0 - t);
  }
}

/// Whether example i is kept out of S until S changes (a dependent candidate, or one that
/// left at a zero step right after entering).
inline bool IncrementalSVM::is_blocked(Index i) const { return std::find(m_blocked.begin(), m_blocked.end(), i) != m_blocked.end(); }

/// Throws the failure of a path; the caller's Operation (or transaction) rolls it back.
[[noreturn]] inline void IncrementalSVM::fail(const std::string& why, Mode mode, double from, double to, double t) const {
  const char* what = mode == Mode::RegC ? "set_C" : mode == Mode::Unlearn ? "unlearn" : "learn/set_weight";
  throw std::runtime_error("IncrementalSVM::" + std::string(what) + ": " + why + " (from " + std::to_string(from) +
                           " to " + std::to_string(to) + ", reached t = " + std::to_string(t) + ", |S| = " +
                           std::to_string(n_margin()) + ", N = " + std::to_string(m_n) +
                           "); the operation is undone");
}

/// The adiabatic path t: 0 -> 1 (see the file comment). Weight: s_c from -> to;
/// RegC: C from -> to; Unlearn: alpha_c from -> 0 with c outside the KT system. `stop`
/// (may be null) is asked before every step: a path can take thousands (set_C over a
/// decade of C on a few thousand examples), each O(N |S|). More than 1000 + 50 N steps
/// throw std::runtime_error (a cycle of zero-length steps on an ill-conditioned J).
inline void IncrementalSVM::run_path(Mode mode, Index c, double from, double to, StopPoll* stop) {
  Path p{mode, c, from, to};
  const std::int64_t max_steps = 1000 + 50 * static_cast<std::int64_t>(m_n);
  m_blocked.clear();
  for (std::int64_t it = 0;; ++it) {
    detail::poll_stop(stop, 0);  // nothing of the operation is kept: its Operation undoes it
    settle();
    if (it > max_steps) fail("more than " + std::to_string(max_steps) + " bookkeeping steps", mode, from, to, p.t);
    p.P = n_margin();
    // A migration at t = 1 - O(eps) (ties) leaves a rounding-level remainder of the path. With
    // S empty only b could carry it, and no example may be able to enter S to stop that move:
    // finish the path instead (the remainder is below the KT tolerances).
    if (p.pivot < 0 && p.P == 0 && 1.0 - p.t <= 1e-12) {
      set_parameter(mode, c, from, to, 1.0);
      refine();
      break;
    }
    p.n = m_n;
    path_rates(p);
    if (!path_direction(p)) continue;  // R was refactorised: the step again
    path_gradient_rates(p);
    path_next_event(p);
    if (path_move(p)) {  // the final step, to t = 1
      refine();
      break;
    }
    path_migrate(p);
    refine();
    if (p.t >= 1.0 && p.pivot < 0) break;
  }
  m_check_due = false;
  check_inverse();
}

/// Step 1: the driven (non-S) rates: r = sum_N y_j da_j, and Q_{:,N} da_N as a multiple of one
/// column: the pivot's (rate +-1), h = Q_{:,E} s_E (set_C, rate dC: every E alpha follows its
/// bound C s_i), or the driven example's (rate C ds_c while it sits in E, -alpha_c(0) when
/// unlearning). A driven example in R or S has no driven alpha: r = 0.
inline void IncrementalSVM::path_rates(Path& p) {
  const Index n = p.n, P = p.P;
  p.r = 0.0;
  p.rate_scale = 0.0;
  p.qcol = nullptr;
  p.qmul = 0.0;
  if (p.pivot >= 0) {
    p.r = m_y(p.pivot) * p.prate;
    p.qcol = &m_colp;
    p.qmul = p.prate;
    p.rate_scale = 1.0;
  } else if (p.mode == Mode::RegC) {
    double ys = 0.0, ss = 0.0;
    for (Index j = 0; j < n; ++j)
      if (m_set[j] == SVMSet::Error) ys += m_y(j) * m_s(j), ss += m_s(j);
    const double dC = p.to - p.from;
    p.r = dC * ys;
    // With S empty, an r at rounding level of sum y s means balanced E classes: no b move.
    if (P == 0 && std::abs(p.r) <= 1e-14 * std::abs(dC) * ss) p.r = 0.0;
    p.qcol = &m_h;
    p.qmul = dC;
    p.rate_scale = std::abs(dC) * (n > 0 ? m_s.head(n).maxCoeff() : 0.0);
  } else if ((p.mode == Mode::Unlearn) || m_set[p.c] == SVMSet::Error) {
    const double rate_c = p.mode == Mode::Unlearn ? -p.from : m_C * (p.to - p.from);
    p.r = m_y(p.c) * rate_c;
    p.qcol = &m_colc;
    p.qmul = rate_c;
    p.rate_scale = std::abs(rate_c);
  } else if (p.mode == Mode::Weight) {
    p.rate_scale = std::abs(m_C * (p.to - p.from));
  }
}

/// Step 2: the direction [db; da_S] = -R [r; Q_SN da_N] (TVM eq. 2.1), or b alone (rate
/// sign(r), t frozen) when S is empty. Returns false after refactorising R for a non-finite
/// direction (the caller repeats the step; a second one in a row throws).
inline bool IncrementalSVM::path_direction(Path& p) {
  const Index P = p.P;
  p.b_only = false;
  p.db = 0.0;
  if (P > 0) {
    m_rhs(0) = p.r;
    for (Index q = 0; q < P; ++q) m_rhs(q + 1) = p.qcol ? p.qmul * (*p.qcol)(m_S[q]) : 0.0;
    solve_direction(P);
    if (!detail::all_finite(m_dir.data(), P + 1)) {
      if (p.retried) fail("non-finite direction after refactorising", p.mode, p.from, p.to, p.t);
      refactor();
      p.retried = true;
      return false;
    }
    p.retried = false;
    p.db = m_dir(0);
  } else if (p.r != 0.0) {
    p.b_only = true;
    p.db = p.r > 0.0 ? 1.0 : -1.0;
  }
  p.frozen = p.b_only || p.pivot >= 0;  // t does not move
  return true;
}

/// Step 3: dg = y db + Q_{:,S} da_S + Q_{:,N} da_N into m_dg (the driven part frozen in a
/// b-only move), and the noise levels of this step: kGNoise (|db| + max|Q_ii| sum |da|) in
/// dg, kANoise max |da| in the alpha rates.
inline void IncrementalSVM::path_gradient_rates(Path& p) {
  const Index n = p.n, P = p.P;
  auto dg = m_dg.head(n);
  dg = p.db * m_y.head(n);
  double amax = p.rate_scale, sum_da = p.rate_scale;
  if (P > 0) {
    detail::add_product_compact_order(dg, m_Q.topLeftCorner(n, P), m_dir.segment(1, P));
    const double m = m_dir.segment(1, P).cwiseAbs().maxCoeff();
    amax = (std::max)(amax, m);
    sum_da += m_dir.segment(1, P).cwiseAbs().sum();
  }
  if (!p.b_only && p.qcol) dg += p.qmul * p.qcol->head(n);
  p.sum_da = sum_da;
  p.gnoise = kGNoise * (std::abs(p.db) + m_kmax * sum_da);
  p.anoise = kANoise * amax;
}

/// Step 4: the largest step before a migration (C&P bookkeeping): `best`, `who` and `target`.
/// With t frozen there is no end of the path to reach: no event is a failure.
inline void IncrementalSVM::path_next_event(Path& p) {
  const double remaining = 1.0 - p.t;
  p.best = p.frozen ? std::numeric_limits<double>::infinity() : remaining;
  p.who = -1;
  p.target = SVMSet::Margin;
  if (p.pivot >= 0) {  // the pivot's alpha reaching its other bound ends the swap
    p.best = p.prate > 0.0 ? m_C * m_s(p.pivot) - m_alpha(p.pivot) : m_alpha(p.pivot);
    p.who = p.pivot;
    p.target = p.prate > 0.0 ? SVMSet::Error : SVMSet::Reserve;
  }
  for (Index i = 0; i < p.n; ++i) {
    if (i == m_driven || i == p.pivot) continue;
    double step;
    SVMSet to_set;
    if (!boundary_step(p, i, step, to_set)) continue;
    if (step < p.best && !(to_set == SVMSet::Margin && is_blocked(i))) {
      p.best = step;
      p.who = i;
      p.target = to_set;
    }
  }
  if (p.frozen && p.who < 0) {
    // With S empty and only b moving, every E or R example moving towards the margin has
    // |dg| = |db| = 1: none qualified only because the noise threshold reached 1, i.e. the
    // step's scale C x weight x kmax reached max_scale(). Name the parameter.
    if (p.b_only && !(1.0 > p.gnoise)) scale_failure(p.mode, p.c, p.from, p.to);
    fail("empty margin set and no example can enter it", p.mode, p.from, p.to, p.t);
  }
}

/// The step at which example i (not driven, not the pivot) reaches a boundary of its set, and
/// the set it then joins; false when it moves towards none (faster than the noise level).
///  S: alpha_i reaches 0 at -alpha_i / da_i (-> R) or its bound u_i = C s_i, itself moving at
///     du_i, at (u_i - alpha_i) / (da_i - du_i) (-> E); the nearer when both approach.
///  E (g <= 0) and R (g >= 0): g_i reaches 0 at -g_i / dg_i (-> S).
inline bool IncrementalSVM::boundary_step(const Path& p, Index i, double& step, SVMSet& to_set) const {
  if (m_set[i] == SVMSet::Margin) {
    if (p.b_only) return false;
    const double da = m_dir(m_slot[i] + 1);
    const double du = bound_rate(p.mode, p.c, p.from, p.to, i);
    const double u = m_C * m_s(i);
    if (da < -p.anoise) {
      step = (std::max)(0.0, m_alpha(i) / -da);
      to_set = SVMSet::Reserve;
      if (da - du > p.anoise) {  // both boundaries approach (bound falling faster): take the nearer
        const double s2 = (std::max)(0.0, (u - m_alpha(i)) / (da - du));
        if (s2 < step) step = s2, to_set = SVMSet::Error;
      }
    } else if (da - du > p.anoise) {
      step = (std::max)(0.0, (u - m_alpha(i)) / (da - du));
      to_set = SVMSet::Error;
    } else {
      return false;
    }
  } else if (m_set[i] == SVMSet::Error) {
    if (!(m_dg(i) > p.gnoise)) return false;
    step = (std::max)(0.0, -m_g(i) / m_dg(i));
    to_set = SVMSet::Margin;
  } else {
    if (!(m_dg(i) < -p.gnoise)) return false;
    step = (std::max)(0.0, m_g(i) / -m_dg(i));
    to_set = SVMSet::Margin;
  }
  return true;
}

/// Step 5: moves b, alpha_S (and the pivot's alpha), g and t by the step. Returns whether it
/// was the final step (no event before t = 1).
inline bool IncrementalSVM::path_move(Path& p) {
  const Index n = p.n, P = p.P;
  const bool final_step = !p.frozen && p.who < 0;
  const double step = p.best;
  m_b += step * p.db;
  for (Index q = 0; q < P; ++q) m_alpha(m_S[static_cast<std::size_t>(q)]) += step * m_dir(q + 1);
  m_g.head(n) += step * m_dg.head(n);
  if (p.pivot >= 0) m_alpha(p.pivot) += step * p.prate;
  ++m_steps;
#ifdef BUDGETKERNEL_IDSVM_TEST_HOOKS
  if (detail::idsvm_fail_countdown > 0 && --detail::idsvm_fail_countdown == 0)
    fail("forced failure (test hook detail::idsvm_fail_countdown)", p.mode, p.from, p.to, p.t);
#endif
  if (!p.frozen) {
    p.t = final_step ? 1.0 : (std::min)(1.0, p.t + step);
    set_parameter(p.mode, p.c, p.from, p.to, p.t);
  }
  for (Index q = 0; q < P; ++q) {
    // Rates below the noise level trigger no event, so an alpha sitting on a boundary can
    // cross it by a rounding-level amount: clamp it back into its (new) box.
    const Index i = m_S[static_cast<std::size_t>(q)];
    m_alpha(i) = (std::min)((std::max)(m_alpha(i), 0.0), m_C * m_s(i));
  }
  return final_step;
}

/// Step 6: migrates the example that reached a boundary.
inline void IncrementalSVM::path_migrate(Path& p) {
  const Index i = p.who, just_entered = p.entered;
  p.entered = -1;
  if (i == p.pivot)
    path_end_swap(p);
  else if (p.target == SVMSet::Margin)
    path_enter(p, i);
  else
    path_leave(p, i, just_entered);
}

/// The swap ended with the pivot at its other bound (g_i stays ~0: valid in E and R).
inline void IncrementalSVM::path_end_swap(Path& p) {
  const Index n = p.n, i = p.pivot;
  const double snapped = p.target == SVMSet::Error ? m_C * m_s(i) : 0.0;
  m_g.head(n) += (snapped - m_alpha(i)) * m_colp.head(n);
  m_alpha(i) = snapped;
  if (p.mode == Mode::RegC) m_h.head(n) += (p.target == SVMSet::Error ? m_s(i) : -m_s(i)) * m_colp.head(n);
  m_set[i] = p.target;
  p.pivot = -1;
  m_blocked.push_back(i);
}

/// Example i (E or R) reached g_i = 0: it enters S, or becomes the pivot when its row of J
/// is near-dependent (its g moves at more than rounding speed), or is blocked when exactly
/// dependent (its g moves with the margin's and stays 0). h = Q_{:,E} s_E loses an entering
/// E example's column.
inline void IncrementalSVM::path_enter(Path& p, Index i) {
  const Index n = p.n;
  const bool own = (p.mode == Mode::Weight && i == p.c);
  Vector& col = own ? m_colc : m_col;
  if (!own) compute_column(i, m_col);
  const bool was_error = m_set[i] == SVMSet::Error;
  if (enter_margin(i, &col)) {
    if (was_error && p.mode == Mode::RegC) m_h.head(n) -= m_s(i) * col.head(n);
    m_blocked.clear();
    p.entered = i;
  } else if (p.pivot < 0 && std::abs(m_dg(i)) > kPivot * (std::abs(p.db) + m_kmax * p.sum_da)) {
    // Near-dependent: swap it in. With t frozen its alpha is driven into its box; the margin
    // vectors compensate by -R [y_i; Q_Si], which leaves g_S and, to first order, g_i
    // unchanged, until a margin vector reaches a bound and leaves S (then i enters) or alpha_i
    // reaches its other bound.
    m_colp.head(n) = col.head(n);
    p.pivot = i;
    p.prate = m_set[i] == SVMSet::Reserve ? 1.0 : -1.0;
  } else {
    m_blocked.push_back(i);  // exactly dependent: its g moves with the margin's, stays 0
  }
}

/// Margin vector i reached 0 (-> R) or its bound (-> E): alpha_i is snapped onto it (g follows
/// the rounding-level change), i leaves S, and a pivot waiting for that enters S.
inline void IncrementalSVM::path_leave(Path& p, Index i, Index just_entered) {
  const Index n = p.n;
  const auto col = m_Q.col(m_slot[i]).head(n);
  if (p.target == SVMSet::Error && p.mode == Mode::RegC) m_h.head(n) += m_s(i) * col;
  const double snapped = p.target == SVMSet::Error ? m_C * m_s(i) : 0.0;
  m_g.head(n) += (snapped - m_alpha(i)) * col;
  m_alpha(i) = snapped;
  m_set[i] = p.target;
  leave_margin(i);
  m_blocked.clear();
  // Left at a zero step right after it entered: S is back as it was, so the same example
  // would enter again and the path cycle. It stays out until S changes otherwise.
  if (p.best == 0.0 && i == just_entered) m_blocked.push_back(i);
  if (p.pivot >= 0) {
    const bool was_error = m_set[p.pivot] == SVMSet::Error;
    if (enter_margin(p.pivot, &m_colp)) {
      if (was_error && p.mode == Mode::RegC) m_h.head(n) -= m_s(p.pivot) * m_colp.head(n);
      p.pivot = -1;
      m_blocked.clear();  // S changed after all
    }
  }
}

/// Iterative refinement of the equality and margin conditions (rounding control): each path
/// step keeps sum y a = 0 and g_S = 0 only up to its rounding, amplified by cond(J).
/// [db; da_S] = -R [sum y a; g_S] removes that drift, and dg = Q_{:,S} da_S + y db keeps g
/// consistent with the alphas (g is only ever changed together with them, so it stays the
/// true gradient; the one overwrite is g_i = 0 for an example entering S, a rounding-level
/// change). Runs only when the drift exceeds 1e-13 of the scale (checked in O(N + |S|)); up
/// to 3 rounds of O(N |S|).
inline void IncrementalSVM::refine() {
  const Index P = n_margin(), n = m_n;
  if (P == 0) return;
  const double ascale = (std::max)(1.0, m_C * m_s.head(n).maxCoeff());
  for (int round = 0; round < 3; ++round) {
    double ya = 0.0, gs = 0.0;
    for (Index i = 0; i < n; ++i) ya += m_y(i) * m_alpha(i);
    for (Index p = 0; p < P; ++p) gs = (std::max)(gs, std::abs(m_g(m_S[static_cast<std::size_t>(p)])));
    if (std::abs(ya) <= 1e-13 * ascale && gs <= 1e-13) return;
    m_rhs(0) = ya;
    for (Index p = 0; p < P; ++p) m_rhs(p + 1) = m_g(m_S[static_cast<std::size_t>(p)]);
    solve_direction(P);
    if (!detail::all_finite(m_dir.data(), P + 1)) return;
    // A correction is a rounding-level fix: it must stay small and keep alphas in their boxes
    // (with a badly conditioned J it could otherwise amplify the error it is meant to remove).
    if (m_dir.segment(1, P).cwiseAbs().maxCoeff() > 1e-2 * ascale) return;
    for (Index p = 0; p < P; ++p) {
      const Index i = m_S[static_cast<std::size_t>(p)];
      const double a = m_alpha(i) + m_dir(p + 1);
      if (a < 0.0 || a > m_C * m_s(i)) return;
    }
    m_b += m_dir(0);
    for (Index p = 0; p < P; ++p) m_alpha(m_S[static_cast<std::size_t>(p)]) += m_dir(p + 1);
    detail::add_product_compact_order(m_g.head(n), m_Q.topLeftCorner(n, P), m_dir.segment(1, P));
    m_g.head(n) += m_dir(0) * m_y.head(n);
  }
}

}  // namespace budgetkernel
