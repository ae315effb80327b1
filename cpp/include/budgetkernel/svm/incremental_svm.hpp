#pragma once
/// \file svm/incremental_svm.hpp
/// The exact incremental-decremental SVM (IDSVM) of Cauwenberghs & Poggio, "Incremental and
/// Decremental Support Vector Machine Learning" (NIPS 2000), with the regularisation-parameter
/// perturbation of Diehl & Cauwenberghs, "SVM Incremental Learning, Adaptation and
/// Optimization" (IJCNN 2003), and per-example weights (upper bound C s_i of alpha_i), as
/// summarised in sections 2.1-2.3 of the Twin Vector Machine paper (the TVM paper).
///
/// Dual (TVM paper 2.1, with weights): min 1/2 a^T Q a - sum a, 0 <= a_i <= C s_i,
/// sum y_i a_i = 0, Q_ij = y_i y_j K(x_i, x_j) + ridge [i == j]. With g_i = dW/da_i =
/// y_i f(x_i) + ridge a_i - 1 the Kuhn-Tucker conditions partition the stored examples into
///   S (margin): g_i = 0, 0 <= a_i <= C s_i;  E (error): g_i <= 0, a_i = C s_i;
///   R (reserve): g_i >= 0, a_i = 0.
///
/// Ridge (opt-in, default 0 = the exact SVM above): the dual of the SVM whose training kernel
/// matrix is K + ridge I, i.e. Q_ii = k(x_i, x_i) + ridge for every stored example (two
/// stored copies of one point are two examples: ridge on each diagonal entry, none between
/// them). The off-diagonal entries and f(x) = sum_i y_i a_i K(x_i, x) + b on any point,
/// stored or new, use the plain kernel. Like the I / C2 of an L2-loss SVM's dual, it bounds
/// the smallest eigenvalue of Q_SS (positive semi-definite kernel) and the Schur complement
/// of every example entering S from below by ridge, so J stays invertible, cond(J) roughly
/// (|S| max Q_ii) / ridge, and alpha_i = (1 - y_i f(x_i)) / ridge on S: the way out of the
/// numerical breakdown described under "Failure" below. Every Q_ii is formed
/// by q_diag() (columns, the bordering of R, the first margin vector, the scale estimate),
/// so g, the KT conditions, dual_objective() and kkt_violation() refer to the ridged dual;
/// decision(), decision_from_row() and decision_at() report the plain f (see decision_at).
/// With ridge = 0 every computation is the exact SVM's, bit for bit.
///
/// Every operation is one *adiabatic path* (eq. 2.1 of the TVM paper): a parameter t runs from
/// 0 to 1 while some quantities are driven linearly in t, and the margin vectors and b follow
/// so that g stays 0 on S and sum y a stays 0:
///   learn(x, y, s):   the new example enters with weight 0 (so a_c = 0 satisfies every
///                     condition), then its weight rises 0 -> s. While it sits in E its alpha
///                     follows its bound, which is the increment a_c += delta of C&P.
///   set_weight:       one weight moves s_old -> s_new (a bound perturbation).
///   set_C:            C moves C_old -> C_new, every E alpha following its bound C s_i
///                     (the regularisation-parameter perturbation of Diehl & Cauwenberghs).
///   unlearn:          the example leaves S if it is there (C&P decremental unlearning), then
///                     its alpha is driven a_c -> 0 outside the KT system, then it is removed.
/// With the driven (non-S) rates da_N (and r = sum_N y_j da_j) the margin vectors move by
///   [db; da_S] = -R [r; Q_SN da_N],  R = J^{-1},  J = [[0, y_S^T], [y_S, Q_SS]]   (TVM eq. 2.1)
/// and dg = Q_{:,S} da_S + y db + Q_{:,N} da_N. The step is the largest one before some
/// example reaches a boundary (the C&P bookkeeping): an S alpha reaches 0 (-> R) or its bound
/// (-> E), an E or R example's g reaches 0 (-> S). One migration per step; ties are taken one
/// after the other (the second then fires at step 0), the smallest index first. An example
/// that leaves S at step 0 right after entering it (possible only when J is ill-conditioned)
/// may not enter again until S changes otherwise: S is then as it was before, and the path
/// would cycle (seen once the Schur verdicts of enter_margin were taken with a checked R:
/// set_C(1e3) on the rank-deficient blobs stream of the tests ran to the step limit). Longer
/// cycles of zero-length steps remain possible on such a J: on aarch64 the same set_C cycles
/// through 4 migrations during a pivot swap (two examples entering and leaving, the pivot
/// refused each time) and ends at the step limit, undone like any failure.
///
/// Empty margin set (start-up, all-bound solutions): J = [0] cannot balance a driven change
/// with r != 0. As Diehl & Cauwenberghs describe, only b moves then (in the direction sign(r),
/// t frozen) until an E or R example reaches g = 0 and enters S; such an example always
/// exists when r != 0 (the driven class has an example moving towards its margin).
///
/// Dependent rows (exact or near duplicates of a margin vector, > d+1 margin vectors with the
/// linear kernel): a candidate i for S would make J (numerically) singular when its Schur
/// complement s = Q_ii - v^T R v, v = [y_i; Q_Si], or s refined by one step of iterative
/// refinement (s' = s + w^T (J w - v), w = R v) is <= 1e-9 max(1, Q_ii), or when s' is <=
/// 1e3 eps (|Q_ii| + |w|^T (|J| |w| + |v|)), its rounding floor. The refinement removes the
/// error R carries between refactorisations, which the plain s inherits (see enter_margin: an
/// exactly dependent row had s up to 2.6e-3). With a ridge the true s is >= ridge
/// (Q_SS >= ridge I), so the floor term is capped at ridge / 2 there. Without a ridge, an exact
/// copy of a margin vector's x is refused outright (its row of J is +- that vector's).
/// Its row of J is then ~ a combination beta = R v of the margin rows, so moving alpha_i by
/// delta and (b, a_S) by -beta delta leaves g_S unchanged and g_i almost so (it moves by s
/// delta).
///  - Exact dependence: g_i moves with the margin's, dg_i is rounding noise and g_i stays 0.
///    |dg| below 1e-14 (~50 eps) of the step's scale triggers no event; a candidate that fires
///    anyway with |dg_i| below 1e-9 of that scale is blocked (stays in E or R) until S changes.
///    A new example with g >= -1e-12 goes straight to R ("no change needed"), which is where a
///    duplicate of a margin vector goes.
///  - Near dependence (|dg_i| above that): i is swapped in. With t frozen its alpha is driven
///    into its box (+1 from R, -1 from E), the margin vectors compensating by -beta, until a
///    margin vector reaches a bound and leaves S (then i enters S) or alpha_i reaches its
///    other bound (g_i staying ~0, valid in E and in R). Measured with RBF near-duplicates at
///    distance 1e-4 (gamma 1): KT to 1e-12; at 1e-6 and 1e-8: KT to ~1e-7.
///
/// Inverse maintenance: R is kept by IncrementalInverse (O(|S|^2) bordering / Schur downdate).
/// The first margin vector sets R = [[-Q_ii, y_i], [y_i, 0]] directly; removing the last one
/// empties it. Every 8 migrations (and when a direction is not finite) a probe residual
/// max|R J v - v| is measured in O(|S|^2); above 1e-10 R is refactorised from J (O(|S|^3)).
///
/// Memory: the examples (N x d), y, alpha, g, weights, set, keys, R ((|S|+1)^2) and, as in
/// the paper (TVM 2.3), the N x |S| block of Q against the margin vectors: it gives the
/// bordering row of an example entering S in O(|S|) and dg in O(N |S|) without kernel
/// evaluations; a kernel column (O(N d)) is computed only when an example enters S or is the
/// driven one. Recomputing Q_{:,S} on demand would cost O(N |S| d) per bookkeeping step.
/// A step costs O(N |S| + |S|^2); an operation costs O(N d) plus that per migration.
/// The undo journal (see "Failure") adds buffers of the size of Q_{:,S}, R and the
/// per-example vectors once an operation has run a path.
///
/// Rounding control: after every step, one to three rounds of iterative refinement
/// [db; da_S] = -R [sum y a; g_S] (only when that residual exceeds 1e-13 of its scale) keep
/// the equality and the margin conditions at rounding level; g is only ever changed together
/// with the alphas (g += Q_{:,j} da_j; the one overwrite is g_i = 0 for an example entering S,
/// a rounding-level change), so it stays the true gradient (measured drift against a
/// recomputation: ~1e-13).
///
/// Failure: more than 1000 + 50 N bookkeeping steps in one operation, a non-finite direction
/// after refactorising, or a singular J throw std::runtime_error. After every operation the
/// KT conditions are verified in O(N) (1e-6 in g, 1e-8 relative in alpha); a violation (seen
/// only with a numerically rank-deficient kernel matrix: RBF with gamma * spread^2 <= 0.01 at
/// any C, or ~0.1 with C ~ 1e5, where cond(J) reaches 1e10 and more) triggers one repair and
/// then std::runtime_error naming the violation: no silent wrong answer.
/// Parameters out of double precision's reach are a std::invalid_argument instead
/// (detail::IDSVMScaleError, naming C or the ridge): a step's scale C x weight x max(k(x, x) +
/// ridge) of 1e14 (max_scale(), up front by check_scale() where k(x, x) is known) or more, at
/// which no example can enter an empty margin set; a ridge more than 1e3 times max k(x, x)
/// when J fails to refactorise (cond(J) ~ ridge^2 / |S|).
///
/// Capacity independence: a loaded copy's storage holds exactly its examples, the original's
/// as many as it once held (it never shrinks). Every product over that storage (Q_{:,S}, R)
/// goes through detail::add_product_compact_order, whose rounding depends on the matrix's
/// size only, so copy and original continue bit for bit (and so does an object whose storage
/// grew and shrank against one that never grew).
///
/// Strong exception guarantee: every operation (learn, unlearn, set_weight, set_C) that
/// throws leaves the object bitwise as before the call (every field save() writes and the
/// internal ones: capacities aside, nothing differs), and usable: the problem that broke
/// down is not kept, so a later operation that is well conditioned succeeds (a learner must
/// not lose what it learned to one bad example). A failed learn hands out no key: the next
/// learn gets the same one, which keeps the keys of one-vs-rest machines equal to the
/// example's position in the stream (IncrementalSVC). Several operations can be grouped into
/// one undoable unit (begin_transaction / commit / rollback).
/// Why an undo journal (m_tx) and not a copy of the object: an operation changes far less
/// than the whole state, and a copy would cost O(N d) plus N map nodes even on the fast
/// paths. The journal records the light changes as they happen (a pushed row: O(1) to pop;
/// an erased row: O(d + |S|) saved, re-inserted with its index-map node; an old weight; the
/// writes to Q_{:,S}: learn's row of the new example, O(|S|), and the column a migration
/// overwrites, O(N), once per column while the rows stay put), and before the first path or
/// repair of a transaction one snapshot of what those do not cover: alpha, g, weights, sets,
/// slots, S, R, b, C, counters. That is O(|S|^2 + N), within the cost of one migration (an
/// O(|S|^2) update of R), into member buffers grown to the object's capacities and reused (no
/// allocation once grown). The rows' x, y and keys, the index map, the next key and the kernel
/// scale are not copied: only pushes and erases change them. The fast paths take no snapshot:
/// a new example that goes straight to R, unlearning an example with alpha = 0 outside S, a
/// weight change that moves no alpha. Measured against the code without the journal (paired
/// runs, same flags, medians of 9, two sessions): learning 2,000 (noisy) checkerboard examples
/// (RBF gamma 1.35, C = 100) took 2-5 % longer, unlearning 200 of them 1-5 %, the TVM (B =
/// 100) over 30,000 examples -1 to +1 % (noise); the results are bit for bit the same. The
/// snapshot then also copied Q_{:,S}, O(N |S|) per operation: 15% of a one-vs-rest fit with a
/// large margin set (10 classes, d = 64, C = 10, 1,000 examples, ~995 margin vectors; 4.38 ->
/// 3.77 s with Q_{:,S} journaled, 2,000 examples 22.9 -> 20.4 s and peak RSS 787 -> 694 MB;
/// the binary noisy checkerboard above 4.13 -> 3.96 s; same bits).
///
/// The remedy for the breakdown is a small ridge (constructor argument; see "Ridge" above),
/// which changes the problem to the SVM on K + ridge I. Measured (2-D Gaussian blobs, N = 400,
/// RBF gamma 1e-3, 1e-2 and 0.1, 8 streams each; without a ridge 0-4 of 8 break down at C =
/// 1e2 to 1e4, all 8 at C >= 1e5): every stream learned with ridge 1e-6 at C <= 1e4 and with
/// 1e-4 at C = 1e5 and 1e6 (1e-6 still failed 1-6 of 8 at C = 1e5, 1e-5 up to 1 of 8 at 1e6):
/// a large C needs a ridge of ~10 / C (alpha then stays below ~1 / ridge).

#include "../incremental_inverse.hpp"
#include "../io.hpp"
#include "../kernel.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace budgetkernel {

/// Membership of a stored example (S, E, R of the TVM paper).
enum class SVMSet : std::int8_t { Margin = 0, Error = 1, Reserve = 2 };

namespace detail {

/// Test hook (like SparsePAParams::force_sample; for the tests of the strong exception
/// guarantee only): while > 0, every bookkeeping step of every IncrementalSVM on this thread
/// counts it down, and the step that brings it to 0 throws std::runtime_error in the middle of
/// its operation (after the step moved alpha, g and b, before its migration), as a numerical
/// breakdown would. 0 (the default): off. One thread-local integer, no model-file field.
inline thread_local std::int64_t idsvm_fail_countdown = 0;

/// Thrown by IncrementalSVM when C (times an example's weight) or the ridge is too large for
/// the kernel's scale to be learned in double precision (see IncrementalSVM::check_scale). A
/// std::invalid_argument (ValueError in Python): a parameter is at fault, not the data's
/// conditioning (that breakdown is a std::runtime_error). The operation is undone like any
/// failure.
class IDSVMScaleError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// For the learners built on IncrementalSVM (IncrementalSVC, TwinVectorMachine): runs
/// `learn_chunk` (a loop over a chunk whose every step is atomic) and rethrows a
/// std::runtime_error (an IDSVMScaleError as such) with the number of examples of the chunk
/// learned before the failing one, read from the learner's example counter (`examples`), which
/// a failed step leaves unchanged.
template <class F>
void report_chunk_failure(const char* who, const std::int64_t& examples, F&& learn_chunk) {
  const std::int64_t before = examples;
  const auto prefix = [&] {
    const std::string k = std::to_string(examples - before);
    return std::string(who) + ": example " + k + " of the chunk (0-based) could not be learned and was undone; the " +
           k + " examples before it stay learned (the model is exactly as after them). Cause: ";
  };
  try {
    learn_chunk();
  } catch (const IDSVMScaleError& e) {
    throw IDSVMScaleError(prefix() + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(prefix() + e.what());
  }
}

}  // namespace detail

class IncrementalSVM {
 public:
  IncrementalSVM() { reset_storage(1, 1); }

  /// ridge >= 0 is added to the diagonal of the training kernel matrix (K + ridge I, see the
  /// file comment); 0 (the default) is the exact SVM.
  /// \throws std::invalid_argument on dim < 1, C not positive and finite, or ridge negative
  ///         or not finite.
  IncrementalSVM(Index dim, const Kernel& kernel, double C, double ridge = 0.0) {
    detail::require(dim >= 1, "IncrementalSVM: dim must be >= 1");
    check_C(C);
    check_ridge(ridge);
    m_d = dim;
    m_kernel = kernel;
    m_C = C;
    m_ridge = ridge;
    reset_storage(dim, 16);
  }

  /// The largest C x weight x max(k(x, x) + ridge) a path can work with: 1 / kGNoise = 1e14.
  /// With the margin set empty (every first example, and all-bound solutions) only b moves,
  /// and each example's g then moves at rate 1; the path treats |dg| below kGNoise times the
  /// step's scale (that product) as rounding noise, so from this scale on no example can enter
  /// S and the path stops ("empty margin set"). Below it a large C can still break down from an
  /// ill-conditioned J (see "Failure" and "Ridge" in the file comment).
  static constexpr double max_scale() { return 1.0 / kGNoise; }

  /// Up-front form of that limit, for the kernels whose k(x, x) is known without data (RBF:
  /// k(x, x) = 1): the first example of weight 1 fails at such a C and ridge, so say so before
  /// learning. The learners do not call it (a model file of an old version must load); the
  /// Python binding does when it builds a model and before set_C.
  /// \throws detail::IDSVMScaleError (a std::invalid_argument) naming C or the ridge.
  static void check_scale(const Kernel& kernel, double C, double ridge) {
    if (!kernel.unit_diagonal() || !(std::isfinite(C) && std::isfinite(ridge))) return;
    const double q = ridge > 0.0 ? 1.0 + ridge : 1.0;  // q_diag() of every example
    // The test of run_path's first step (|dg| = 1 against kGNoise (|db| + kmax sum_da), db = 1).
    if (!(1.0 > kGNoise * (1.0 + q * C)))
      throw detail::IDSVMScaleError("IncrementalSVM: " + scale_message(C, 1.0, 1.0, ridge) +
                                    " (checked up front: at this C and ridge not even one example of weight 1 "
                                    "can be learned)");
  }

  Index size() const { return m_n; }
  Index dim() const { return m_d; }
  const Kernel& kernel() const { return m_kernel; }
  double C() const { return m_C; }
  /// The diagonal ridge of the training kernel matrix (0: the exact SVM).
  double ridge() const { return m_ridge; }
  double bias() const { return m_b; }

  /// Learns (x, y, weight): adiabatic increments until every KT condition holds again.
  /// Returns the example's key (0, 1, 2, ... in order of learning). A key that was returned
  /// is never handed out again, also after its example was unlearned; a learn that throws
  /// returns none, and the next learn gets the key it would have had (see "Failure").
  std::int64_t learn(const double* xp, double y, double weight = 1.0) {
    detail::require(xp != nullptr, "IncrementalSVM::learn: x is null");
    if (const char* problem = detail::learn_row_problem(m_kernel, xp, m_d))
      detail::invalid(std::string("IncrementalSVM::learn: x ") + problem);
    detail::require(y == 1.0 || y == -1.0, "IncrementalSVM::learn: y must be +1 or -1");
    check_weight(weight);
    Operation op(*this);
    const Index c = push_example(xp, y);
    // Q_{:,c} once: the driven column and, if c enters S, its column of Q_{:,S}.
    compute_column(c, m_colc);
    journal_q_row(c);
    for (Index p = 0; p < n_margin(); ++p) m_Q(c, p) = m_colc(m_S[static_cast<std::size_t>(p)]);
    // g_c = y_c f(x_c) - 1 = sum_i a_i Q_ic + y_c b - 1.
    double g = y * m_b - 1.0;
    for (Index i = 0; i < c; ++i) g += m_alpha(i) * m_colc(i);
    m_g(c) = g;
    const std::int64_t key = m_key[c];
    if (g >= -kNoChange) {
      // KT holds with alpha_c = 0 (this includes duplicates of margin vectors): C&P's R case.
      // Only the push happened; its journal entry undoes it (no snapshot on this fast path).
      m_set[c] = SVMSet::Reserve;
      m_s(c) = weight;
      op.done();
      return key;
    }
    snapshot();
    m_set[c] = SVMSet::Error;  // alpha_c = 0 = its bound C * 0
    m_s(c) = 0.0;
    run_path(Mode::Weight, c, 0.0, weight);
    verify("learn");
    op.done();
    return key;
  }

  /// Decremental unlearning (adiabatic reversal). \throws std::invalid_argument on an unknown key.
  /// `stop` (may be null) is asked between two bookkeeping steps of the path; when it says
  /// stop, the operation is undone (as any operation that throws) and Interrupted(0) thrown.
  /// The same for set_weight and set_C.
  void unlearn(std::int64_t key, StopPoll* stop = nullptr) {
    const Index c = checked_index(key, "unlearn");
    Operation op(*this);
    if (m_set[c] != SVMSet::Margin && m_alpha(c) == 0.0) {
      // Nothing depends on an example with alpha = 0 outside S: every other alpha, g and the
      // margin system stay as the last operation verified them. Only its row goes (journaled).
      erase_example(c);
      op.done();
      return;
    }
    snapshot();
    if (m_set[c] == SVMSet::Margin) {
      m_set[c] = SVMSet::Error;  // placeholder: c is outside the KT system from now on
      leave_margin(c);
    }
    // Nothing to drive for the last stored example (no other example could take up the change
    // of sum y alpha) or for an alpha at rounding level (left by a path's clamp, e.g. after its
    // partner was unlearned): it leaves as it is, settle() absorbs the rounding-level change.
    if (m_alpha(c) != 0.0 && (m_n == 1 || std::abs(m_alpha(c)) <= 1e-12 * m_C * m_s(c))) m_alpha(c) = 0.0;
    if (m_alpha(c) != 0.0) {
      compute_column(c, m_colc);
      m_driven = c;
      run_path(Mode::Unlearn, c, m_alpha(c), 0.0, stop);
      m_driven = -1;
    }
    erase_example(c);
    settle();
    verify("unlearn");
    op.done();
  }

  /// Moves the bound C s_i of one example adiabatically to C * weight.
  void set_weight(std::int64_t key, double weight, StopPoll* stop = nullptr) {
    const Index c = checked_index(key, "set_weight");
    check_weight(weight);
    if (weight == m_s(c)) return;
    Operation op(*this);
    if (m_set[c] == SVMSet::Reserve || (m_set[c] == SVMSet::Margin && m_alpha(c) <= m_C * weight)) {
      // The solution stays optimal: no alpha moves, only the weight (journaled, no snapshot).
      journal_weight(c);
      m_s(c) = weight;
      op.done();
      return;
    }
    snapshot();
    compute_column(c, m_colc);
    run_path(Mode::Weight, c, m_s(c), weight, stop);
    verify("set_weight");
    op.done();
  }

  /// Regularisation-parameter perturbation C_old -> C_new (Diehl & Cauwenberghs).
  void set_C(double C, StopPoll* stop = nullptr) {
    check_C(C);
    if (C == m_C) return;
    Operation op(*this);
    snapshot();
    // h = Q_{:,E} s_E, the driving direction per unit of C, kept as E changes. Not from E's
    // kernel columns (|E| n kernel values: 35% of a TVM's time, which rescales C with every
    // accepted update) but from g, which holds it already: alpha_E = C s_E (the bound), so
    // g = Q_{:,S} alpha_S + C Q_{:,E} s_E + y b - 1 gives h = (g + 1 - y b - Q_{:,S} alpha_S) / C,
    // O(n |S|). Against the columns, over every set_C of two TVM runs (2-D noisy checkerboard,
    // C = 100; B = 100, 30,000 examples, 1,818 calls; B = 500, 20,000 examples): at most
    // 6e-14 apart, relative to max |h|.
    const Index n = m_n, P = n_margin();
    bool any_error = false;
    for (Index i = 0; i < n && !any_error; ++i) any_error = m_set[i] == SVMSet::Error;
    if (!any_error) {
      m_h.head(n).setZero();  // exactly: nothing drives the path
    } else {
      for (Index p = 0; p < P; ++p) m_jw(p) = m_alpha(m_S[static_cast<std::size_t>(p)]);
      m_h.head(n) = m_g.head(n) - m_b * m_y.head(n);
      m_h.head(n).array() += 1.0;
      if (P > 0) detail::add_product_compact_order(m_h.head(n), m_Q.topLeftCorner(n, P), m_jw.head(P), true);
      m_h.head(n) /= m_C;
    }
    run_path(Mode::RegC, -1, m_C, C, stop);
    verify("set_C");
    op.done();
  }

  /// Transactions: the operations (learn, unlearn, set_weight, set_C) between
  /// begin_transaction() and commit() form one unit, which rollback() undoes: the object is
  /// then bitwise as at begin_transaction(). IncrementalSVC applies one example to all its
  /// one-vs-rest machines this way and TwinVectorMachine one UpdateTVM (several unlearns,
  /// set_C and learns), so that a failure in any of them leaves the learner as before.
  /// Outside a transaction every operation is its own and rolls itself back when it throws.
  /// Inside one, an operation that throws leaves the object to the caller's rollback() (the
  /// state is then the intermediate one of the failed operation). A copy of the object starts
  /// without a transaction (the journal is not copied); save() does not write it.
  /// \throws std::invalid_argument if a transaction is already open.
  void begin_transaction() {
    detail::require(!m_tx.open, "IncrementalSVM::begin_transaction: a transaction is already open");
    m_tx.start();
  }
  /// Ends the open transaction, keeping its changes (no-op without one).
  void commit() noexcept { m_tx.close(); }
  /// Undoes the open transaction (no-op without one) and ends it. Allocates nothing and cannot
  /// throw: every buffer it writes to has at least the size it had when the entry was made.
  void rollback() noexcept {
    if (!m_tx.open) return;
    auto& log = m_tx.log;
    for (auto e = log.rbegin(); e != log.rend(); ++e) {
      switch (e->kind) {
        case Journal::Kind::Push: unpush(*e); break;
        case Journal::Kind::Erase: unerase(*e); break;
        case Journal::Kind::Weight: m_s(e->i) = e->v; break;
        case Journal::Kind::Snapshot: restore_snapshot(); break;
        case Journal::Kind::QRow: m_Q.row(e->i).head(e->p) = Eigen::Map<const Eigen::RowVectorXd>(m_tx.rows.data() + e->at, e->p); break;
        case Journal::Kind::QCol: m_Q.col(e->i).head(e->n) = Eigen::Map<const Vector>(m_tx.rows.data() + e->at, e->n); break;
      }
    }
    gather_qss();  // from the restored Q_{:,S} and S (within m_Qss's size: it never shrinks)
    m_driven = -1;
    m_check_due = false;
    m_tx.close();
  }
  /// Whether a transaction is open (between begin_transaction() and commit() / rollback()).
  bool in_transaction() const { return m_tx.open; }

  /// f(x) = sum_i y_i alpha_i K(x_i, x) + b. O(N d). Thread-safe. `dots`: x's dot products
  /// with the stored examples when already known (a row of dots_rows), else null.
  double decision(const double* xp, const double* dots = nullptr) const {
    if (m_n == 0) return m_b;
    thread_local Vector krow;
    if (krow.size() < m_n) krow.resize(m_n);
    kernel_row(xp, krow, dots);
    return decision_from_row(krow);
  }
  /// k(x_i, x) for the stored examples into out.head(size()) (shared by one-vs-rest machines);
  /// from x's dot products with them when `dots` is given (the same values, bit for bit).
  void kernel_row(const double* xp, Eigen::Ref<Vector> out, const double* dots = nullptr) const {
    const Eigen::Map<const Vector> x(xp, m_d);
    m_kernel.row(m_X, m_sq, m_n, x, x.squaredNorm(), out, dots);
  }
  /// D = the dot products of the rows of X with the stored examples (X.rows() x size()), as
  /// SupportVectors::dots_rows (register tiles from detail::kDotBlockMinDim features on).
  void dots_rows(const Eigen::Ref<const RowMatrix>& X, RowMatrix& D) const {
    D.resize(X.rows(), m_n);
    Kernel::dots_rows(m_X, m_n, X, D);
  }
  /// f(x) from a kernel row over the stored examples.
  double decision_from_row(const Eigen::Ref<const Vector>& krow) const {
    double f = m_b;
    for (Index i = 0; i < m_n; ++i)
      if (m_alpha(i) != 0.0) f += m_y(i) * m_alpha(i) * krow(i);
    return f;
  }
  /// f(x_key) of the stored example from its g, O(1): y (g + 1 - ridge alpha), the plain
  /// decision function (no ridge term; equal to decision(x_key) up to rounding). With ridge
  /// > 0, y f(x_key) - 1 = g - ridge alpha differs from g, the gradient of the ridged dual.
  double decision_at(std::int64_t key) const {
    const Index i = checked_index(key, "decision_at");
    if (m_ridge > 0.0) return m_y(i) * (m_g(i) + 1.0 - m_ridge * m_alpha(i));
    return m_y(i) * (m_g(i) + 1.0);
  }

  Index index_of(std::int64_t key) const {
    const auto it = m_index.find(key);
    return it == m_index.end() ? Index(-1) : it->second;
  }
  std::int64_t key(Index i) const { return m_key[check_i(i)]; }
  const RowMatrix& X() const { return m_X; }
  double y(Index i) const { return m_y(check_i(i)); }
  double alpha(Index i) const { return m_alpha(check_i(i)); }
  double weight(Index i) const { return m_s(check_i(i)); }
  /// g_i = y_i f(x_i) + ridge alpha_i - 1, the gradient of the (ridged) dual.
  double g(Index i) const { return m_g(check_i(i)); }
  SVMSet set(Index i) const { return m_set[check_i(i)]; }
  Index n_margin() const { return static_cast<Index>(m_S.size()); }
  /// The margin vectors in the order of R's rows 1..|S|.
  const std::vector<Index>& margin_set() const { return m_S; }
  /// Bookkeeping steps and refactorisations so far (diagnostics).
  std::int64_t n_steps() const { return m_steps; }
  std::int64_t n_refactors() const { return m_refactors; }
  /// Repairs after a numerically inaccurate operation (see the file comment; 0 when well conditioned).
  std::int64_t n_repairs() const { return m_repairs; }

  /// 1/2 a^T Q a - sum a from g: a^T Q a = sum a_i (g_i + 1 - y_i b). O(N). With a ridge, Q
  /// includes it: the objective of the dual on K + ridge I.
  double dual_objective() const {
    double w = 0.0, ya = 0.0;
    for (Index i = 0; i < m_n; ++i) {
      w += m_alpha(i) * (m_g(i) - 1.0);
      ya += m_y(i) * m_alpha(i);
    }
    return 0.5 * w - 0.5 * m_b * ya;
  }

  /// Largest violation of the KT conditions (with weights) and of sum y a = 0. O(N).
  double kkt_violation() const {
    double v = 0.0, ya = 0.0;
    for (Index i = 0; i < m_n; ++i) {
      const double a = m_alpha(i), u = m_C * m_s(i), g = m_g(i);
      ya += m_y(i) * a;
      switch (m_set[i]) {
        case SVMSet::Margin: v = (std::max)({v, std::abs(g), -a, a - u}); break;
        case SVMSet::Error: v = (std::max)({v, g, std::abs(a - u)}); break;
        case SVMSet::Reserve: v = (std::max)({v, -g, std::abs(a)}); break;
      }
    }
    return (std::max)(v, std::abs(ya));
  }

  /// The maintained R = J^{-1} ((|S| + 1) x (|S| + 1): row and column 0 the bias, then the
  /// margin vectors in margin_set() order; empty when S is). A copy, for diagnostics.
  Eigen::MatrixXd inverse_matrix() const {
    return m_S.empty() ? Eigen::MatrixXd(0, 0) : Eigen::MatrixXd(m_R.inverse());
  }

  /// max |R J - I| of the maintained inverse against J built from the stored Q_{:,S}. O(|S|^3).
  double inverse_residual() const {
    if (m_S.empty()) return 0.0;
    const Eigen::MatrixXd J = build_J();
    Eigen::MatrixXd r = m_R.inverse() * J;
    r.diagonal().array() -= 1.0;
    return r.cwiseAbs().maxCoeff();
  }

  /// Writes the exact state under `prefix` (resumes bit for bit).
  void save(FieldMap& fm, const std::string& prefix) const {
    const Index n = m_n, P = n_margin();
    fm.set_int(prefix + "dim", m_d);
    write_kernel(fm, m_kernel, prefix);
    fm.set(prefix + "C", m_C);
    fm.set(prefix + "ridge", m_ridge);
    fm.set(prefix + "b", m_b);
    fm.set_int(prefix + "next_key", m_next_key);
    fm.set_int(prefix + "steps", m_steps);
    fm.set_int(prefix + "refactors", m_refactors);
    fm.set_int(prefix + "since_check", m_since_check);
    fm.set_int(prefix + "repairs", m_repairs);
    // max |Q_ii| over every example seen, unlearned ones included: it scales the path's noise
    // and pivot thresholds, so recomputing it from the remaining examples on load changed the
    // path after a reservoir's removals (resumed ~1e-13 off).
    fm.set(prefix + "kmax", m_kmax);
    fm.set_matrix(prefix + "x", m_X.topRows(n));
    RowMatrix v(n, 4);
    for (Index i = 0; i < n; ++i) v.row(i) << m_y(i), m_alpha(i), m_s(i), m_g(i);
    fm.set_matrix(prefix + "ya_s_g", v);
    std::vector<std::int64_t> keys(m_key.begin(), m_key.begin() + n), sets(static_cast<std::size_t>(n)),
        S(m_S.begin(), m_S.end());
    for (Index i = 0; i < n; ++i) sets[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(m_set[i]);
    fm.set_ints(prefix + "keys", keys);
    fm.set_ints(prefix + "sets", sets);
    fm.set_ints(prefix + "margin", S);
    fm.set_matrix(prefix + "Q_S", m_Q.topLeftCorner(n, P));
    fm.set_matrix(prefix + "R", P > 0 ? Eigen::MatrixXd(m_R.inverse()) : Eigen::MatrixXd(0, 0));
  }

  /// Restores what save() wrote. A file without the ridge field (written before it existed)
  /// loads with ridge 0. \throws std::runtime_error ("model file: ...") on missing,
  /// inconsistent or non-finite fields (the object is then left unchanged).
  void load(const FieldMap& fm, const std::string& prefix) {
    IncrementalSVM t;
    t.m_d = fm.get_i64(prefix + "dim");
    if (t.m_d < 1 || t.m_d > (std::int64_t{1} << 40)) detail::corrupt("IDSVM: invalid dimension");
    t.m_kernel = read_kernel(fm, prefix);
    t.m_C = fm.get_f64(prefix + "C");
    t.m_ridge = fm.has(prefix + "ridge") ? fm.get_f64(prefix + "ridge") : 0.0;
    t.m_b = fm.get_f64(prefix + "b");
    if (!(std::isfinite(t.m_C) && t.m_C > 0.0) || !std::isfinite(t.m_b)) detail::corrupt("IDSVM: invalid C or b");
    if (!(std::isfinite(t.m_ridge) && t.m_ridge >= 0.0)) detail::corrupt("IDSVM: invalid ridge");
    t.m_next_key = fm.get_i64(prefix + "next_key");
    t.m_steps = fm.get_i64(prefix + "steps");
    t.m_refactors = fm.get_i64(prefix + "refactors");
    t.m_since_check = fm.get_i64(prefix + "since_check");
    t.m_repairs = fm.get_i64(prefix + "repairs");
    constexpr std::int64_t most = detail::kMaxLoadedCount;
    if (t.m_next_key < 0 || t.m_steps < 0 || t.m_refactors < 0 || t.m_since_check < 0 || t.m_repairs < 0 ||
        t.m_next_key > most || t.m_steps > most || t.m_refactors > most || t.m_since_check >= 8 || t.m_repairs > most)
      detail::corrupt("IDSVM: invalid counters");
    const RowMatrix X = fm.get_matrix(prefix + "x", -1, t.m_d);
    const Index n = X.rows();
    const RowMatrix v = fm.get_matrix(prefix + "ya_s_g", n, 4);
    const auto keys = fm.get_ints(prefix + "keys", n), sets = fm.get_ints(prefix + "sets", n);
    const auto S = fm.get_ints(prefix + "margin");
    const Index P = static_cast<Index>(S.size());
    const RowMatrix Q = fm.get_matrix(prefix + "Q_S", n, P);
    const RowMatrix R = fm.get_matrix(prefix + "R", P > 0 ? P + 1 : 0, P > 0 ? P + 1 : 0);
    if (!detail::rows_usable(X.data(), X.rows(), X.cols()) || !detail::all_finite(v.data(), v.size()) ||
        !detail::all_finite(Q.data(), Q.size()) || !detail::all_finite(R.data(), R.size()))
      detail::corrupt("IDSVM: non-finite state");
    t.reset_storage(t.m_d, std::max<Index>(16, n));
    t.m_n = n;
    t.m_X.topRows(n) = X;
    for (Index i = 0; i < n; ++i) {
      t.m_sq(i) = X.row(i).squaredNorm();
      t.m_y(i) = v(i, 0);
      t.m_alpha(i) = v(i, 1);
      t.m_s(i) = v(i, 2);
      t.m_g(i) = v(i, 3);
      const std::int64_t k = keys[static_cast<std::size_t>(i)], st = sets[static_cast<std::size_t>(i)];
      if ((t.m_y(i) != 1.0 && t.m_y(i) != -1.0) || !(t.m_s(i) > 0.0) || st < 0 || st > 2 || k < 0 ||
          k >= t.m_next_key || !t.m_index.emplace(k, i).second)
        detail::corrupt("IDSVM: invalid example " + std::to_string(i));
      t.m_key[i] = k;
      t.m_set[i] = static_cast<SVMSet>(st);
      t.m_slot[i] = -1;
      t.m_kmax = (std::max)(t.m_kmax, std::abs(t.q_diag(i)));
    }
    if (fm.has(prefix + "kmax")) {  // files written before it: the remaining examples' maximum
      const double kmax = fm.get_f64(prefix + "kmax");
      // It may exceed the stored examples' maximum (removed examples count), except for the RBF
      // kernel, where every example has the same Q_ii = 1 + ridge (0 before the first example).
      const bool rbf = t.m_kernel.type() == KernelType::RBF;
      if (!(std::isfinite(kmax) && kmax >= t.m_kmax) || (rbf && kmax != 0.0 && kmax != t.m_kernel.self(0.0) + t.m_ridge))
        detail::corrupt("IDSVM: invalid kmax");
      t.m_kmax = kmax;
    }
    for (Index p = 0; p < P; ++p) {
      const std::int64_t i = S[static_cast<std::size_t>(p)];
      if (i < 0 || i >= n || t.m_set[i] != SVMSet::Margin || t.m_slot[i] != -1) detail::corrupt("IDSVM: invalid margin set");
      t.m_slot[i] = p;
      t.m_S.push_back(static_cast<Index>(i));
    }
    for (Index i = 0; i < n; ++i)
      if (t.m_set[i] == SVMSet::Margin && t.m_slot[i] < 0) detail::corrupt("IDSVM: margin vector missing from the margin set");
    // Every stored column of Q_{:,S} is recomputed from the examples, the labels, the kernel
    // and the ridge (O(n |S| d), once): the learner's gradient steps read these columns, so an
    // altered entry would otherwise surface only as a failed update during later training. The
    // tolerance allows for a model saved by the other SIMD build (kernel values 1 ulp apart).
    {
      Vector col(n);
      for (Index p = 0; p < P; ++p) {
        t.compute_column(t.m_S[static_cast<std::size_t>(p)], col);
        for (Index i = 0; i < n; ++i)
          if (!(std::abs(Q(i, p) - col(i)) <= 1e-9 * (std::max)(1.0, std::abs(col(i)))))
            detail::corrupt("IDSVM: the stored Q_S does not match the examples, kernel and ridge");
      }
    }
    t.grow_cols(P);
    t.m_Q.topLeftCorner(n, P) = Q;
    t.gather_qss();
    if (P > 0) t.m_R.assign(R);
    // Loose consistency checks (a saved state satisfies them to ~1e-8 at worst).
    const double scale = 1.0 + t.m_C * (n > 0 ? t.m_s.head(n).maxCoeff() : 0.0);
    if (t.kkt_violation() > 1e-6 * scale) detail::corrupt("IDSVM: the state violates the KT conditions");
    if (P > 0) {
      // Two probes: the learner's own +-1 vector v, and u = (1, y_S). An altered entry in R's
      // bias row or column meets J only through J(0,:) v = sum_s y_s v_s, which is 0 for some
      // +-1 vectors (an altered R(0,0) loaded unnoticed); for u that sum is |S|.
      const Eigen::MatrixXd J = t.build_J();
      Vector u(P + 1);
      u(0) = 1.0;
      for (Index p = 0; p < P; ++p) u(p + 1) = t.m_y(t.m_S[static_cast<std::size_t>(p)]);
      // (Parameter named inv, not R: R above is the stored matrix, and shadowing it warns
      // under -Wshadow in user code that includes this header.)
      const auto residual_u = [&](const IncrementalInverse& inv) {
        return (inv.inverse() * (J * u) - u).cwiseAbs().maxCoeff();
      };
      const double ru = residual_u(t.m_R);
      if (!(t.probe_residual() <= 1e-6 && ru <= 1e-6)) {
        // An ill-conditioned J (e.g. a linear kernel on large features with a small ridge) can
        // leave even a fresh inverse above 1e-6, and the learner itself keeps such an R after
        // refactorising: compare with what a refactorisation of the stored J reaches.
        IncrementalInverse fresh;
        try {
          fresh.refactor(J);
        } catch (const std::runtime_error&) {
          detail::corrupt("IDSVM: the stored margin set makes J singular");
        }
        if (!(t.probe_residual() <= (std::max)(1e-6, 1e3 * fresh.probe_residual(J)) &&
              ru <= (std::max)(1e-6, 1e3 * residual_u(fresh))))
          detail::corrupt("IDSVM: the inverse does not match J");
      }
    }
    *this = std::move(t);
  }

 private:
  enum class Mode { Weight, RegC, Unlearn };
  static constexpr double kNoChange = 1e-12;  ///< g >= -this: a new example needs no alpha
  static constexpr double kDependent = 1e-9;  ///< relative Schur complement of a dependent row
  static constexpr double kSchurNoise = 1e3;  ///< refined Schur complement below this x its rounding floor: dependent
  static constexpr double kDoubtful = 1e-6;  ///< relative Schur complement verified against a checked R
  static constexpr double kGNoise = 1e-14;    ///< relative size of noise in dg (~50 eps)
  static constexpr double kANoise = 1e-13;    ///< relative size of noise in the alpha rates
  static constexpr double kPivot = 1e-9;     ///< relative |dg| above which a dependent candidate is swapped in
  static constexpr double kRefactor = 1e-10;  ///< probe residual that triggers a refactorisation
  static constexpr double kHugeRidge = 1e3;   ///< ridge / max k(x, x) above which a singular J is the ridge's fault

  static void check_C(double C) {
    detail::require(std::isfinite(C) && C > 0.0, "IncrementalSVM: C must be a positive finite number");
  }
  static void check_ridge(double r) {
    detail::require(std::isfinite(r) && r >= 0.0, "IncrementalSVM: ridge must be a finite number >= 0");
  }
  static void check_weight(double w) {
    detail::require(std::isfinite(w) && w > 0.0, "IncrementalSVM: weight must be a positive finite number");
  }
  Index check_i(Index i) const {
    detail::require(i >= 0 && i < m_n, "IncrementalSVM: index out of range");
    return i;
  }
  Index checked_index(std::int64_t key, const char* what) const {
    const Index i = index_of(key);
    if (i < 0) detail::invalid(std::string("IncrementalSVM::") + what + ": unknown key " + std::to_string(key));
    return i;
  }

  void reset_storage(Index d, Index cap) {
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

  void grow_rows(Index need) {
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
  void grow_cols(Index need) {
    if (need <= m_Q.cols()) return;
    const Index nc = (std::max)(need, 2 * m_Q.cols());
    m_Q.conservativeResize(m_Q.rows(), nc);
    m_Qss.conservativeResize(nc, nc);
    for (Vector* v : {&m_rhs, &m_dir, &m_jw, &m_ajw}) v->conservativeResize(nc + 1);
    m_R.reserve(nc + 1);
  }

  /// Appends example (x, y) as row m_n under key m_next_key (journaled: a failed operation pops it).
  Index push_example(const double* xp, double y) {
    grow_rows(m_n + 1);
    const Index c = m_n;
    const std::int64_t key = m_next_key;
    // The entry first: its undo sets m_n, m_next_key and m_kmax back by value and drops the
    // key, which is right whatever point of the push an exception (bad_alloc) interrupted.
    m_tx.log.push_back({Journal::Kind::Push, c, 0, 0, key, m_kmax, 0, SVMSet::Reserve});
    ++m_tx.stamp;  // the rows change: columns saved before no longer cover them
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
  /// into row `to`, and the index map pointed at `to`; S is the caller's (erase and unerase
  /// differ there).
  void move_row(Index from, Index to, Index P) noexcept {
    m_X.row(to) = m_X.row(from);
    for (Vector* v : {&m_sq, &m_y, &m_alpha, &m_g, &m_s}) (*v)(to) = (*v)(from);
    m_set[to] = m_set[from];
    m_key[to] = m_key[from];
    m_slot[to] = m_slot[from];
    m_Q.row(to).head(P) = m_Q.row(from).head(P);
    m_index.find(m_key[to])->second = to;
  }

  /// Swap-with-last removal of example i (not in S), journaled: the row is saved first and
  /// its index-map node kept, so that unerase() restores both without allocating.
  void erase_example(Index i) {
    journal_erase(i);
    const Index last = m_n - 1;
    m_tx.nodes.push_back(m_index.extract(m_key[i]));  // capacity reserved by journal_erase: no throw
    if (i != last) {
      move_row(last, i, n_margin());
      if (m_slot[i] >= 0) m_S[m_slot[i]] = i;
    }
    m_n = last;
  }

  /// Q_ii = k(x_i, x_i) + ridge: the one place the diagonal of Q is formed (with ridge 0 the
  /// kernel value itself, bit for bit).
  double q_diag(Index i) const {
    const double k = m_kernel.self(m_sq(i));
    return m_ridge > 0.0 ? k + m_ridge : k;
  }

  /// out(i) = Q_ij = y_i y_j K(x_i, x_j) for every stored i; the diagonal from q_diag.
  void compute_column(Index j, Vector& out) const {
    m_kernel.row(m_X, m_sq, m_n, m_X.row(j).transpose(), m_sq(j), out);
    const double yj = m_y(j);
    for (Index i = 0; i < m_n; ++i) out(i) *= m_y(i) * yj;
    out(j) = q_diag(j);
  }

  /// Adds example i (with g_i = 0) to S if its row of J is independent. Returns false when
  /// dependent: the Schur complement s = Q_ii - v^T R v, v = [y_i; Q_Si], or s' = s refined by
  /// one step of iterative refinement (schur_correction) is at most kDependent max(1, Q_ii), or
  /// s' is at most kSchurNoise times its rounding floor eps (|Q_ii| + |w|^T (|J| |w| + |v|)),
  /// w = R v. A row is taken only when both estimates call it independent: the test is never
  /// looser than the plain one it replaces (measured: the RBF streams below behave exactly as
  /// with it; taking s' alone let a row into S at RBF gamma 0.01, C = 1e6 (two_gaussians)
  /// that made J singular, rcond 9.8e-13, instead of the KT breakdown that names the ridge).
  /// Why refined: R carries the error of its updates between refactorisations (probe residual
  /// up to kRefactor at a check, more in between), and v^T R v inherits it. Measured on a
  /// linear kernel in 2-D (reservoir of 30, checkerboard; S already holding d + 1 = 3 vectors,
  /// so every further candidate is exactly dependent): plain s of such rows up to 2.6e-3 (probe
  /// residual 2.4e-4 at that moment) and 1.4e-9 at Q_ii = 0.27, which the test against
  /// 1e-9 max(1, Q_ii) let into S: J singular, "refactor: matrix is numerically singular" in
  /// 14 of 30 streams (C = 1, 10, 100, seeds 0..9). Refined, those rows are at most 4 times
  /// their rounding floor, independent rows at least 9e6 times it: 1e3 sits between. Why not
  /// a bound on the noise of the plain s (1e-9 |v|^T |R| |v|, or the probe residual times it):
  /// on an ill-conditioned J (RBF gamma 0.01, C = 1e5, blobs; cond(J) ~1e10) it rejected
  /// independent rows the machine relies on (plain s down to 8e-13 |v|^T |R| |v|, probe
  /// residual up to 2e-5 at that moment): 169 (1e-9 |v|^T |R| |v|), 119 ((probe residual +
  /// 1e3 eps) |v|^T |R| |v|) instead of 14 of 400 learns broke down, and set_C(1e3) then ran
  /// into the step limit; with this test: the same 14 as before, set_C(1e3) succeeds. The
  /// refinement costs O(|S|^2), as s itself.
  /// Why a verdict near the threshold is taken with a checked R: between checks R's error can
  /// grow far beyond kRefactor when J is ill-conditioned (probe residuals of 1.4 and 11 at
  /// checks, |S| = 12, on scikit-learn's sparse-input data below), and then even the refined s
  /// is off by orders of magnitude. So when s or s' is at most kDoubtful max(1, Q_ii), R is
  /// first probed (O(|S|^2)) and refactorised if the probe residual exceeds kRefactor
  /// (O(|S|^3), only in that case). Found on aarch64, whose fused multiply-adds in Eigen's
  /// products round R's updates differently: a row with s = 3.0e-7 but s' = 5.7e-9 from a
  /// drifted R entered S, J then had rcond 5.2e-13 and failed to refactorise (TVM, B = 30
  /// and 100, on that data), where x86-64 happened to reject it. Measured on x86-64 (Gaussian
  /// blobs, 400 learns and one set_C(C / 10) per stream, RBF gamma 1e-3 to 1, C = 1e2 to 1e5,
  /// 8 seeds each, 16 settings): 263 of the 51,328 operations broke down before, 176 with the
  /// check (and the rule against cycling in the file comment), none of them on a
  /// singular J (5 before); the well-conditioned settings took the same time. The counts of
  /// 14 above were measured before the check (now 9).
  /// With a ridge, s >= ridge for every row (the bordered J of a positive semi-definite kernel
  /// plus ridge I: 1/s = (J'^{-1})_ii <= 1 / ridge), so a value above ridge / 2 is that of an
  /// independent row whatever the rounding floor: the floor term is capped there.
  /// Without a ridge, an exact copy of a margin vector's x (a repeated example, a twin at the
  /// same point, identical rows of sparse data) is refused before any of that: its row of J is
  /// +- that vector's, dependent whatever R says. The Schur test alone missed one when J was
  /// ill-conditioned (found by scikit-learn's sparse-input check: TVM, B = 30, 40 rows of 3
  /// features, 60% zeros, 7 of them all-zero; the copy's refined s was 2.5e-9 against a
  /// threshold of 1e-9 and a rounding floor of 7e-13, and J then failed to refactorise).
  /// O(|S| d), and a differing row is usually told apart by its first value.
  bool enter_margin(Index i, const Vector* column) {
    const Index P = n_margin();
    const double kappa = q_diag(i);
    if (m_ridge == 0.0)
      for (Index p = 0; p < P; ++p)
        if (m_X.row(i) == m_X.row(m_S[static_cast<std::size_t>(p)])) return false;
    if (P == 0) {
      Eigen::Matrix2d R;
      R << -kappa, m_y(i), m_y(i), 0.0;  // [[0, y], [y, q]]^{-1}
      m_R.assign(R);
    } else {
      m_rhs(0) = m_y(i);
      for (Index p = 0; p < P; ++p) m_rhs(p + 1) = m_Q(i, p);
      const double scale = (std::max)(1.0, std::abs(kappa));
      double s = 0.0, refined = 0.0, rounding = 0.0;
      const auto schur = [&] {
        s = m_R.schur(m_rhs.head(P + 1), kappa, m_dir.head(P + 1));
        refined = s + schur_correction(P, kappa, rounding);
      };
      schur();
      if ((std::min)(s, refined) <= kDoubtful * scale && probe_residual() > kRefactor) {
        refactor();  // a verdict this close to the threshold needs an accurate R
        schur();
      }
      double noise = kSchurNoise * rounding;
      if (m_ridge > 0.0) noise = (std::min)(noise, 0.5 * m_ridge);
      if (!((std::min)(s, refined) > kDependent * scale && refined > noise)) return false;
      grow_cols(P + 1);
      m_R.append_from_schur(m_dir.head(P + 1), s, kappa);
    }
    grow_cols(P + 1);
    journal_q_col(P);
    if (column) {
      m_Q.col(P).head(m_n) = column->head(m_n);
    } else {
      compute_column(i, m_col);
      m_Q.col(P).head(m_n) = m_col.head(m_n);
    }
    m_Q(i, P) = kappa;
    for (Index p = 0; p < P; ++p) {
      m_Qss(p, P) = m_Q(m_S[static_cast<std::size_t>(p)], P);
      m_Qss(P, p) = m_Q(i, p);
    }
    m_Qss(P, P) = kappa;
    m_S.push_back(i);
    m_slot[i] = P;
    m_set[i] = SVMSet::Margin;
    m_g(i) = 0.0;
    note_migration();
    return true;
  }

  /// One step of iterative refinement of the Schur complement computed by enter_margin
  /// (v = m_rhs, w = R v = m_dir, both of size P + 1). Since J^{-1} v = w - J^{-1} (J w - v),
  /// the exact s = Q_ii - v^T J^{-1} v is s + w^T (J w - v) to first order in R's error.
  /// Returns that correction and sets rounding = eps (|Q_ii| + |w|^T (|J| |w| + |v|)), the
  /// scale of the rounding error of the refined value. O(|S|^2) (J w from Q_SS, as build_J).
  double schur_correction(Index P, double kappa, double& rounding) {
    const auto w = m_dir.head(P + 1);
    // (J w)_p and (|J| |w|)_p, from Q_SS (m_Qss): rows p >= 1 of J are rows S[p-1] of Q_{:,S},
    // scattered over column-major storage. Read row by row there, every value was in another
    // cache line (this function and build_J: 39% of a one-vs-rest fit, 10 classes, d = 64,
    // 1,000 examples); column by column, the gather kept the loop scalar (21%). From Q_SS's
    // contiguous columns it vectorises, each row's sum still in the order q = 0, 1, ..., P-1:
    // the same values, bit for bit.
    m_jw(0) = m_ajw(0) = 0.0;
    for (Index q = 0; q < P; ++q) m_jw(0) += m_y(m_S[static_cast<std::size_t>(q)]) * w(q + 1), m_ajw(0) += std::abs(w(q + 1));
    for (Index p = 1; p <= P; ++p) {
      m_jw(p) = m_y(m_S[static_cast<std::size_t>(p - 1)]) * w(0);
      m_ajw(p) = std::abs(w(0));
    }
    auto jw = m_jw.segment(1, P), ajw = m_ajw.segment(1, P);
    for (Index q = 0; q < P; ++q) {
      const auto t = m_Qss.col(q).head(P) * w(q + 1);  // (Q_SS)_pq w_q for every p, vectorised
      jw += t;
      ajw += t.cwiseAbs();
    }
    double delta = 0.0, scale = std::abs(kappa);
    for (Index p = 0; p <= P; ++p) {
      delta += w(p) * (m_jw(p) - m_rhs(p));
      scale += std::abs(w(p)) * (m_ajw(p) + std::abs(m_rhs(p)));
    }
    rounding = std::numeric_limits<double>::epsilon() * scale;
    return delta;
  }

  /// Removes margin vector i from S (R: Schur downdate with swap-with-last, mirrored in S and Q).
  void leave_margin(Index i) {
    const Index p = m_slot[i], last = n_margin() - 1;
    bool erased = true;
    if (last == 0) {
      m_R.clear();
    } else {
      try {
        m_R.erase(p + 1);  // leaves R unchanged when it throws (G_pp zero or not finite)
      } catch (const std::runtime_error&) {
        erased = false;
      }
    }
    if (p != last) {
      journal_q_col(p);
      m_Q.col(p).head(m_n) = m_Q.col(last).head(m_n);
      // Q_SS mirrors it: column p <- column last, then row p <- row last ((p, p) <- (last, last)).
      m_Qss.col(p).head(last + 1) = m_Qss.col(last).head(last + 1);
      m_Qss.row(p).head(last + 1) = m_Qss.row(last).head(last + 1);
      m_S[p] = m_S[last];
      m_slot[m_S[p]] = p;
    }
    m_S.pop_back();
    m_slot[i] = -1;
    note_migration();
    if (!erased) refactor();  // R of the new S from scratch (throws only if that J is singular)
  }

  /// Schedules a drift check every 8 migrations. The check (which may refactorise, and throw
  /// if J is singular) runs between bookkeeping steps, never inside a migration: it builds J
  /// from S and Q_{:,S}, which agree with R only between migrations.
  void note_migration() {
    if (++m_since_check >= 8) {
      m_since_check = 0;
      m_check_due = true;
    }
  }
  void settle() {
    if (m_check_due) {
      m_check_due = false;
      check_inverse();
    }
  }

  /// Q_SS from Q_{:,S} and S (after a load or a rollback; enter_margin and leave_margin keep
  /// it up to date in O(|S|)). O(|S|^2).
  void gather_qss() noexcept {
    const Index P = n_margin();
    for (Index q = 0; q < P; ++q)
      for (Index p = 0; p < P; ++p) m_Qss(p, q) = m_Q(m_S[static_cast<std::size_t>(p)], q);
  }

  Eigen::MatrixXd build_J() const {
    const Index P = n_margin();
    Eigen::MatrixXd J(P + 1, P + 1);
    J(0, 0) = 0.0;
    for (Index p = 0; p < P; ++p) J(0, p + 1) = J(p + 1, 0) = m_y(m_S[p]);
    J.bottomRightCorner(P, P) = m_Qss.topLeftCorner(P, P);
    return J;
  }
  /// m_dir.head(P + 1) = -R m_rhs.head(P + 1): the direction of a path step (TVM eq. 2.1) and
  /// of refine(). Zeroed, summed, then negated: the values of -(R * rhs) (Eigen evaluates that
  /// product into a zeroed temporary and negates it), in compact order.
  void solve_direction(Index P) {
    auto dir = m_dir.head(P + 1);
    dir.setZero();
    detail::add_product_compact_order(dir, m_R.inverse(), m_rhs.head(P + 1));
    dir = -dir;
  }
  double probe_residual() const { return m_S.empty() ? 0.0 : m_R.probe_residual(build_J()); }

  void check_inverse() {
    if (m_S.empty()) return;
    const double r = probe_residual();
    if (r > kRefactor || !std::isfinite(r)) refactor();
  }
  void refactor() {
    try {
      m_R.refactor(build_J());
    } catch (const std::runtime_error& e) {
      // A ridge far above the kernel's scale makes J = [[0, y^T], [y, ~ridge I]] ill-conditioned
      // by itself: eigenvalues ~ridge and ~-|S| / ridge, so cond(J) ~ ridge^2 / |S|. Measured
      // (RBF, k(x, x) = 1, 300 examples, C = 1 to 1e4): ridge 1e6 learned every stream, 1e7 and
      // beyond failed here on every one. Then the ridge, not the data, is what to change.
      if (m_ridge > kHugeRidge * kernel_scale()) throw detail::IDSVMScaleError(huge_ridge_message(e.what()));
      throw;
    }
    ++m_refactors;
  }

  /// max |k(x, x)| over the stored examples (1 for RBF), for the messages of a failure: O(N).
  double kernel_scale() const {
    if (m_kernel.unit_diagonal()) return 1.0;
    double k = 0.0;
    for (Index i = 0; i < m_n; ++i) k = (std::max)(k, std::abs(m_kernel.self(m_sq(i))));
    return k;
  }
  std::string huge_ridge_message(const char* cause) const {
    std::ostringstream msg;
    msg << "IncrementalSVM: ridge = " << m_ridge << " is too large for the kernel's scale (max k(x, x) = "
        << kernel_scale() << "): the bordered Jacobian J = [[0, y^T], [y, K + ridge I]] then has a condition number "
        << "of about ridge^2 / |S| and is numerically singular (|S| = " << n_margin()
        << "). Use a ridge of at most ~1e6 times max k(x, x); as a remedy for the numerical breakdown a ridge of "
           "1e-8 to 1e-6 times it is enough (" << cause << "); the operation is undone";
    return msg.str();
  }

  /// Throws the IDSVMScaleError of run_path's empty-margin-set stop at scale >= max_scale().
  [[noreturn]] void scale_failure(Mode mode, Index c, double from, double to) const {
    // The factors of the step's scale (rate_scale in run_path).
    double C = m_C, weight = 0.0;
    const char* what = "learn/set_weight";
    if (mode == Mode::RegC) {
      C = (std::max)(std::abs(to), std::abs(from));
      weight = m_s.head(m_n).maxCoeff();
      what = "set_C";
    } else if (mode == Mode::Unlearn) {
      weight = m_s(c);
      what = "unlearn";
    } else {
      weight = (std::max)(std::abs(to), std::abs(from));
    }
    throw detail::IDSVMScaleError(std::string("IncrementalSVM::") + what + ": " +
                                  scale_message(C, weight, kernel_scale(), m_ridge) + "; the operation is undone");
  }

  /// Why C x weight x max(k(x, x) + ridge) >= max_scale() cannot be learned, and what to change.
  static std::string scale_message(double C, double weight, double kscale, double ridge) {
    std::ostringstream msg;
    const double qmax = kscale + ridge;
    // The ridge is at fault when the same C and weight would be within the limit without it.
    const bool ridge_at_fault = ridge > 0.0 && C * weight * kscale < max_scale();
    if (ridge_at_fault)
      msg << "ridge = " << ridge << " is too large";
    else
      msg << "C = " << C << " is too large for the kernel's scale";
    msg << ": the exact SVM's path works in double precision only while C x weight x max(k(x, x) + ridge) < "
        << max_scale() << ", and here it is " << C << " x " << weight << " x " << qmax << " = " << C * weight * qmax
        << " (max k(x, x) = " << kscale << ", ridge = " << ridge
        << "). At that scale the rounding noise of the path's steps exceeds the unit rate at which the "
           "margins move while only the bias moves, so no example can enter the empty margin set. ";
    if (ridge_at_fault)
      msg << "A ridge is meant to be small against k(x, x): 1e-8 to 1e-6 times it as a remedy for the numerical "
             "breakdown, and at most ~1e6 times it (beyond, the bordered Jacobian is numerically singular)";
    else
      msg << "Use a smaller C (or smaller sample weights): for the RBF kernel k(x, x) = 1, so C x (1 + ridge) < "
          << max_scale() << "; for linear and polynomial kernels k(x, x) grows with |x|^2, so scaling the features "
          << "down allows a larger C. A large C is accurate only while the kernel matrix is well conditioned (see "
             "ridge)";
    return msg.str();
  }

  /// Bound rate du_i / dt of example i on the current path.
  double bound_rate(Mode mode, Index c, double from, double to, Index i) const {
    if (mode == Mode::RegC) return m_s(i) * (to - from);
    if (mode == Mode::Weight && i == c) return m_C * (to - from);
    return 0.0;
  }

  /// The adiabatic path t: 0 -> 1 (see the file comment). Weight: s_c from -> to;
  /// RegC: C from -> to; Unlearn: alpha_c from -> 0 with c outside the KT system. `stop`
  /// (may be null) is asked before every step: a path can take thousands (set_C over a
  /// decade of C on a few thousand examples), each O(N |S|).
  void run_path(Mode mode, Index c, double from, double to, StopPoll* stop = nullptr) {
    double t = 0.0;
    const std::int64_t max_steps = 1000 + 50 * static_cast<std::int64_t>(m_n);
    std::vector<Index>& blocked = m_blocked;
    blocked.clear();
    Index pivot = -1;    // a near-dependent example being swapped into S (see the file comment)
    double prate = 0.0;  // its alpha rate: +1 from R, -1 from E
    bool retried = false;
    Index entered = -1;  // the example that entered S at the previous migration, if any
    for (std::int64_t it = 0;; ++it) {
      detail::poll_stop(stop, 0);  // nothing of the operation is kept: its Operation undoes it
      settle();
      if (it > max_steps) fail("more than " + std::to_string(max_steps) + " bookkeeping steps", mode, from, to, t);
      const Index P = n_margin();
      // A migration at t = 1 - O(eps) (ties) leaves a rounding-level remainder of the path. With
      // S empty only b could carry it, and no example may be able to enter S to stop that move:
      // finish the path instead (the remainder is below the KT tolerances).
      if (pivot < 0 && P == 0 && 1.0 - t <= 1e-12) {
        set_parameter(mode, c, from, to, 1.0);
        refine();
        break;
      }
      const Index n = m_n;
      // 1. Driven (non-S) rates: r = sum_N y_j da_j, and Q_{:,N} da_N (a column of c or h).
      double r = 0.0, rate_c = 0.0, rate_scale = 0.0;
      const Vector* qcol = nullptr;
      double qmul = 0.0;
      if (pivot >= 0) {
        r = m_y(pivot) * prate;
        qcol = &m_colp;
        qmul = prate;
        rate_scale = 1.0;
      } else if (mode == Mode::RegC) {
        double ys = 0.0, ss = 0.0;
        for (Index j = 0; j < n; ++j)
          if (m_set[j] == SVMSet::Error) ys += m_y(j) * m_s(j), ss += m_s(j);
        const double dC = to - from;
        r = dC * ys;
        // With S empty, an r at rounding level of sum y s means balanced E classes: no b move.
        if (P == 0 && std::abs(r) <= 1e-14 * std::abs(dC) * ss) r = 0.0;
        qcol = &m_h;
        qmul = dC;
        rate_scale = std::abs(dC) * (n > 0 ? m_s.head(n).maxCoeff() : 0.0);
      } else if ((mode == Mode::Unlearn) || m_set[c] == SVMSet::Error) {
        rate_c = mode == Mode::Unlearn ? -from : m_C * (to - from);
        r = m_y(c) * rate_c;
        qcol = &m_colc;
        qmul = rate_c;
        rate_scale = std::abs(rate_c);
      } else if (mode == Mode::Weight) {
        rate_scale = std::abs(m_C * (to - from));
      }
      // 2. Direction: [db; da_S] = -R [r; Q_SN da_N] (TVM eq. 2.1), or b alone when S is empty.
      bool b_only = false;
      double db = 0.0;
      if (P > 0) {
        m_rhs(0) = r;
        for (Index p = 0; p < P; ++p) m_rhs(p + 1) = qcol ? qmul * (*qcol)(m_S[p]) : 0.0;
        solve_direction(P);
        if (!detail::all_finite(m_dir.data(), P + 1)) {
          if (retried) fail("non-finite direction after refactorising", mode, from, to, t);
          refactor();
          retried = true;
          continue;
        }
        retried = false;
        db = m_dir(0);
      } else if (r != 0.0) {
        b_only = true;
        db = r > 0.0 ? 1.0 : -1.0;
      }
      const bool frozen = b_only || pivot >= 0;  // t does not move
      // 3. dg = y db + Q_{:,S} da_S + Q_{:,N} da_N (the driven part frozen in a b-only move).
      auto dg = m_dg.head(n);
      dg = db * m_y.head(n);
      double amax = rate_scale, sum_da = rate_scale;
      if (P > 0) {
        detail::add_product_compact_order(dg, m_Q.topLeftCorner(n, P), m_dir.segment(1, P));
        const double m = m_dir.segment(1, P).cwiseAbs().maxCoeff();
        amax = (std::max)(amax, m);
        sum_da += m_dir.segment(1, P).cwiseAbs().sum();
      }
      if (!b_only && qcol) dg += qmul * qcol->head(n);
      const double gnoise = kGNoise * (std::abs(db) + m_kmax * sum_da);
      const double anoise = kANoise * amax;
      // 4. The largest step before a migration (C&P bookkeeping).
      const double remaining = 1.0 - t;
      double best = frozen ? std::numeric_limits<double>::infinity() : remaining;
      Index who = -1;
      SVMSet target = SVMSet::Margin;
      if (pivot >= 0) {  // the pivot's alpha reaching its other bound ends the swap
        best = prate > 0.0 ? m_C * m_s(pivot) - m_alpha(pivot) : m_alpha(pivot);
        who = pivot;
        target = prate > 0.0 ? SVMSet::Error : SVMSet::Reserve;
      }
      for (Index i = 0; i < n; ++i) {
        if (i == m_driven || i == pivot) continue;
        double step;
        SVMSet to_set;
        if (m_set[i] == SVMSet::Margin) {
          if (b_only) continue;
          const double da = m_dir(m_slot[i] + 1);
          const double du = bound_rate(mode, c, from, to, i);
          const double u = m_C * m_s(i);
          if (da < -anoise) {
            step = (std::max)(0.0, m_alpha(i) / -da);
            to_set = SVMSet::Reserve;
            if (da - du > anoise) {  // both boundaries approach (bound falling faster): take the nearer
              const double s2 = (std::max)(0.0, (u - m_alpha(i)) / (da - du));
              if (s2 < step) step = s2, to_set = SVMSet::Error;
            }
          } else if (da - du > anoise) {
            step = (std::max)(0.0, (u - m_alpha(i)) / (da - du));
            to_set = SVMSet::Error;
          } else {
            continue;
          }
        } else if (m_set[i] == SVMSet::Error) {
          if (!(dg(i) > gnoise)) continue;
          step = (std::max)(0.0, -m_g(i) / dg(i));
          to_set = SVMSet::Margin;
        } else {
          if (!(dg(i) < -gnoise)) continue;
          step = (std::max)(0.0, m_g(i) / -dg(i));
          to_set = SVMSet::Margin;
        }
        if (step < best && !(to_set == SVMSet::Margin && is_blocked(i))) {
          best = step;
          who = i;
          target = to_set;
        }
      }
      if (frozen && who < 0) {
        // With S empty and only b moving, every E or R example moving towards the margin has
        // |dg| = |db| = 1: none qualified only because the noise threshold reached 1, i.e. the
        // step's scale C x weight x kmax reached max_scale(). Name the parameter.
        if (b_only && !(1.0 > gnoise)) scale_failure(mode, c, from, to);
        fail("empty margin set and no example can enter it", mode, from, to, t);
      }
      const bool final_step = !frozen && who < 0;
      // 5. Move.
      const double step = best;
      m_b += step * db;
      for (Index p = 0; p < P; ++p) m_alpha(m_S[static_cast<std::size_t>(p)]) += step * m_dir(p + 1);
      m_g.head(n) += step * dg;
      if (pivot >= 0) m_alpha(pivot) += step * prate;
      ++m_steps;
      if (detail::idsvm_fail_countdown > 0 && --detail::idsvm_fail_countdown == 0)
        fail("forced failure (test hook detail::idsvm_fail_countdown)", mode, from, to, t);
      if (!frozen) {
        t = final_step ? 1.0 : (std::min)(1.0, t + step);
        set_parameter(mode, c, from, to, t);
      }
      for (Index p = 0; p < P; ++p) {
        // Rates below the noise level trigger no event, so an alpha sitting on a boundary can
        // cross it by a rounding-level amount: clamp it back into its (new) box.
        const Index i = m_S[static_cast<std::size_t>(p)];
        m_alpha(i) = (std::min)((std::max)(m_alpha(i), 0.0), m_C * m_s(i));
      }
      if (final_step) {
        refine();
        break;
      }
      // 6. Migrate the example that reached a boundary.
      const Index i = who, just_entered = entered;
      entered = -1;
      if (i == pivot) {
        // The swap ended with the pivot at its other bound (g_i stays ~0: valid in E and R).
        const double snapped = target == SVMSet::Error ? m_C * m_s(i) : 0.0;
        m_g.head(n) += (snapped - m_alpha(i)) * m_colp.head(n);
        m_alpha(i) = snapped;
        if (mode == Mode::RegC) m_h.head(n) += (target == SVMSet::Error ? m_s(i) : -m_s(i)) * m_colp.head(n);
        m_set[i] = target;
        pivot = -1;
        blocked.push_back(i);
      } else if (target == SVMSet::Margin) {
        const bool own = (mode == Mode::Weight && i == c);
        Vector& col = own ? m_colc : m_col;
        if (!own) compute_column(i, m_col);
        const bool was_error = m_set[i] == SVMSet::Error;
        if (enter_margin(i, &col)) {
          if (was_error && mode == Mode::RegC) m_h.head(n) -= m_s(i) * col.head(n);
          blocked.clear();
          entered = i;
        } else if (pivot < 0 && std::abs(dg(i)) > kPivot * (std::abs(db) + m_kmax * sum_da)) {
          // Near-dependent (its g moves at more than rounding speed): swap it in. With t frozen
          // its alpha is driven into its box; the margin vectors compensate by -R [y_i; Q_Si],
          // which leaves g_S and, to first order, g_i unchanged, until a margin vector reaches
          // a bound and leaves S (then i enters) or alpha_i reaches its other bound.
          m_colp.head(n) = col.head(n);
          pivot = i;
          prate = m_set[i] == SVMSet::Reserve ? 1.0 : -1.0;
        } else {
          blocked.push_back(i);  // exactly dependent: its g moves with the margin's, stays 0
        }
      } else {
        const auto col = m_Q.col(m_slot[i]).head(n);
        if (target == SVMSet::Error && mode == Mode::RegC) m_h.head(n) += m_s(i) * col;
        // Snap alpha_i onto its boundary; g follows the (rounding-level) change.
        const double snapped = target == SVMSet::Error ? m_C * m_s(i) : 0.0;
        m_g.head(n) += (snapped - m_alpha(i)) * col;
        m_alpha(i) = snapped;
        m_set[i] = target;
        leave_margin(i);
        blocked.clear();
        // Left at a zero step right after it entered: S is back as it was, so the same example
        // would enter again and the path cycle. It stays out until S changes otherwise.
        if (step == 0.0 && i == just_entered) blocked.push_back(i);
        if (pivot >= 0) {
          const bool was_error = m_set[pivot] == SVMSet::Error;
          if (enter_margin(pivot, &m_colp)) {
            if (was_error && mode == Mode::RegC) m_h.head(n) -= m_s(pivot) * m_colp.head(n);
            pivot = -1;
            blocked.clear();  // S changed after all
          }
        }
      }
      refine();
      if (t >= 1.0 && pivot < 0) break;
    }
    m_check_due = false;
    check_inverse();
  }

  /// Iterative refinement of the equality and margin conditions: each path step keeps
  /// sum y a = 0 and g_S = 0 only up to its rounding, amplified by cond(J) (measured ~1e-12
  /// relative after hundreds of steps at large C, far more with an ill-conditioned J).
  /// [db; da_S] = -R [sum y a; g_S] removes that drift, and dg = Q_{:,S} da_S + y db keeps g
  /// consistent with the alphas (g is never overwritten). Runs only when the drift exceeds
  /// 1e-13 of the scale (checked in O(N + |S|)); up to 3 rounds of O(N |S|).
  void refine() {
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

  /// Largest violation of the g conditions and of the alpha conditions (boxes, sets, sum y a).
  void violations(double& gv, double& av, double& ascale) const {
    double ya = 0.0;
    gv = av = 0.0;
    ascale = 1.0;
    for (Index i = 0; i < m_n; ++i) {
      const double a = m_alpha(i), u = m_C * m_s(i), g = m_g(i);
      ascale = (std::max)(ascale, u);
      ya += m_y(i) * a;
      switch (m_set[i]) {
        case SVMSet::Margin: gv = (std::max)(gv, std::abs(g)), av = (std::max)({av, -a, a - u}); break;
        case SVMSet::Error: gv = (std::max)(gv, g), av = (std::max)(av, std::abs(a - u)); break;
        case SVMSet::Reserve: gv = (std::max)(gv, -g), av = (std::max)(av, std::abs(a)); break;
      }
    }
    av = (std::max)(av, std::abs(ya));
  }
  bool violated(double gv, double av, double ascale) const {
    return gv > 1e-6 || av > 1e-8 * ascale || !std::isfinite(gv) || !std::isfinite(av);
  }

  /// The guard against silent wrong answers: after every operation the KT conditions must
  /// hold to 1e-6 in g and 1e-8 relative in the alphas. They hold to ~1e-12 unless J is badly
  /// conditioned, which happens when the kernel matrix is numerically rank-deficient without
  /// being exactly so (e.g. RBF with gamma << 1 / spread^2 and a large C). Then one repair is
  /// tried (R refactorised, g recomputed from the alphas in O(N n_SV d), refinement); if the
  /// conditions still fail, std::runtime_error is thrown (the operation, repair included, is
  /// then undone by the journal). The message points to the remedies: a larger gamma, a
  /// smaller C, or a small ridge.
  void verify(const char* what) {
    double gv, av, ascale;
    violations(gv, av, ascale);
    if (!violated(gv, av, ascale)) return;
    ++m_repairs;
    if (!m_S.empty()) refactor();
    recompute_g();
    refine();
    violations(gv, av, ascale);
    if (!violated(gv, av, ascale)) return;
    std::ostringstream msg;
    msg << "IncrementalSVM::" << what << ": numerical breakdown, the KT conditions are violated by " << gv
        << " in g and " << av << " in alpha (bound scale " << ascale
        << ") after the update and a repair: the bordered Jacobian is ill-conditioned (the kernel matrix is "
           "numerically rank-deficient without being exactly so). Use a larger gamma, a smaller C or ";
    if (m_ridge > kHugeRidge * kernel_scale())
      msg << "a smaller ridge than " << m_ridge << " (far above the kernel's scale, max k(x, x) = " << kernel_scale()
          << ": at most ~1e6 times it works)";
    else if (m_ridge > 0.0)
      msg << "a larger ridge than " << m_ridge;
    else
      msg << "a small ridge (e.g. 1e-8 to 1e-6 times the kernel scale; ~10 / C at a large C, 1e-4 at C = 1e5)";
    msg << ", which trains the SVM on K + ridge I (kernel scale here: max |k(x, x) + ridge| = " << m_kmax
        << "). The operation is undone";
    throw std::runtime_error(msg.str());
  }

  /// g_i = y_i f(x_i) - 1 from the alphas (kernel columns of the examples with alpha > 0).
  void recompute_g() {
    const Index n = m_n;
    m_g.head(n) = m_b * m_y.head(n) - Vector::Ones(n);
    for (Index j = 0; j < n; ++j)
      if (m_alpha(j) != 0.0) {
        compute_column(j, m_col);
        m_g.head(n) += m_alpha(j) * m_col.head(n);
      }
  }

  bool is_blocked(Index i) const { return std::find(m_blocked.begin(), m_blocked.end(), i) != m_blocked.end(); }

  /// Sets the driven parameter to its value at t (exactly `to` at t = 1); E alphas follow.
  void set_parameter(Mode mode, Index c, double from, double to, double t) {
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

  /// Throws the failure of a path; the caller's Operation (or transaction) rolls it back.
  [[noreturn]] void fail(const std::string& why, Mode mode, double from, double to, double t) const {
    const char* what = mode == Mode::RegC ? "set_C" : mode == Mode::Unlearn ? "unlearn" : "learn/set_weight";
    throw std::runtime_error("IncrementalSVM::" + std::string(what) + ": " + why + " (from " + std::to_string(from) +
                             " to " + std::to_string(to) + ", reached t = " + std::to_string(t) + ", |S| = " +
                             std::to_string(n_margin()) + ", N = " + std::to_string(m_n) +
                             "); the operation is undone");
  }

  // ---- the undo journal (strong exception guarantee, see "Failure" in the file comment)

  /// What the open transaction changed, undone in reverse order by rollback(). Push, Erase
  /// and Weight entries record the light changes (O(1), O(d + |S|), O(1)); the one Snapshot
  /// entry marks where the state that paths and repairs change (everything but the rows' x, y
  /// and keys, the index map, m_next_key, m_kmax and Q_{:,S}) was saved: before the first of
  /// them in the transaction. Later paths need no second snapshot: undoing the entries made
  /// after it takes the rows and the index back to that moment, and the snapshot restores the
  /// rest. Q_{:,S} is journaled write by write instead (QRow: learn's row of the new example,
  /// O(|S|); QCol: the column a migration overwrites, O(N)): a migration writes one column,
  /// while a copy of Q_{:,S} costs O(N |S|) per operation (measured in the file comment).
  /// Undone in reverse order, every write gets back what it overwrote. A column is saved only
  /// at its first write while the rows stay where they are (between two pushes or erases, see
  /// `stamp`): no undo step reads a column between its later writes, so its first content is
  /// all the undo needs, and a transaction's column saves never exceed one copy of Q_{:,S} per
  /// such stretch (a set_C path can migrate thousands of times).
  struct Journal {
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

    bool open = false, saved = false;
    std::vector<Entry> log;
    std::vector<double> rows;  ///< erased rows: sq, y, s, alpha, g, x (d values), Q row (p values); Q rows and columns
    std::vector<Node> nodes;   ///< the erased rows' index-map nodes, in erase order
    /// Advanced by start() and by every push and erase, never reset: a column whose
    /// col_stamp equals it was saved since the rows last moved, in this transaction.
    std::int64_t stamp = 0;
    std::vector<std::int64_t> col_stamp;
    // The snapshot. Buffers grow to the object's capacities and are reused: no allocation
    // once grown (Eigen assigns a block without reallocating).
    Index n = 0, r = 0;  ///< rows, size of R
    double b = 0.0, C = 0.0;
    std::int64_t steps = 0, refactors = 0, since_check = 0, repairs = 0;
    Vector alpha, g, s;
    std::vector<SVMSet> set;
    std::vector<Index> slot, S;
    Eigen::MatrixXd R;

    Journal() = default;
    // Scratch state of one operation: a copy of the object starts with an empty journal.
    Journal(const Journal&) {}
    Journal& operator=(const Journal&) {
      close();
      return *this;
    }
    Journal(Journal&&) = default;
    Journal& operator=(Journal&&) = default;

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
  };

  /// One public operation: it joins the open transaction, or runs as its own, which it rolls
  /// back unless done() was reached (the destructor runs during the unwinding of any exception).
  class Operation {
   public:
    explicit Operation(IncrementalSVM& m) : m_m(m), m_own(!m.m_tx.open) {
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
    IncrementalSVM& m_m;
    bool m_own, m_done = false;
  };

  /// Saves, once per transaction, what a path or a repair can change (Q_{:,S} aside, which is
  /// journaled write by write): alpha, g, weights, sets, slots, S, R, b, C and the counters.
  /// O(|S|^2 + N), within the cost of one migration (an O(|S|^2) update of R).
  void snapshot() {
    Journal& j = m_tx;
    if (j.saved) return;
    const Index n = m_n, r = m_R.size();
    if (j.alpha.size() < n) {
      const Index cap = m_alpha.size();
      for (Vector* v : {&j.alpha, &j.g, &j.s}) v->resize(cap);
      j.set.resize(static_cast<std::size_t>(cap));
      j.slot.resize(static_cast<std::size_t>(cap));
    }
    if (j.R.rows() < r) j.R.resize(m_R.capacity(), m_R.capacity());
    j.n = n;
    j.r = r;
    j.b = m_b;
    j.C = m_C;
    j.steps = m_steps;
    j.refactors = m_refactors;
    j.since_check = m_since_check;
    j.repairs = m_repairs;
    j.alpha.head(n) = m_alpha.head(n);
    j.g.head(n) = m_g.head(n);
    j.s.head(n) = m_s.head(n);
    std::copy(m_set.begin(), m_set.begin() + n, j.set.begin());
    std::copy(m_slot.begin(), m_slot.begin() + n, j.slot.begin());
    j.S.assign(m_S.begin(), m_S.end());
    if (r > 0) j.R.topLeftCorner(r, r) = m_R.inverse();
    j.log.push_back({Journal::Kind::Snapshot, 0, 0, 0, 0, 0.0, 0, SVMSet::Reserve});
    j.saved = true;
  }
  void restore_snapshot() noexcept {
    const Journal& j = m_tx;
    const Index n = j.n;
    m_n = n;
    m_b = j.b;
    m_C = j.C;
    m_steps = j.steps;
    m_refactors = j.refactors;
    m_since_check = j.since_check;
    m_repairs = j.repairs;
    m_alpha.head(n) = j.alpha.head(n);
    m_g.head(n) = j.g.head(n);
    m_s.head(n) = j.s.head(n);
    std::copy(j.set.begin(), j.set.begin() + n, m_set.begin());
    std::copy(j.slot.begin(), j.slot.begin() + n, m_slot.begin());
    m_S.assign(j.S.begin(), j.S.end());  // within m_S's capacity (it held as many then)
    if (j.r > 0)
      m_R.assign(j.R.topLeftCorner(j.r, j.r));
    else
      m_R.clear();
  }

  /// Saves Q_{:,S}'s row c (learn's new example, about to be written).
  void journal_q_row(Index c) {
    Journal& j = m_tx;
    const Index P = n_margin();
    const std::size_t at = j.rows.size();
    j.rows.resize(at + static_cast<std::size_t>(P));
    Eigen::Map<Eigen::RowVectorXd>(j.rows.data() + at, P) = m_Q.row(c).head(P);
    j.log.push_back({Journal::Kind::QRow, c, 0, P, 0, 0.0, at, SVMSet::Reserve});
  }

  /// Saves column p of Q_{:,S} (rows 0..N-1) before a migration overwrites it, unless it was
  /// saved since the rows last moved (see Journal).
  void journal_q_col(Index p) {
    Journal& j = m_tx;
    if (j.col_stamp.size() < static_cast<std::size_t>(m_Q.cols())) j.col_stamp.resize(static_cast<std::size_t>(m_Q.cols()), 0);
    std::int64_t& stamp = j.col_stamp[static_cast<std::size_t>(p)];
    if (stamp == j.stamp) return;
    const std::size_t at = j.rows.size();
    j.rows.resize(at + static_cast<std::size_t>(m_n));
    Eigen::Map<Vector>(j.rows.data() + at, m_n) = m_Q.col(p).head(m_n);
    j.log.push_back({Journal::Kind::QCol, p, m_n, 0, 0, 0.0, at, SVMSet::Reserve});
    stamp = j.stamp;
  }

  void journal_weight(Index c) { m_tx.log.push_back({Journal::Kind::Weight, c, 0, 0, 0, m_s(c), 0, SVMSet::Reserve}); }

  /// Saves row i before erase_example removes it (everything that may allocate happens here,
  /// before the erase changes anything).
  void journal_erase(Index i) {
    Journal& j = m_tx;
    const Index P = n_margin();
    if (j.nodes.size() == j.nodes.capacity()) j.nodes.reserve(2 * j.nodes.size() + 4);
    const std::size_t at = j.rows.size();
    j.rows.resize(at + static_cast<std::size_t>(5 + m_d + P));
    double* r = j.rows.data() + at;
    r[0] = m_sq(i), r[1] = m_y(i), r[2] = m_s(i), r[3] = m_alpha(i), r[4] = m_g(i);
    Eigen::Map<Eigen::RowVectorXd>(r + 5, m_d) = m_X.row(i);
    Eigen::Map<Eigen::RowVectorXd>(r + 5 + m_d, P) = m_Q.row(i).head(P);
    j.log.push_back({Journal::Kind::Erase, i, m_n, P, m_key[i], 0.0, at, m_set[i]});
    ++j.stamp;  // the rows change: columns saved before no longer cover them
  }

  void unpush(const Journal::Entry& e) noexcept {
    m_index.erase(e.key);
    m_n = e.i;
    m_next_key = e.key;
    m_kmax = e.v;
  }

  /// The inverse of erase_example: the row that moved into slot i goes back to the end, the
  /// saved row into slot i (its S membership, if any, is the snapshot's business: an erased row
  /// is never in S).
  void unerase(const Journal::Entry& e) noexcept {
    const Index i = e.i, last = e.n - 1, P = e.p;
    if (i != last) {
      move_row(i, last, P);
      // (a path after the erase may have changed S; the snapshot taken before it restores S)
      if (m_slot[last] >= 0 && m_slot[last] < n_margin()) m_S[m_slot[last]] = last;
    }
    const double* r = m_tx.rows.data() + e.at;
    m_sq(i) = r[0], m_y(i) = r[1], m_s(i) = r[2], m_alpha(i) = r[3], m_g(i) = r[4];
    m_X.row(i) = Eigen::Map<const Eigen::RowVectorXd>(r + 5, m_d);
    m_Q.row(i).head(P) = Eigen::Map<const Eigen::RowVectorXd>(r + 5 + m_d, P);
    m_set[i] = e.set;
    m_key[i] = e.key;
    m_slot[i] = -1;
    m_index.insert(std::move(m_tx.nodes.back()));  // the node extracted by the erase: no allocation
    m_tx.nodes.pop_back();
    m_n = e.n;
  }

  Index m_d = 1, m_n = 0;
  Kernel m_kernel;
  double m_C = 1.0, m_ridge = 0.0, m_b = 0.0, m_kmax = 0.0;  ///< m_kmax: max |Q_ii| seen (ridge included)
  RowMatrix m_X;
  Vector m_sq, m_y, m_alpha, m_g, m_s;
  std::vector<SVMSet> m_set;
  std::vector<std::int64_t> m_key;
  std::vector<Index> m_slot;  ///< slot in S (R row slot + 1) or -1
  std::vector<Index> m_S;     ///< margin vectors in the order of R's rows 1..|S|
  Eigen::MatrixXd m_Q;        ///< Q_{:,S}: column p = Q_{:, S[p]} (column-major: contiguous columns)
  /// Q_SS = rows S of Q_{:,S} (entry (p, q) = m_Q(S[p], q), the same values): what
  /// schur_correction and build_J read, contiguous here, gathered from scattered rows of m_Q
  /// otherwise. |S|^2 more memory than Q_{:,S} alone, which holds N >= |S| rows.
  Eigen::MatrixXd m_Qss;
  IncrementalInverse m_R;     ///< J^{-1}, row 0 = bias
  std::unordered_map<std::int64_t, Index> m_index;
  std::int64_t m_next_key = 0, m_steps = 0, m_refactors = 0, m_since_check = 0, m_repairs = 0;
  Index m_driven = -1;
  bool m_check_due = false;  ///< a drift check is scheduled (always false between operations)
  Journal m_tx;              ///< undo journal of the open transaction (empty between operations)
  // Work buffers (no allocation on the hot path once grown).
  Vector m_h, m_dg, m_colc, m_col, m_colp, m_rhs, m_dir;
  Vector m_jw, m_ajw;  ///< schur_correction's (J w)_p and (|J| |w|)_p (m_jw: set_C's alpha_S), sized as m_rhs
  std::vector<Index> m_blocked;
};

}  // namespace budgetkernel
