#pragma once
/// \file learners/pegasos.hpp
/// Kernel Pegasos, binary and Crammer-Singer multi-class, and Budgeted SGD = Algorithm 1 of
/// Wang, Crammer, Vucetic, "Multi-class Pegasos on a Budget", ICML 2010 (the BSGD paper).
/// Equation numbers refer to that paper. Linear Pegasos is in linear_pegasos.hpp.

#include "../budget/maintainer.hpp"
#include "combine.hpp"
#include "learner_base.hpp"
#include "pegasos_common.hpp"

namespace budgetkernel {

/// Parameters of kernel Pegasos / Budgeted SGD.
struct BSGDParams {
  Kernel kernel{KernelType::RBF, 1.0};
  /// regularisation lambda of eq. (1); eta_t = 1 / (lambda t). The default (and average_start's)
  /// is the one closest to the best of a grid in hindsight on bench/tuning.py's streams,
  /// closer than the paper's lam = 1e-4 without averaging (docs/tuning.md, "Defaults").
  double lam = 1e-3;
  Index budget = 0;                       ///< B; 0 = no budget (kernel Pegasos)
  Maintenance maintenance = Maintenance::Merge;
  std::uint64_t seed = 0;                 ///< seeds the generator of random removal
  /// Averaged predictor: 0 = off (the paper's last iterate); t0 >= 1 = predict with an average
  /// of the iterates w_t for t >= t0, carried through budget maintenance (Python's `average`).
  /// Not the `averaged` flag of PA, SPA and BOGD: those predict with the plain mean of every
  /// classifier held (UniformAverage, on the SVs maintenance removed as well), this averages
  /// iterates from t0 on with polynomial decay, on the learner's own SVs.
  /// kAverageAuto (the default): from the first example with merging, projection or no budget,
  /// off with removal, where the average, which lives on the SVs, loses what a removed SV held
  /// (and so predicts worse than the last iterate).
  std::int64_t average_start = kAverageAuto;
  static constexpr std::int64_t kAverageAuto = -1;
  /// eta of polynomial-decay averaging (Shamir & Zhang, ICML 2013): the k-th averaged iterate
  /// enters with weight rho_k = (eta + 1) / (k + eta); 0 = the plain mean (Polyak-Ruppert).
  /// Recent iterates count more: with a budget, old iterates live on SVs that maintenance has
  /// since merged or projected, so a plain mean from t0 = 1 is dragged toward them (worse than
  /// the last iterate on the checkerboards, where eta of 10-30 is better than it).
  double average_decay = 10.0;
  /// Merging and removal: while ||w|| is well inside the ball, bound it instead of tracking
  /// it, so that no kernel-matrix cache is kept and a merge needs no kernel row of z (see
  /// KernelPegasos). false = track ||w||^2 exactly at every maintenance step: the same model
  /// up to rounding in ||w||^2 (a reference for tests).
  bool bound_norm = true;
  /// The loss of the SGD steps: the SVM's hinge (eq. 2; the BSGD paper), or the logistic loss
  /// (budgeted kernel logistic regression: decision values are log-odds and predict_proba is
  /// their sigmoid / softmax). The steps, the ball projection and budget maintenance are the
  /// same; with the logistic loss every example has a nonzero gradient and so adds an SV.
  PegasosLoss loss = PegasosLoss::Hinge;

  void validate() const {
    detail::check_lam(lam);
    detail::require_psd_kernel(kernel);
    detail::require(budget >= 0, "budget must be >= 1 (or 0 for no budget)");
    detail::require_enum(maintenance_names, maintenance, "maintenance");
    detail::require_enum(pegasos_loss_names, loss, "loss");
    detail::require(budget == 0 || maintenance != Maintenance::Merge || kernel.unit_diagonal(), detail::kMergeNeedsRbf);
    detail::require(average_start >= kAverageAuto, "average must be >= 0 (0 = off), or -1 (by the maintenance)");
    detail::require_non_negative(average_decay, "average_decay");
  }

  /// average_start with kAverageAuto resolved by the maintenance (see average_start).
  std::int64_t resolved_average_start() const {
    if (average_start != kAverageAuto) return average_start;
    const bool removal = budget > 0 && (maintenance == Maintenance::RemoveRandom ||
                                        maintenance == Maintenance::RemoveOldest ||
                                        maintenance == Maintenance::RemoveSmallest);
    return removal ? 0 : 1;
  }
};

/// Kernel Pegasos (eq. 1-4), with a budget = Budgeted SGD (Algorithm 1).
///
/// The model is w = s * sum_j alpha_j phi(x_j) with a global scale s, so the shrink
/// (1 - eta_t lambda) and the projection onto the ball ||w|| <= 1/sqrt(lambda) are O(1);
/// ||w||^2 is kept exactly and incrementally: a shrink or projection by phi multiplies it by
/// phi^2, adding beta phi(x) adds 2 beta.f(x) + ||beta||^2 k(x, x), and a maintenance step adds
/// its norm_change (docs/derivations.md, "Pegasos: the scale trick").
/// One step costs one kernel row (O(B d)) plus the maintenance step when the budget
/// overflows: O(B) for removal and merging, O(B^2) for projection.
///
/// ||w|| with merging and removal. The exact ||w_after||^2 of a merge needs f(x_m), f(x_n)
/// and f(z), i.e. z's kernel row and a kernel-matrix cache: a second kernel row per example;
/// a removal needs f(x_p), i.e. the cache (GramTracked). It only decides whether the ball
/// projection (line 9) applies, which after the first ~1/lambda examples it typically never
/// does (lambda ||w||^2 settles well inside the ball; docs/derivations.md). So while
/// lambda ||w||^2 <= 1/2 (and at least B examples after the last switch, which amortises the
/// switch's O(B^2 d) cache rebuild), m_norm2 is an upper bound instead: ||w - Delta|| <=
/// ||w|| + ||Delta|| with ||Delta||^2 the step's degradation; shrinks and added SVs change it
/// exactly as they change ||w||^2. Once the bound leaves the ball, the exact value is
/// computed (cache rebuild, alpha' K alpha) and tracking resumes, so every projection is
/// decided on the exact ||w||: the model is the same as with exact tracking throughout
/// (BSGDParams::bound_norm = false), up to rounding in ||w||^2. Switches back to tracking
/// are rare, so almost every step runs without the cache (docs/derivations.md, "Pegasos:
/// bounding ||w|| instead of tracking it").
///
/// Averaging (params.average_start = t0 >= 1): the predictor is w_bar = a weighted average of
/// the iterates w_t, t >= t0 (after each full step, maintenance and ball projection included;
/// weights of polynomial-decay averaging, see BSGDParams::average_decay), kept as the store's
/// carried coefficients (SupportVectors::C, absolute units): after the k-th averaged step,
/// C <- C + rho_k (s A - C), O(B c). A budget-maintenance step maps C as it maps A (a
/// merge combines the two rows by eq. (22), a projection adds beta C_p, a removal drops the
/// row), so w_bar stays in the span of the B stored SVs. The learning itself (scores for the
/// loss, maintenance choices) uses w_t only; predictions (prequential and decision) use
/// w_bar once it exists.
class KernelPegasos : public OnlineLearner<KernelPegasos> {
 public:
  KernelPegasos() = default;
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  KernelPegasos(Index n_features, Index n_classes, const BSGDParams& params) { reset(n_features, n_classes, params); }

  /// Starts over: an empty model with these dimensions and parameters, counters at 0 and the
  /// random generator seeded from the parameters.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  void reset(Index n_features, Index n_classes, const BSGDParams& params) {
    params.validate();
    init_base(n_features, n_classes, params.budget);
    m_p = params;
    m_p.average_start = params.resolved_average_start();  // the model (and its file) holds the start
    set_native_probabilities(params.loss == PegasosLoss::Log);
    // Without a budget no maintenance runs: no side state (kernel cache, inverse), no check.
    m_maint = BudgetMaintainer(params.maintenance, params.kernel, params.budget > 0);
    m_rng.seed(params.seed);
    const Index cap = params.budget > 0 ? params.budget + 1 : 64;
    m_sv.reset(n_features, n_outputs(), cap);
    m_sv.set_carry_columns(m_p.average_start > 0 ? n_outputs() : 0);
    m_maint.reserve(m_sv.capacity());  // the B x B cache now: a bad_alloc leaves no half-learned step
    m_scale = 1.0;
    m_norm2 = 0.0;
    m_exact_since = 0;
    m_avg_count = 0;
    resize_work(cap);
  }

  const BSGDParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_sv; }
  /// The global scale s of w = s * sum alpha_j phi(x_j).
  double scale() const { return m_scale; }
  /// ||w||^2: the incrementally kept value, or recomputed in O(B^2 d) while the learner only
  /// bounds it (see the class comment).
  double norm2() const { return norm_exact() ? m_norm2 : exact_norm2(); }
  /// The kept value: ||w||^2 when norm_exact(), else an upper bound of it (class comment).
  double norm2_bound() const { return m_norm2; }
  /// Whether norm2_bound() is ||w||^2 itself.
  /// (The maintainer tracks the norm exactly then: one state, kept by the maintainer.)
  bool norm_exact() const { return m_maint.tracks_norm(); }
  /// True coefficients s * alpha, one row per SV.
  RowMatrix coefficients() const { return m_scale * m_sv.A().topRows(m_sv.size()); }
  /// Whether predictions use the averaged iterate (averaging on and started).
  bool predicts_averaged() const { return m_avg_count > 0; }
  /// Number of iterates averaged so far.
  std::int64_t averaged_iterates() const { return m_avg_count; }
  /// The coefficients predictions use: the averaged ones when predicts_averaged(), else
  /// coefficients().
  RowMatrix predictor_coefficients() const {
    return predicts_averaged() ? RowMatrix(m_sv.C().topRows(m_sv.size())) : coefficients();
  }
  const BudgetMaintainer& maintainer() const { return m_maint; }

  /// Algorithm 1 for one example: score it (the prequential prediction), then learn.
  /// \param xp  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* xp, std::int32_t y) {
    const Eigen::Map<const Vector> x(xp, m_d);
    const double xsq = x.squaredNorm();
    const std::int32_t pred = score(x, xsq);
    const std::int64_t t = ++m_count.examples;
    const double shrink = 1.0 - 1.0 / static_cast<double>(t);  // 1 - eta_t lambda with eta_t = 1/(lambda t)
    const double eta = 1.0 / (m_p.lam * static_cast<double>(t));
    const double loss = m_p.loss == PegasosLoss::Hinge ? detail::pegasos_loss(m_f, y, eta, m_beta)
                                                       : detail::logistic_loss(m_f, y, eta, m_beta);
    shrink_weights(shrink);
    if (loss > 0.0) {
      add_example(x, xsq, t, shrink);
      if ((m_p.budget > 0 && m_sv.size() > m_p.budget) || m_maint.must_reduce()) maintain_budget();
    }
    project_onto_ball(t);
    if (m_scale < detail::min_scale) {  // fold the scale into alpha before it underflows
      m_sv.scale(m_scale);
      m_scale = 1.0;
    }
    if (m_p.average_start > 0 && t >= m_p.average_start) update_average();
    return pred;
  }

  /// Decision values of one example (n_outputs values). `dots`: x's dot products with the
  /// SVs when already known (a row of SupportVectors::dots_rows), else null.
  /// \param xp    n_features() values.
  /// \param out   receives n_outputs() decision values.
  /// \param dots  x's dot products with the SVs, or null.
  void decision(const double* xp, double* out, const double* dots = nullptr) const {
    const Eigen::Map<const Vector> x(xp, m_d);
    Eigen::Map<Vector> f(out, n_outputs());
    const Index n = m_sv.size();
    if (n == 0) {
      f.setZero();
      return;
    }
    thread_local Vector krow;
    if (krow.size() < n) krow.resize(n);
    m_sv.kernel_row(m_p.kernel, x, x.squaredNorm(), krow, dots);
    if (m_avg_count > 0) {
      m_sv.carry_scores(krow, f);
    } else {
      m_sv.scores(krow, f);
      f *= m_scale;
    }
  }

  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// taken per block of rows (detail::for_row_blocks).
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_outputs(), receives the values.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    thread_local RowMatrix D;
    detail::for_row_blocks(X.rows(), m_sv.size(), stop, [&](Index i, Index b) {
      m_sv.dots_rows(X.middleRows(i, b), D);
      for (Index r = 0; r < b; ++r) decision(X.row(i + r).data(), out.row(i + r).data(), D.row(r).data());
    });
  }

  /// combine() of one model within `budget` is a copy of it (learners/combine.hpp).
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  /// \return whether combining this model alone within `budget` is a plain copy of it.
  bool combine_is_copy(Index budget) const { return budget < 0 || budget == m_p.budget; }
  Index combine_size() const { return m_sv.size(); }

  /// This model becomes sum_k w_k f_k of `models` (learners/combine.hpp): the union of their
  /// SVs with coefficients w_k s_k alpha (scale 1), and, when any of them predicts with its
  /// averaged iterate, sum_k w_k of their predictors as the averaged coefficients (a model
  /// not yet averaging contributes its last iterate). Over the budget, the SVs enter most
  /// important first and each overflow runs this learner's maintenance step (projection or
  /// removal as in a stream; merging with its search widened to the least-degrading pair
  /// among the smallest SVs, MergeSearch::widened), which maps the averaged coefficients as it
  /// maps alpha (eq. 22 for a merge); rep.degradation is the ||Delta w||^2 of w_t that those
  /// steps report (eq. 14). ||w||^2 is recomputed exactly; the random generator is model 0's.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const KernelPegasos*>& models, const CombinePlan& plan, const KernelPegasos* base,
                    CombineReport& rep) {
    BSGDParams p = models[0]->m_p;
    for (const KernelPegasos* m : models) check_combinable(p, m->m_p);
    if (plan.budget >= 0) p.budget = plan.budget;
    reset(models[0]->m_d, plan.n_classes, p);
    m_rng = models[0]->m_rng;
    const bool averaged =
        std::any_of(models.begin(), models.end(), [](const KernelPegasos* m) { return m->predicts_averaged(); });
    detail::ExpansionUnion u(m_d, n_outputs(), averaged ? n_outputs() : 0);
    for (std::size_t k = 0; k < models.size(); ++k) {
      const KernelPegasos& m = *models[k];
      const RowMatrix A = m.coefficients(), P = m.predictor_coefficients();
      u.add(plan, k, m.m_sv.X(), m.m_sv.size(), A, &P, m.m_sv.ids());
    }
    rep.union_size = u.size();
    rep.duplicates = u.duplicates();
    // Merging folds a union's SVs by the widened search (MergeSearch::widened), without the
    // cache, which is rebuilt at the end; projection and removal reduce as in a stream.
    const bool widened = m_p.maintenance == Maintenance::Merge && m_p.budget > 0;
    Merging widened_merge(m_p.kernel, MergeSearch::widened());
    widened_merge.track_norm(false, m_sv);
    for (Index r : detail::combine_order(u, m_p.budget, m_p.kernel)) {
      const Eigen::Map<const Vector> x(u.x(r), m_d);
      const double xsq = x.squaredNorm();
      if (m_krow.size() < m_sv.size() + 1) resize_work(2 * (m_sv.size() + 1));
      if (!widened) m_sv.kernel_row(m_p.kernel, x, xsq, m_krow);
      const Index i = m_sv.push(x, u.alpha(r), u.id(r));
      if (averaged) m_sv.C().row(i) = u.carried(r).transpose();
      if (!widened) m_maint.on_push(m_sv, m_krow, m_p.kernel.self(xsq));
      if ((m_p.budget > 0 && m_sv.size() > m_p.budget) || m_maint.must_reduce()) {
        rep.degradation += (widened ? widened_merge.reduce(m_sv, m_p.kernel)
                                    : m_maint.reduce(m_sv, m_p.kernel, m_rng)).degradation;
        ++rep.reductions;
      }
    }
    if (widened) m_maint.rebuild(m_sv, m_p.kernel);
    std::vector<const Counters*> counts;
    for (const KernelPegasos* m : models) counts.push_back(&m->m_count);
    m_count = detail::combined_counters(counts, base ? &base->m_count : nullptr);
    m_count.degradation += rep.degradation;
    m_count.maintenance += rep.reductions;
    if (averaged) {
      std::vector<std::int64_t> avg;
      for (const KernelPegasos* m : models) avg.push_back(m->m_avg_count);
      m_avg_count = (std::max)(std::int64_t{1}, detail::combined_count(avg, base ? &base->m_avg_count : nullptr));
    }
    m_norm2 = exact_norm2();
    m_exact_since = m_count.examples;
    metadata = models[0]->metadata;
  }

  /// Writes every field needed to predict and to resume training (the model file, io.hpp).
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const;

  /// Replaces this learner by the one save() wrote, checked field by field.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  /// \throws std::runtime_error ("model file: ...") if they are not a valid model of this learner.
  void load(const FieldMap& fm);

 private:
  /// The kernel row of x, the scores f of w_t (into m_f) and the prequential prediction
  /// (of the averaged iterate once it exists).
  std::int32_t score(const Eigen::Map<const Vector>& x, double xsq) {
    const Index n = m_sv.size();
    if (m_krow.size() < n + 1) resize_work(2 * (n + 1));
    m_sv.kernel_row(m_p.kernel, x, xsq, m_krow);
    m_sv.scores(m_krow, m_f);
    m_f *= m_scale;
    if (m_avg_count > 0) {
      m_sv.carry_scores(m_krow, m_favg);
      note_scores(m_favg);
      return detail::predict_from_scores(m_favg);
    }
    note_scores(m_f);
    return detail::predict_from_scores(m_f);
  }

  /// Algorithm 1, line 2: w <- (1 - eta_t lambda) w, on the global scale (O(1)).
  void shrink_weights(double shrink) {
    // At t = 1 the factor is 0: reset instead of dividing by s = 0.
    if (shrink == 0.0) {
      m_sv.clear();
      m_maint.on_clear();
      m_scale = 1.0;
      m_norm2 = 0.0;
    } else {
      m_scale *= shrink;
      m_norm2 *= shrink * shrink;
    }
  }

  /// Algorithm 1, line 4: w <- w + beta_t phi(x_t) (beta_t of section 2.1, in m_beta), stored
  /// as beta / s. ||w + beta phi||^2 = ||w||^2 + 2 beta.f + ||beta||^2 k(x,x), with f the
  /// scores of the shrunk w (docs/derivations.md, "Pegasos: the scale trick").
  void add_example(const Eigen::Map<const Vector>& x, double xsq, std::int64_t t, double shrink) {
    const double kappa = m_p.kernel.self(xsq);
    const double fdot = shrink == 0.0 ? 0.0 : shrink * m_f.dot(m_beta);
    // Overflows to inf when ||beta||^2 k(x, x) passes the double range (lambda 1e-30 makes
    // beta up to 1e30, a linear-kernel row may have k(x, x) up to 1e300); ||w|| itself is
    // finite, and the ball projection (project_onto_ball) handles an infinite m_norm2.
    m_norm2 = (std::max)(0.0, m_norm2 + 2.0 * fdot + m_beta.squaredNorm() * kappa);
    m_sv.push(x, m_beta / m_scale, t);
    m_maint.on_push(m_sv, m_krow, kappa);
    ++m_count.updates;
  }

  /// Algorithm 1, lines 6-8: budget maintenance, reporting ||Delta w||^2 (eq. 14), and the
  /// new ||w||^2: exact when the maintainer tracks it, else the bound of the class comment.
  void maintain_budget() {
    const MaintenanceResult r = m_maint.reduce(m_sv, m_p.kernel, m_rng);
    const double s2 = m_scale * m_scale;
    double norm2 = m_norm2;
    if (r.norm_exact) {
      norm2 = m_norm2 + s2 * r.norm_change;
    } else {  // ||w - Delta|| <= ||w|| + ||Delta|| (the bound of the class comment)
      const double b = std::sqrt(m_norm2) + std::sqrt(s2 * r.degradation);
      norm2 = b * b;
    }
    // An overflowed ||w||^2 stays unknown (inf), and so does one the maintainer's squares
    // overflowed in (inf - inf = NaN, which max(0, NaN) had turned into 0): resolved exactly
    // in project_onto_ball. (The other way round, max(0, .) only absorbs rounding below 0.)
    m_norm2 = std::isfinite(m_norm2) && std::isfinite(norm2) ? (std::max)(0.0, norm2)
                                                              : std::numeric_limits<double>::infinity();
    // Likewise ||Delta w||^2 (its true value is then beyond the double range, not NaN).
    const double degradation = s2 * r.degradation;
    m_count.degradation += std::isnan(degradation) ? std::numeric_limits<double>::infinity() : degradation;
    ++m_count.maintenance;
  }

  /// Algorithm 1, line 9: projection onto the ball ||w|| <= 1/sqrt(lambda) (section 2.1),
  /// applied to the vector actually kept, i.e. after budget maintenance; decided on the exact
  /// ||w||. Also switches between tracking ||w||^2 and bounding it (class comment).
  void project_onto_ball(std::int64_t t) {
    const bool overflowed = !std::isfinite(m_norm2);
    if (overflowed) {
      // ||w||^2 overflowed (||beta||^2 k(x, x) beyond the double range: tiny lambda, huge rows),
      // or a maintenance step's squares did: ||w|| computed exactly without squaring it decides
      // the projection. (Projecting with phi = 1/sqrt(inf) = 0 would make ||w||^2 = inf * 0 =
      // NaN, and the model would never project again.) The exact recomputation below is
      // skipped: its unscaled alpha' K alpha would overflow too (after a projection here the
      // scale is folded into alpha by step()).
      const double w = unsquared_norm();
      if (std::sqrt(m_p.lam) * w > 1.0) {
        m_scale *= 1.0 / (std::sqrt(m_p.lam) * w);
        m_norm2 = 1.0 / m_p.lam;
      } else {
        m_norm2 = w * w;  // <= 1/lambda <= 1e30; exact, so a valid bound when !norm_exact()
      }
    } else if (!norm_exact() && m_norm2 * m_p.lam > 1.0) {
      m_maint.track_norm(true, m_sv);
      const GramCache& K = m_maint.gram();
      m_norm2 = m_scale * m_scale * expansion_norm2([&](Index i) { return K.row_data(i); });
      m_exact_since = t;
    }
    if (!overflowed && m_norm2 * m_p.lam > 1.0) {
      const double phi = 1.0 / std::sqrt(m_p.lam * m_norm2);
      m_scale *= phi;
      m_norm2 *= phi * phi;
    } else if (norm_exact() && m_p.bound_norm && m_maint.can_skip_norm() && m_norm2 * m_p.lam <= 0.5 &&
               t - m_exact_since >= m_p.budget) {
      m_maint.track_norm(false, m_sv);
      m_exact_since = t;
    }
  }

  /// Polynomial-decay averaging (Shamir & Zhang 2013): w_bar_k = w_bar_{k-1} + rho_k (w_t -
  /// w_bar_{k-1}), rho_k = (eta + 1) / (k + eta), coefficient-wise over the store's carried
  /// coefficients (class comment).
  void update_average() {
    const double rho = (m_p.average_decay + 1.0) / (static_cast<double>(++m_avg_count) + m_p.average_decay);
    const Index n_sv = m_sv.size();
    m_sv.C().topRows(n_sv) += rho * (m_scale * m_sv.A().topRows(n_sv) - m_sv.C().topRows(n_sv));
  }

  /// ||w||^2 recomputed from the SVs, O(B^2 d).
  double exact_norm2() const {
    const Index n = m_sv.size();
    Vector krow(n + 1);
    return m_scale * m_scale * expansion_norm2([&](Index i) {
      m_sv.kernel_row(m_p.kernel, m_sv.x(i).transpose(), m_sv.sqnorm()(i), krow);
      return krow.data();
    });
  }

  /// combine_from's check: the models must share every parameter but the seed.
  static void check_combinable(const BSGDParams& a, const BSGDParams& b) {
    const auto same = [](bool ok, const char* what) {
      detail::require(ok, std::string("combine: the models' ") + what + " differ");
    };
    same(detail::same_kernel(a.kernel, b.kernel), "kernels");
    same(a.lam == b.lam, "lam");
    same(a.budget == b.budget, "budgets");
    same(a.maintenance == b.maintenance, "maintenance strategies");
    same(a.average_start == b.average_start && a.average_decay == b.average_decay, "averaging parameters");
    same(a.bound_norm == b.bound_norm, "bound_norm settings");
    same(a.loss == b.loss, "losses");
  }

  /// sum_ij alpha_i . alpha_j K(i, j) over the stored (unscaled) coefficients, with row(i)
  /// giving K(i, 0..n). O(n^2 c).
  template <class Row>
  double expansion_norm2(const Row& row) const {
    const Index n = m_sv.size();
    const auto A = m_sv.A().topRows(n);
    double sum = 0.0;
    for (Index i = 0; i < n; ++i) sum += A.row(i).dot(Eigen::Map<const Vector>(row(i), n).transpose() * A);
    return (std::max)(0.0, sum);
  }

  /// ||w|| = s ||sum_j alpha_j phi(x_j)||, exact, for when ||w||^2 is beyond the double range.
  /// With c = max_j ||alpha_j|| sqrt(k_jj), the coefficients alpha / c make every term
  /// (alpha_i / c) . (alpha_j / c) k_ij at most 1 in magnitude (Cauchy-Schwarz), so the
  /// quadratic form is finite and ||w|| = s c sqrt(form). O(n^2 d), only in that case.
  double unsquared_norm() const {
    const Index n = m_sv.size();
    double c = 0.0;
    for (Index j = 0; j < n; ++j)
      c = (std::max)(c, m_sv.alpha(j).norm() * std::sqrt(std::abs(m_p.kernel.self(m_sv.sqnorm()(j)))));
    if (!(c > 0.0)) return 0.0;
    const RowMatrix B = m_sv.A().topRows(n) / c;
    Vector krow(n + 1);
    double form = 0.0;
    for (Index i = 0; i < n; ++i) {
      m_sv.kernel_row(m_p.kernel, m_sv.x(i).transpose(), m_sv.sqnorm()(i), krow);
      form += B.row(i).dot(krow.head(n).transpose() * B);
    }
    return m_scale * c * std::sqrt((std::max)(0.0, form));
  }

  void resize_work(Index cap) {
    detail::zero_fresh(m_krow, cap);
    m_f.setZero(n_outputs());
    m_favg.setZero(n_outputs());
    m_beta.setZero(n_outputs());
  }

  BSGDParams m_p;
  SupportVectors m_sv;
  BudgetMaintainer m_maint;
  std::mt19937_64 m_rng;
  double m_scale = 1.0, m_norm2 = 0.0;  // m_norm2: ||w||^2, or an upper bound (norm_exact())
  std::int64_t m_exact_since = 0;  // example count at the last switch of norm_exact()
  std::int64_t m_avg_count = 0;
  Vector m_krow, m_f, m_favg, m_beta;
};

}  // namespace budgetkernel

#include "pegasos_io.hpp"  // KernelPegasos::save and load

// Included here as well, so that the family header keeps naming both Pegasos learners.
#include "linear_pegasos.hpp"
