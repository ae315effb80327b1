#pragma once
/// \file svm/incremental_svm.hpp
/// The exact incremental-decremental SVM (IDSVM) of Cauwenberghs & Poggio, "Incremental and
/// Decremental Support Vector Machine Learning" (NIPS 2000), with the regularisation-parameter
/// perturbation of Diehl & Cauwenberghs, "SVM Incremental Learning, Adaptation and
/// Optimization" (IJCNN 2003), and per-example weights (upper bound C s_i of alpha_i), as
/// summarised in sections 2.1-2.3 of the Twin Vector Machine paper (the TVM paper). Design
/// notes and measurements: docs/idsvm.md.
///
/// Dual (TVM paper 2.1, with weights): min 1/2 a^T Q a - sum a, 0 <= a_i <= C s_i,
/// sum y_i a_i = 0, Q_ij = y_i y_j K(x_i, x_j) + ridge [i == j]. With g_i = dW/da_i =
/// y_i f(x_i) + ridge a_i - 1 the Kuhn-Tucker conditions partition the stored examples into
///   S (margin): g_i = 0, 0 <= a_i <= C s_i;  E (error): g_i <= 0, a_i = C s_i;
///   R (reserve): g_i >= 0, a_i = 0.
///
/// Ridge (opt-in, default 0 = the exact SVM above): the dual of the SVM whose training kernel
/// matrix is K + ridge I, i.e. Q_ii = k(x_i, x_i) + ridge for every stored example (two stored
/// copies of one point are two examples: ridge on each diagonal entry, none between them). The
/// off-diagonal entries and f(x) = sum_i y_i a_i K(x_i, x) + b on any point use the plain
/// kernel. It bounds the smallest eigenvalue of Q_SS and the Schur complement of every example
/// entering S from below by ridge, so J stays invertible (cond(J) roughly
/// (|S| max Q_ii) / ridge): the remedy for the numerical breakdown of an ill-conditioned J (a
/// large C needs a ridge of ~10 / C; see docs/idsvm.md). Every Q_ii is formed by q_diag(), so
/// g, the KT conditions, dual_objective() and kkt_violation() refer to the ridged dual;
/// decision(), decision_from_row() and decision_at() report the plain f. With ridge = 0 every
/// computation is the exact SVM's, bit for bit.
///
/// Every operation is one adiabatic path (eq. 2.1 of the TVM paper, svm/adiabatic_path.hpp):
/// a parameter t runs from 0 to 1 while some quantities are driven linearly in t, and the
/// margin vectors and b follow so that g stays 0 on S and sum y a stays 0:
///   learn(x, y, s):   the new example enters with weight 0 (so a_c = 0 satisfies every
///                     condition), then its weight rises 0 -> s. While it sits in E its alpha
///                     follows its bound, which is the increment a_c += delta of C&P.
///   set_weight:       one weight moves s_old -> s_new (a bound perturbation).
///   set_C:            C moves C_old -> C_new, every E alpha following its bound C s_i
///                     (the regularisation-parameter perturbation of Diehl & Cauwenberghs).
///   unlearn:          the example leaves S if it is there (C&P decremental unlearning), then
///                     its alpha is driven a_c -> 0 outside the KT system, then it is removed.
///
/// The machine in parts (each included at the end of this header; include this one):
///   svm/idsvm_types.hpp             SVMSet, IDSVMScaleError, report_chunk_failure
///   svm/undo_journal.hpp            the undo journal: strong exception guarantee, transactions
///   svm/incremental_svm_storage.hpp the rows and the columns of Q
///   svm/margin_set.hpp              S and R = J^{-1}, J = [[0, y_S^T], [y_S, Q_SS]]
///   svm/adiabatic_path.hpp          direction, step limits, migrations (C&P bookkeeping)
///   svm/numerical_guard.hpp         the KT check after every operation, repair, messages
///   svm/incremental_svm_io.hpp      save / load (bit-exact resume)
///
/// Failure: more than 1000 + 50 N bookkeeping steps in one operation, a non-finite direction
/// after refactorising, a singular J, or KT conditions still violated after a repair throw
/// std::runtime_error; parameters out of double precision's reach throw
/// detail::IDSVMScaleError (a std::invalid_argument) naming C or the ridge
/// (svm/numerical_guard.hpp). No silent wrong answer.
///
/// Strong exception guarantee: every operation (learn, unlearn, set_weight, set_C) that
/// throws leaves the object bitwise as before the call (every field save() writes and the
/// internal ones: capacities aside, nothing differs), and usable: the problem that broke
/// down is not kept, so a later operation that is well conditioned succeeds (a learner must
/// not lose what it learned to one bad example). A failed learn hands out no key: the next
/// learn gets the same one, which keeps the keys of one-vs-rest machines equal to the
/// example's position in the stream (IncrementalSVC). Several operations can be grouped into
/// one undoable unit (begin_transaction / commit / rollback).


#include "../incremental_inverse.hpp"
#include "../io.hpp"
#include "../kernel.hpp"
#include "idsvm_types.hpp"
#include "undo_journal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace budgetkernel {

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
  /// learning. The learners do not call it (a model file holding such a C, which a C++ program
  /// can write, must still load); the Python binding does when it builds a model and before set_C.
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
    m_tx.save_q_row(*this, c);
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
    m_tx.snapshot(*this);
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
    m_tx.snapshot(*this);
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
      m_tx.save_weight(*this, c);
      m_s(c) = weight;
      op.done();
      return;
    }
    m_tx.snapshot(*this);
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
    m_tx.snapshot(*this);
    // h = Q_{:,E} s_E, the driving direction per unit of C, kept as E changes. Not from E's
    // kernel columns (|E| n kernel values) but from g, which holds it already: alpha_E = C s_E
    // (the bound), so g = Q_{:,S} alpha_S + C Q_{:,E} s_E + y b - 1 gives
    // h = (g + 1 - y b - Q_{:,S} alpha_S) / C, O(n |S|) (agreement with the columns: docs/idsvm.md).
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
    m_tx.undo(*this);
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
  void save(FieldMap& fm, const std::string& prefix) const;
  /// Restores what save() wrote. \throws std::runtime_error ("model file: ...") on missing,
  /// inconsistent or non-finite fields (the object is then left unchanged).
  void load(const FieldMap& fm, const std::string& prefix);

 private:
  friend struct detail::IDSVMJournal;  // reads and restores the state it journals
  enum class Mode { Weight, RegC, Unlearn };
  struct Path;  // one adiabatic path's state (svm/adiabatic_path.hpp)
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

  // ---- rows and columns of Q (svm/incremental_svm_storage.hpp)
  void reset_storage(Index d, Index cap);
  void grow_rows(Index need);
  void grow_cols(Index need);
  Index push_example(const double* xp, double y);
  void move_row(Index from, Index to, Index P) noexcept;
  void erase_example(Index i);
  double q_diag(Index i) const;
  void compute_column(Index j, Vector& out) const;

  // ---- the margin set and R = J^{-1} (svm/margin_set.hpp)
  bool enter_margin(Index i, const Vector* column);
  double schur_correction(Index P, double kappa, double& rounding);
  void leave_margin(Index i);
  void note_migration();
  void settle();
  void gather_qss() noexcept;
  Eigen::MatrixXd build_J() const;
  void solve_direction(Index P);
  double probe_residual() const;
  void check_inverse();
  void refactor();

  // ---- the adiabatic path (svm/adiabatic_path.hpp)
  void run_path(Mode mode, Index c, double from, double to, StopPoll* stop = nullptr);
  void path_rates(Path& p);
  bool path_direction(Path& p);
  void path_gradient_rates(Path& p);
  void path_next_event(Path& p);
  bool boundary_step(const Path& p, Index i, double& step, SVMSet& to_set) const;
  bool path_move(Path& p);
  void path_migrate(Path& p);
  void path_end_swap(Path& p);
  void path_enter(Path& p, Index i);
  void path_leave(Path& p, Index i, Index just_entered);
  void refine();
  double bound_rate(Mode mode, Index c, double from, double to, Index i) const;
  void set_parameter(Mode mode, Index c, double from, double to, double t);
  bool is_blocked(Index i) const;
  [[noreturn]] void fail(const std::string& why, Mode mode, double from, double to, double t) const;

  // ---- the KT guard and the messages of a failure (svm/numerical_guard.hpp)
  void violations(double& gv, double& av, double& ascale) const;
  bool violated(double gv, double av, double ascale) const;
  void verify(const char* what);
  void recompute_g();
  double kernel_scale() const;
  std::string huge_ridge_message(const char* cause) const;
  [[noreturn]] void scale_failure(Mode mode, Index c, double from, double to) const;
  static std::string scale_message(double C, double weight, double kscale, double ridge);

  // ---- load's steps (svm/incremental_svm_io.hpp), on the object being built
  static void load_scalars(IncrementalSVM& t, const FieldMap& fm, const std::string& prefix);
  static void load_examples(IncrementalSVM& t, const RowMatrix& X, const RowMatrix& v,
                            const std::vector<std::int64_t>& keys, const std::vector<std::int64_t>& sets);
  static void load_kmax(IncrementalSVM& t, const FieldMap& fm, const std::string& prefix);
  static void load_margin_set(IncrementalSVM& t, const std::vector<std::int64_t>& S);
  static void check_loaded_columns(const IncrementalSVM& t, const RowMatrix& Q);
  static void check_loaded_solution(const IncrementalSVM& t);

  /// One public operation: it joins the open transaction or runs as its own (undo_journal.hpp).
  using Operation = detail::IDSVMJournal::Operation<IncrementalSVM>;

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
  detail::IDSVMJournal m_tx;  ///< undo journal of the open transaction (empty between operations)
  // Work buffers (no allocation on the hot path once grown).
  Vector m_h, m_dg, m_colc, m_col, m_colp, m_rhs, m_dir;
  Vector m_jw, m_ajw;  ///< schur_correction's (J w)_p and (|J| |w|)_p (m_jw: set_C's alpha_S), sized as m_rhs
  std::vector<Index> m_blocked;  ///< kept out of S until S changes (svm/adiabatic_path.hpp)
};

}  // namespace budgetkernel

#include "incremental_svm_storage.hpp"
#include "margin_set.hpp"
#include "adiabatic_path.hpp"
#include "numerical_guard.hpp"
#include "incremental_svm_io.hpp"
