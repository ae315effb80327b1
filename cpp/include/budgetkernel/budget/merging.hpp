#pragma once
/// \file budget/merging.hpp
/// Budget maintenance by merging two SVs into one (BSGD paper, section 4.3, eqs. 18-22).
///
/// Gaussian kernel only. With k_mn = k(x_m, x_n) = exp(-s), s = gamma |x_m - x_n|^2, and
/// z = h x_m + (1 - h) x_n on the line through the pair (eq. 20):
///   k(x_m, z) = k_mn^{(1-h)^2} = exp(-s (1-h)^2),   k(x_n, z) = k_mn^{h^2} = exp(-s h^2),
///   alpha_z^(i) = alpha_m^(i) k(x_m, z) + alpha_n^(i) k(x_n, z)                  (eq. 22)
///   degradation = sum_i alpha_m^(i)^2 + alpha_n^(i)^2 + 2 alpha_m^(i) alpha_n^(i) k_mn - alpha_z^(i)^2
/// (the least-squares residual of eq. 22: ||u - alpha_z phi(z)||^2 = ||u||^2 - alpha_z^2 since
/// <u, phi(z)> = alpha_z and ||phi(z)|| = 1).
///
/// The 1-D search of eq. (21) is solved exactly: on each interval where g(h) = A k^{(1-h)^2} +
/// B k^{h^2} is unimodal (derived below), g' = 0 in log form is monotone and is solved to
/// ~1e-13 relative in h (kMergeTol; by a certified Chebyshev step from a bracket end where it
/// needs no exp, else safeguarded Newton/bisection): the paper's golden-section maximiser, but
/// to full precision (golden section on g stalls near sqrt(eps), the top being flat) and free
/// of the exps that underflow for distant points. The scalar exps are detail::fast_exp /
/// fast_expm1 (rbf_exp.hpp: glibc's cost a call each, ~10 per merge before).

#include "../gram_cache.hpp"
#include "../sv_store.hpp"
#include "result.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

namespace budgetkernel {
namespace detail {

/// exp(-s t^2) = k^{t^2} with k = exp(-s); exactly 1 when t == 0 or s == 0 (no 0 * inf NaN
/// for k == 0, i.e. s == inf).
inline double merge_kpow(double s, double t) { return (t == 0.0 || s == 0.0) ? 1.0 : fast_exp(-s * t * t); }

/// s = -ln k: +inf for k <= 0 (too far apart to matter), 0 for k >= 1 (identical points).
inline double merge_s_from_k(double k) { return k <= 0.0 ? std::numeric_limits<double>::infinity() : k >= 1.0 ? 0.0 : -std::log(k); }

inline double merge_logistic(double x) { return 1.0 / (1.0 + fast_exp(-x)); }

/// ln(a/b) for a, b > 0, skipping the log of an argument equal to 1 (binary stores pass the
/// class weights scaled so that the larger one is 1, see merge_h_s): then exactly ln of the other.
inline double merge_log_ratio(double a, double b) { return (a == 1.0 ? 0.0 : std::log(a)) - (b == 1.0 ? 0.0 : std::log(b)); }

/// The accuracy the 1-D solves of eq. (21) stop at early: h to ~1e-13 relative (see
/// merge_solve_decreasing; the degradation is then evaluated exactly at that h).
inline constexpr double kMergeTol = 1e-13;

/// Root of a function decreasing on [lo, hi] with f(lo) >= 0 >= f(hi) (the end values are
/// never evaluated, they may be infinite), from x. `f(x, fx, dfx, final2)` gives the value, the
/// derivative and final2 >= 0: a Newton step from x no longer than sqrt(final2) lands within
/// the caller's accuracy of the root, so it is returned without another evaluation. (Newton's
/// error after a step dx from x is |F''(xi)| (x* - x)^2 / (2 |F'(x)|), xi between x and the root
/// x*: the callers bound |F''| near x; by Kantorovich's theorem x* lies within ~|dx| of x once
/// that bound times |dx| is small against |F'(x)|.) Otherwise Newton steps, replaced by
/// bisection when they leave the bracket or shrink too slowly, to ~1e-15 in x. Measured on a
/// BSGD run (2-D noisy checkerboard, gamma 8, lambda 1e-2, B = 100): one evaluation per solve
/// from the callers' starting points (merge_chebyshev's step), where confirming
/// |dx| <= 1e-15 from the former starts took three to four.
template <class Fn>
double merge_solve_decreasing(const Fn& f, double lo, double hi, double x) {
  if (!(hi > lo)) return lo;
  if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
  double step_old = hi - lo, step = step_old;
  for (int it = 0; it < 300; ++it) {
    double fx = 0.0, dfx = 0.0, final2 = 0.0;
    f(x, fx, dfx, final2);
    if (fx == 0.0) return x;
    if (fx > 0.0) lo = x; else hi = x;
    const double tol = 1e-15 * (std::max)(1.0, std::fabs(x));
    if (hi - lo <= tol) return 0.5 * (lo + hi);
    const double dx = fx / dfx;
    double xn = x - dx;
    const bool in = xn > lo && xn < hi;
    // A Newton correction below the resolution means x is the root to rounding. (It cannot be
    // accepted as a step: it may round to x itself, i.e. onto the bracket end just moved.)
    if (std::fabs(dx) <= tol) return in ? xn : x;
    if (in && dx * dx <= final2) return xn;
    if (!in || std::fabs(xn - x) > 0.5 * std::fabs(step_old)) xn = 0.5 * (lo + hi);
    step_old = step;
    step = xn - x;
    if (std::fabs(step) <= tol) return xn;
    x = xn;
  }
  return x;
}

/// A root of F from a point x where F, F' and F'' are known without an exp (the free end of a
/// bracket, see the callers): Chebyshev's step y = d (1 - F'' d / (2 F')), d = -F/F', into y.
/// Returns whether |x + y - x*| <= tol is certain for the root x* nearest x, given m3 >= |F'''|
/// between x and x + 1.03 d. Why: Taylor's theorem at x gives 0 = F + F' y* + F'' y*^2/2 + R,
/// |R| <= m3 |y*|^3/6, for y* = x* - x; with c2 = |F''|/(2|F'|), c2 |d| <= 0.01 and
/// m3 d^2 <= 0.06 |F'| this puts |y*| within 1.03 |d|, and then
/// |y* - y| <= |d|^3 (2.2 c2^2 + 0.19 m3/|F'|). From the free ends of the callers that is
/// ~(2 s e)^4 / 2, e the end's e^{-|u|}: below kMergeTol for most merges (the BSGD run of
/// merge_solve_decreasing: 78%; 80% of merge_inside's, 71% of merge_beyond's), which then take
/// no log and no exp of the solve (just k_mn's and one to map the step back).
inline bool merge_chebyshev(double f, double df, double d2, double m3, double tol, double& y) {
  const double d = -f / df, ad = std::fabs(d), adf = std::fabs(df), c2 = std::fabs(d2) / (2.0 * adf);
  y = d * (1.0 - d2 * d / (2.0 * df));
  return ad <= 0.005 && c2 * ad <= 0.01 && m3 * ad * ad <= 0.06 * adf &&
         ad * ad * ad * (2.2 * c2 * c2 + 0.19 * m3 / adf) <= tol;
}

/// Largest excess t of the opposite-sign case: for P >= N > 0, the t >= 0 maximising
/// P exp(-s t^2) - N exp(-s (1+t)^2), i.e. eq. (21) with h = 1 + t beyond the dominant end.
/// Its derivative has the sign of ln(N/P) + ln((1+t)/t) - s(1+2t), strictly decreasing from
/// +inf, so the maximiser is unique. Solved in w = ln(1 + 1/t) (t = 1/expm1(w), 1 + 2t =
/// coth(w/2)), where that is F(w) = -l - w + s coth(w/2), l = ln(N/P) <= 0: a line plus a term
/// flat away from w = 0, as merge_inside's F (in t, the log singularity at 0 made Newton take
/// three to four evaluations, each with a log, and stop at 1e-15 absolute, i.e. at ~1e-11
/// relative for t ~ 1e-4; the same run as merge_solve_decreasing: 20% of the merges). With p = expm1(w) = 1/t: coth(w/2) = 1 + 2/p, F'(w) = -1 - (s/2) csch^2(w/2) =
/// -1 - 2 s t (1 + t). The root is w* = -l + s coth(w*/2) and 1 <= coth(w/2) <= 1 + 2/w, so
/// it lies in [s - l, s - l + 2s/(s - l)]. w >= ln(1 + 1e-8), i.e. t <= 1e8, binds only for
/// s < ~1e-16, where k_mn already rounds to 1.
inline double merge_beyond(double P, double N, double s) {
  if (std::isinf(s)) return 0.0;
  static const double w_cap = std::log1p(1e-8);
  // Free start: the bracket's lower end w_a = s - l, where t_a = 1/expm1(w_a) = N k/(P - N k)
  // (k = k_mn = e^{-s}; no cancellation for N k <= P/2) and F(w_a) = 2 s t_a; F''' =
  // -2 s t (1+t) (1 + 6t (1+t)) decreases in size with w, so its value at w_a bounds it up to
  // the root (to the right).
  const double k = fast_exp(-s);
  const bool free_start = 2.0 * N * k <= P;
  double y = 0.0;
  if (free_start) {
    const double t = N * k / (P - N * k), tt = t * (1.0 + t);
    if (merge_chebyshev(2.0 * s * t, -1.0 - 2.0 * s * tt, 2.0 * s * tt * (1.0 + 2.0 * t), 2.0 * s * tt * (1.0 + 6.0 * tt),
                        kMergeTol / (1.0 + t), y))
      return t / (1.0 + (1.0 + t) * fast_expm1(y));  // 1/expm1(w_a + y)
  }
  const double l = merge_log_ratio(N, P);
  auto F_at = [&](double w, double t, double& f, double& df, double& final2) {
    f = -l - w + s * (1.0 + 2.0 * t);
    df = -1.0 - 2.0 * s * t * (1.0 + t);
    // F'' = (s/2) csch^2(w/2) coth(w/2) = 2 s t (1+t) (1+2t) decreases in w; within rho =
    // min(w, 1)/4 of w, p = 1/t is at least p/2 (expm1' = 1 + p), so there |F''|/2 <=
    // 2 s t (1+2t)(1+4t). Accuracy: |dt|/t = (1+t) |dw| <= kMergeTol.
    const double rho = 0.25 * (std::min)(w, 1.0), c2 = 2.0 * s * t * (1.0 + 2.0 * t) * (1.0 + 4.0 * t);
    final2 = (std::min)(0.25 * rho * rho, kMergeTol / (1.0 + t) * std::fabs(df) / (1.11 * c2));
  };
  auto F = [&](double w, double& f, double& df, double& final2) { F_at(w, 1.0 / fast_expm1(w), f, df, final2); };
  const double lo = (std::max)(s - l, w_cap), hi = (std::max)(s - l + 2.0 * s / (s - l), w_cap);
  double w0 = std::numeric_limits<double>::quiet_NaN();
  if (free_start) {
    w0 = s - l + y;
  } else if (P > N) {  // a Halley step from w = -l, where t = N/(P - N) needs no exp
    const double t = N / (P - N);
    double f = 0.0, df = 0.0, final2 = 0.0;
    F_at(-l, t, f, df, final2);
    const double d2 = 2.0 * s * t * (1.0 + t) * (1.0 + 2.0 * t);
    w0 = -l - 2.0 * f * df / (2.0 * df * df - f * d2);
  }
  return 1.0 / fast_expm1(merge_solve_decreasing(F, lo, hi, w0));
}

/// Same-sign case A, B > 0: the maximiser of A k^{(1-h)^2} + B k^{h^2} lies in (0, 1).
/// g'(h) has the sign of ln(A/B) - logit(h) + s(2h - 1). Solved in u = logit(h), where it is
/// F(u) = c - u + s tanh(u/2), c = ln(A/B), F'(u) = -1 + (s/2) sech^2(u/2): a line plus a
/// bounded term, so Newton needs few steps from anywhere, where in h the log singularity at
/// 0 and 1 made it overshoot and fall back to bisection (counted with an instrumented copy on
/// a BSGD run, 2-D noisy checkerboard, gamma 8, lambda 1e-2, B = 100: 6.7 evaluations per
/// solve in h, 3.4 in u to |du| <= 1e-15; now none for 80% of the solves (merge_chebyshev
/// from the free end below), one for the rest). Every root lies in [c - s, c + s] (|tanh| < 1):
///  - s <= 2 (k >= e^-2): F decreases, one maximum (unimodal);
///  - s > 2: F decreases on (-inf, -u*] and [u*, inf) and increases between, u* =
///    2 acosh(sqrt(s/2)) (F'(+-u*) = 0), so g may be bimodal (one mode near each point); each
///    branch holds at most one maximum and both are solved and compared. (A golden section
///    over all of [0, 1] can stop on the lower mode here.)
inline double merge_inside(double A, double B, double s) {
  if (std::isinf(s)) return A > B ? 1.0 : 0.0;
  if (s <= 2.0 && A == B) return 0.5;  // c = 0 is the root (g is symmetric about 1/2)
  // Free start: the bracket's end u_a = c + sigma s away from 0 (sigma = sign c), where
  // e = e^{-|u_a|} = (min(A, B)/max(A, B)) k, k = k_mn = e^{-s}, and F(u_a) = -sigma 2 s e/(1+e);
  // F''' = (s/4)(2 sech^2 tanh^2 - sech^4)(u/2), so |F'''(v)| <= 2 s e^{-|v|}, which grows by
  // at most e^{0.01} towards the root.
  const double sigma = A < B ? -1.0 : 1.0;
  const double e_a = (std::min)(A, B) / (std::max)(A, B) * fast_exp(-s), inv_a = 1.0 / (1.0 + e_a);
  const double sech2_a = 4.0 * e_a * inv_a * inv_a, th_a = sigma * (1.0 - e_a) * inv_a;  // of u_a / 2
  double y = 0.0;
  const bool certain = merge_chebyshev(-sigma * 2.0 * s * e_a * inv_a, -1.0 + 0.5 * s * sech2_a,
                                       -0.5 * s * sech2_a * th_a, 2.03 * s * e_a, kMergeTol, y);
  if (certain && s <= 2.0) {  // unimodal: the only root; |u| = |u_a| + sigma y
    const double eu = e_a * fast_exp(-sigma * y);
    return sigma < 0.0 ? eu / (1.0 + eu) : 1.0 / (1.0 + eu);
  }
  const double c = merge_log_ratio(A, B);
  // F from e = exp(-|u|): tanh(u/2) = (1 - e)/(1 + e) with the sign of u (one exp; glibc's tanh
  // costs an expm1, ~3x an exp). Its absolute error stays at rounding level, which is what a
  // root of F needs; sech^2(u/2) = 4e/(1 + e)^2.
  auto F_at = [&](double u, double e, double& f, double& df, double& final2) {
    const double inv = 1.0 / (1.0 + e);
    const double th = std::copysign((1.0 - e) * inv, u);
    f = c - u + s * th;
    df = -1.0 + 2.0 * s * e * inv * inv;
    // |F''(v)| = (s/2) sech^2(v/2) |tanh(v/2)| <= 2 s e^{-|v|} <= 2.02 s e for |v - u| <= 0.01.
    // Accuracy: |dh|/h = (1 - h) |du| <= kMergeTol.
    final2 = (std::min)(2.5e-5, kMergeTol * std::fabs(df) / (1.12 * s * e));
  };
  auto F = [&](double u, double& f, double& df, double& final2) { F_at(u, fast_exp(-std::fabs(u)), f, df, final2); };
  auto Fv = [&](double u) {
    double f = 0.0, df = 0.0, final2 = 0.0;
    F(u, f, df, final2);
    return f;
  };
  auto g = [&](double h) { return A * merge_kpow(s, 1.0 - h) + B * merge_kpow(s, h); };
  const double lo = c - s, hi = c + s, u0 = c + sigma * s + y;
  if (s <= 2.0) return merge_logistic(merge_solve_decreasing(F, lo, hi, u0));
  const double us = 2.0 * std::acosh(std::sqrt(0.5 * s));
  const bool left = Fv(-us) < 0.0, right = Fv(us) > 0.0;
  const double h1 = merge_logistic(-us), h2 = merge_logistic(us);
  if (!left && !right) return g(h1) >= g(h2) ? h1 : h2;  // only reachable through rounding
  const double hl = left ? merge_logistic(merge_solve_decreasing(F, lo, -us, u0)) : 0.0;
  const double hr = right ? merge_logistic(merge_solve_decreasing(F, us, hi, u0)) : 1.0;
  if (left && right) return g(hl) >= g(hr) ? hl : hr;
  return left ? hl : hr;
}

/// argmax over h in R of g(h) = A k^{(1-h)^2} + B k^{h^2} (eq. 21 with its two class sums),
/// k = exp(-s), for A + B >= 0.
///  - A, B > 0: h in (0, 1) (merge_inside).
///  - A > 0 > B (then A >= |B|): g increases on [0, 1] and the maximum lies beyond x_m, h > 1
///    (eq. 21's weight a = A/(A+B) > 1); B > 0 > A mirrors it to h < 0 (a < 0).
///  - s == 0 (identical points): any h is optimal; returns 1 (z = x_m).
/// With A + B >= 0, g(h) + g(1-h) = (A + B)(k^{h^2} + k^{(1-h)^2}) >= 0, so max g >= max(-g):
/// the maximiser of g also maximises g^2.
inline double merge_argmax(double A, double B, double s) {
  if (!(s > 0.0)) return 1.0;
  if (A > 0.0 && B > 0.0) return merge_inside(A, B, s);
  if (A > 0.0) return B == 0.0 ? 1.0 : 1.0 + merge_beyond(A, -B, s);
  if (B > 0.0) return A == 0.0 ? 0.0 : -merge_beyond(B, -A, s);
  return 1.0;  // A = B = 0: g == 0
}

/// Class weights of eq. (21): A = sum_i alpha_m^(i)/(alpha_m^(i)+alpha_n^(i)),
/// B = sum_i alpha_n^(i)/(alpha_m^(i)+alpha_n^(i)). A class with
/// |alpha_m^(i)+alpha_n^(i)| <= 1e-12 (|alpha_m^(i)| + |alpha_n^(i)|) is skipped: its M^(i)
/// (section 4.3) is undefined (this includes classes where both coefficients are 0).
/// Returns the number of classes used (then A + B equals it).
template <class RM, class RN>
int merge_eq21_weights(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double& A, double& B) {
  A = B = 0.0;
  int used = 0;
  for (Index i = 0; i < am.size(); ++i) {
    const double p = am(i), q = an(i), sum = p + q;
    if (std::fabs(sum) <= 1e-12 * (std::fabs(p) + std::fabs(q))) continue;
    A += p / sum;
    B += q / sum;
    ++used;
  }
  return used;
}

/// Optimal h of the pair (m, n) given s = -ln k_mn (see merge_h).
template <class RM, class RN>
double merge_h_s(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double s) {
  if (am.size() == 1) {
    // Binary: eq. (21) scaled by (alpha_m + alpha_n)/alpha_n > 0 (or by the mirror when
    // |alpha_m| > |alpha_n|), which keeps the maximiser and stays defined at alpha_m + alpha_n = 0,
    // where maximising alpha_z^2 = alpha_m^2 (k^{(1-h)^2} - k^{h^2})^2 is the same problem.
    // Maximising eq. (21) IS minimising the degradation here: the degradation is
    // const - alpha_z^2 with alpha_z = (alpha_m + alpha_n) g(h), and max g >= max(-g).
    const double a = am(0), b = an(0);
    if (std::fabs(a) <= std::fabs(b)) return b == 0.0 ? 1.0 : merge_argmax(a / b, 1.0, s);
    return merge_argmax(1.0, b / a, s);
  }
  double A = 0.0, B = 0.0;
  if (merge_eq21_weights(am, an, A, B) > 0) return merge_argmax(A, B, s);
  // No class defines M^(i): every alpha_n^(i) ~ -alpha_m^(i), so sum_i alpha_z^(i)^2 is
  // (to 1e-12 relative) sum_i alpha_m^(i)^2 (k^{(1-h)^2} - k^{h^2})^2, maximised at the two
  // mirror points h = 1 + t and h = -t; maximise sum_i alpha_z^(i)^2 directly between them.
  const double t = merge_beyond(1.0, 1.0, s);
  auto q = [&](double h) {
    const double k1 = merge_kpow(s, 1.0 - h), k2 = merge_kpow(s, h);
    double sum = 0.0;
    for (Index i = 0; i < am.size(); ++i) sum += (am(i) * k1 + an(i) * k2) * (am(i) * k1 + an(i) * k2);
    return sum;
  };
  return q(1.0 + t) >= q(-t) ? 1.0 + t : -t;
}

/// Optimal h of eq. (21) for merging coefficient rows alpha_m, alpha_n at kernel value k_mn
/// (binary: the exact minimiser of the degradation; multi-class: eq. (21) as in the paper).
template <class RM, class RN>
double merge_h(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double k) {
  return merge_h_s(am, an, merge_s_from_k(k));
}

/// k(x_m, z), k(x_n, z) (eq. 20) and the three pair terms of the degradation,
///   u1 = 1 - k(x_m,z)^2,  u2 = 1 - k(x_n,z)^2,  c12 = k_mn - k(x_m,z) k(x_n,z),
/// free of cancellation, from four independent scalar exps (two fast_exp_expm1, an expm1 and
/// k_mn = e^{-s}): with k(x_m,z) = e^a, a = -s (1-h)^2, u1 = -expm1(a) (2 + expm1(a)) (likewise
/// u2), and k(x_m,z) k(x_n,z) = k^{(1-h)^2 + h^2} = k_mn e^x, x = 2 s h (1-h), so
/// c12 = -k_mn expm1(x).
struct MergeTerms {
  double k_mz = 1.0, k_nz = 1.0, u1 = 0.0, u2 = 0.0, c12 = 0.0;
};
inline MergeTerms merge_terms(double s, double h) {
  MergeTerms r;
  double em = 0.0, en = 0.0;
  if (s != 0.0 && h != 1.0) fast_exp_expm1(-s * (1.0 - h) * (1.0 - h), r.k_mz, em);
  if (s != 0.0 && h != 0.0) fast_exp_expm1(-s * h * h, r.k_nz, en);
  r.u1 = -em * (2.0 + em);
  r.u2 = -en * (2.0 + en);
  const double x = 2.0 * s * h * (1.0 - h);
  const double k = merge_kpow(s, 1.0);
  r.c12 = !std::isinf(s) && std::fabs(x) < 1.0 ? -k * fast_expm1(x) : k - r.k_mz * r.k_nz;
  return r;
}

/// Degradation ||alpha_m phi(x_m) + alpha_n phi(x_n) - alpha_z phi(z)||^2 summed over classes,
/// for z = h x_m + (1-h) x_n and alpha_z from eq. (22), given the pair terms t = merge_terms(s, h),
/// s = -ln k_mn. Evaluated as sum_i alpha_m^(i)^2 u1 + alpha_n^(i)^2 u2 + 2 alpha_m^(i) alpha_n^(i) c12,
/// which equals alpha_m^2 + alpha_n^2 + 2 alpha_m alpha_n k_mn - alpha_z^2 without its cancellation.
template <class RM, class RN>
double merge_degradation(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, const MergeTerms& t) {
  double d = 0.0;
  for (Index i = 0; i < am.size(); ++i) {
    const double p = am(i), q = an(i);
    d += p * p * t.u1 + q * q * t.u2 + 2.0 * p * q * t.c12;
  }
  return (std::max)(0.0, d);
}

/// merge_degradation at (s, h).
template <class RM, class RN>
double merge_degradation_s(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double s, double h) {
  return merge_degradation(am, an, merge_terms(s, h));
}

/// merge_degradation_s with the kernel value k_mn instead of s.
template <class RM, class RN>
double merge_degradation(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double k, double h) {
  return merge_degradation_s(am, an, merge_s_from_k(k), h);
}

/// Binary lookup table (after Glasmachers & Qaadan 2018). With r = alpha_m/alpha_n in [-1, 1]
/// (m has the smallest |alpha|) the merge depends on (r, k) only. Tabulated once, with
/// h(r, k) = argmax_h r k^{(1-h)^2} + k^{h^2} (not kept: the solve no longer needs a start):
///   E(r, k) = D(r, k) / r^2,  D(r, k) = 1 + r^2 + 2 r k - (r k^{(1-h)^2} + k^{h^2})^2,
/// i.e. the degradation per unit alpha_m^2 (alpha_n^2 D = alpha_m^2 E). Ranking partners by E
/// is ranking them by alpha_j^2 D(alpha_m/alpha_j, k_mj), but E is smooth in r with
/// E(0, k) = 1 - k^2 (1 - 2 ln k), whereas interpolating D ~ r^2 E loses all relative accuracy
/// for |r| below the grid step (a partner with a much larger coefficient). 0 <= E <= 1 - k^2.
///
/// Grid: 257 x 257, uniform in r and in u = sqrt(1 - k) (0.5 MB, built once); u ~
/// sqrt(-ln k) is the natural scale near k = 1 (h ~ 1/sqrt(-2 ln k) as r -> -1), where a grid
/// uniform in k erred most and missed near-duplicate partners (4% of stores, up to 2.6e-4).
/// Measured, 2e6 random (r, k): max |E_table - E| = 3.1e-4 (at the fold k ~ e^-2, r ~ 1, where
/// g turns bimodal), median 3.6e-6. As a ranking, 60000 random binary stores (B = 5..300):
/// the chosen partner was not the exact best in 44 (0.07%), its degradation then higher by at
/// most 2.6e-5 alpha_m^2 (median 7e-8). (513^2: 12 misses, at most 4.3e-6.)
class MergeTable {
 public:
  static constexpr Index kR = 257, kK = 257;

  /// Bins (uniform in k) of the lower bound used to prune the partner search.
  static constexpr Index kLB = 1024;
  /// Steps (uniform in v on [0, 1]) of the tabulated prune_below.
  static constexpr Index kPQ = 4096;

  MergeTable()
      : m_e(static_cast<std::size_t>(kR * kK)),
        m_lb(static_cast<std::size_t>(kLB)),
        m_pq(static_cast<std::size_t>(kPQ + 1)) {
    for (Index i = 0; i < kR; ++i)
      for (Index j = 0; j < kK; ++j) {
        const double r = -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(kR - 1);
        const double u = static_cast<double>(j) / static_cast<double>(kK - 1);
        const double k = 1.0 - u * u;
        const std::size_t at = static_cast<std::size_t>(i * kK + j);
        m_e[at] = exact(r, k);
      }
    // per_unit(r, k) is a convex combination of the grid values of the two u-columns around
    // sqrt(1 - k); so min over those columns (all r) bounds it from below. Bin b covers
    // k in [b, b+1] / kLB; its columns are widened by one on each side against rounding.
    std::vector<double> colmin(static_cast<std::size_t>(kK), std::numeric_limits<double>::infinity());
    for (Index i = 0; i < kR; ++i)
      for (Index j = 0; j < kK; ++j) {
        double& c = colmin[static_cast<std::size_t>(j)];
        c = (std::min)(c, m_e[static_cast<std::size_t>(i * kK + j)]);
      }
    const double scale = static_cast<double>(kK - 1);
    for (Index b = 0; b < kLB; ++b) {
      const double k_lo = static_cast<double>(b) / static_cast<double>(kLB), k_hi = static_cast<double>(b + 1) / static_cast<double>(kLB);
      const Index ja = std::max<Index>(0, static_cast<Index>(std::sqrt(1.0 - k_hi) * scale) - 1);
      const Index jb = std::min<Index>(kK - 1, static_cast<Index>(std::sqrt(1.0 - k_lo) * scale) + 2);
      double lb = std::numeric_limits<double>::infinity();
      for (Index j = ja; j <= jb; ++j) lb = (std::min)(lb, colmin[static_cast<std::size_t>(j)]);
      // Running minimum: still a lower bound, and non-increasing in k, so that "bound above
      // a value" becomes "k below a threshold" (prune_below).
      m_lb[static_cast<std::size_t>(b)] = b == 0 ? lb : (std::min)(lb, m_lb[static_cast<std::size_t>(b - 1)]);
    }
    for (Index q = 0; q <= kPQ; ++q)
      m_pq[static_cast<std::size_t>(q)] = prune_below(static_cast<double>(q) / static_cast<double>(kPQ));
  }

  /// Exact E(r, k) (and h into *h_out), |r| <= 1, 0 <= k <= 1.
  static double exact(double r, double k, double* h_out = nullptr) {
    const double s = merge_s_from_k(k);
    const double h = merge_argmax(r, 1.0, s);
    if (h_out) *h_out = h;
    if (r == 0.0) return k == 0.0 ? 1.0 : 1.0 - k * k * (1.0 + 2.0 * s);
    const MergeTerms t = merge_terms(s, h);
    return (std::max)(0.0, t.u2 / (r * r) + t.u1 + 2.0 * t.c12 / r);
  }

  /// Bilinear interpolation of E(r, k) in (r, sqrt(1 - k)) (arguments clamped to the grid).
  double per_unit(double r, double k) const { return interpolate(m_e, r, k); }

  /// A lower bound of per_unit(r, k) over every r, up to rounding (per_unit(r, k) >=
  /// lower_bound(k) - lb_slack; tested), non-increasing in k. O(1), no sqrt.
  double lower_bound(double k) const {
    const double t = k * static_cast<double>(kLB);
    const Index b = t >= 1.0 ? std::min<Index>(static_cast<Index>(t), kLB - 1) : 0;  // NaN -> 0
    return m_lb[static_cast<std::size_t>(b)];
  }
  /// Rounding slack of lower_bound (the interpolation may land a few ulps below its nodes).
  static constexpr double lb_slack = 1e-14;
  /// The threshold t with: k < t  <=>  lower_bound(k) > v + lb_slack, for 0 <= k <= 1
  /// (+inf when every k qualifies). O(log kLB).
  double prune_below(double v) const {
    const double lim = v + lb_slack;
    const auto it = std::partition_point(m_lb.begin(), m_lb.end(), [lim](double lb) { return lb > lim; });
    if (it == m_lb.end()) return std::numeric_limits<double>::infinity();
    return static_cast<double>(it - m_lb.begin()) / static_cast<double>(kLB);
  }
  /// A threshold t' <= prune_below(v) (so k < t' still implies lower_bound(k) > v + lb_slack):
  /// prune_below at v rounded up to the grid of kPQ steps, by one look-up.
  double prune_below_fast(double v) const {
    if (!(v >= 0.0 && v < 1.0)) return prune_below(v);
    return m_pq[static_cast<std::size_t>(std::ceil(v * static_cast<double>(kPQ)))];
  }

 private:
  static double interpolate(const std::vector<double>& t, double r, double k) {
    // merge_partner lets NaN kernel values through and its callers handle a NaN result; a NaN
    // must not reach the casts to an index below (undefined behaviour; INT64_MIN on x86-64).
    if (std::isnan(r) || std::isnan(k)) return std::numeric_limits<double>::quiet_NaN();
    const double fr = (std::min)((std::max)((r + 1.0) * 0.5, 0.0), 1.0) * static_cast<double>(kR - 1);
    const double fk = std::sqrt((std::min)((std::max)(1.0 - k, 0.0), 1.0)) * static_cast<double>(kK - 1);
    const Index i = std::min<Index>(static_cast<Index>(fr), kR - 2), j = std::min<Index>(static_cast<Index>(fk), kK - 2);
    const double wr = fr - static_cast<double>(i), wk = fk - static_cast<double>(j);
    const double* p = t.data() + i * kK + j;
    return (1.0 - wr) * ((1.0 - wk) * p[0] + wk * p[1]) + wr * ((1.0 - wk) * p[kK] + wk * p[kK + 1]);
  }

  std::vector<double> m_e, m_lb, m_pq;
};

/// The process-wide table, built on first use (thread-safe static initialisation).
inline const MergeTable& merge_table() {
  static const MergeTable table;
  return table;
}

/// sum_j krow[j] (alpha_j . v) = v . f(x) for the kernel row krow of x: O(B c), no temporary.
template <class V>
double merge_score_dot(const SupportVectors& sv, const double* krow, const V& v) {
  const Index B = sv.size(), c = sv.n_coef();
  const double* A = sv.A().data();
  if (c == 1)  // binary: one vectorised dot product
    return v(0) * Eigen::Map<const Vector>(A, B).dot(Eigen::Map<const Vector>(krow, B));
  double sum = 0.0;
  for (Index j = 0; j < B; ++j) {
    const double* aj = A + j * c;
    double dot = aj[0] * v(0);
    for (Index i = 1; i < c; ++i) dot += aj[i] * v(i);
    sum += krow[j] * dot;
  }
  return sum;
}
template <class V>
double merge_score_dot(const SupportVectors& sv, const Vector& krow, const V& v) {
  return merge_score_dot(sv, krow.data(), v);
}

/// m = argmin_j ||alpha_j||^2, near-ties to the oldest SV (detail::argmin_oldest: Pegasos
/// gives untouched SVs equal |alpha|); its squared norm into m_norm. `work` holds the
/// squared norms (grown to size() when smaller).
inline Index merge_smallest(const SupportVectors& sv, double& m_norm, Vector& work) {
  const Index B = sv.size();
  if (work.size() < B) work.resize(B);
  if (sv.n_coef() == 1)
    work.head(B) = Eigen::Map<const Vector>(sv.A().data(), B).array().square();
  else
    work.head(B) = sv.A().topRows(B).rowwise().squaredNorm();
  const Index m = argmin_oldest(work.data(), sv.ids().data(), B);
  m_norm = work(m);
  return m;
}

/// The merge partner n != m of SV m given krow_m[j] = k(x_m, x_j) (see merge_reduce), by
/// evaluating every candidate. Ties go to the lowest index.
inline Index merge_partner_scan(const SupportVectors& sv, Index m, const double* krow_m) {
  const RowMatrix& A = sv.A();
  const Index B = sv.size();
  Index n = -1;
  double best = std::numeric_limits<double>::infinity();
  if (sv.n_coef() == 1) {
    const MergeTable& table = merge_table();
    const double am = A(m, 0);
    for (Index j = 0; j < B; ++j) {
      if (j == m) continue;
      const double e = table.per_unit(am / A(j, 0), krow_m[j]);  // |alpha_j| >= |alpha_m| > 0
      if (n < 0 || e < best) best = e, n = j;
    }
  } else {
    for (Index j = 0; j < B; ++j) {
      if (j == m) continue;
      const double s = merge_s_from_k(krow_m[j]);
      const double deg = merge_degradation_s(A.row(m), A.row(j), s, merge_h_s(A.row(m), A.row(j), s));
      if (n < 0 || deg < best) best = deg, n = j;
    }
  }
  return n;
}

/// Bit i set iff !(v[i] < t) (so NaN sets it), for i < n <= 64: vector compares, no branch.
inline std::uint64_t merge_mask_not_below(const double* v, Index n, double t) {
  std::uint64_t bits = 0;
  Index i = 0;
#if defined(__AVX2__)
  const __m256d tt = _mm256_set1_pd(t);
  for (; i + 4 <= n; i += 4)
    bits |= static_cast<std::uint64_t>(_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(v + i), tt, _CMP_NLT_UQ))) << i;
#elif defined(__SSE2__) || defined(_M_X64)
  const __m128d tt = _mm_set1_pd(t);
  for (; i + 2 <= n; i += 2)
    bits |= static_cast<std::uint64_t>(_mm_movemask_pd(_mm_cmpnlt_pd(_mm_loadu_pd(v + i), tt))) << i;
#endif
  for (; i < n; ++i) bits |= static_cast<std::uint64_t>(!(v[i] < t)) << i;
  return bits;
}

/// Index of the lowest set bit of bits != 0.
inline int merge_lowest_bit(std::uint64_t bits) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(bits);
#elif defined(_MSC_VER) && defined(_M_X64)
  unsigned long i = 0;
  _BitScanForward64(&i, bits);
  return static_cast<int>(i);
#else
  int i = 0;
  for (; !(bits & 1u); bits >>= 1) ++i;
  return i;
#endif
}

/// merge_partner_scan's choice, faster for binary stores: the nearest candidate (largest k)
/// is evaluated first, and every other one whose MergeTable::lower_bound(k) exceeds the best
/// value so far (by more than the bound's rounding slack), i.e. whose k is below
/// prune_below(best), is skipped with one comparison instead of the table look-up (a
/// division, a sqrt and a bilinear interpolation). Pruned candidates cannot be (co-)minimal,
/// and ties among the rest go to the lowest index, so the result is the same.
///
/// Both passes over the row (the seed, then the candidates that pass the seed's bound) take
/// blocks of 64 entries as a bit mask from vector compares and visit its set bits only: few
/// do (m itself, the seed and 0.4 others per merge on a BSGD run, 2-D noisy checkerboard,
/// gamma 8, lambda 1e-2, B = 100), where a scalar search for the seed and a scalar
/// compress of the candidates took ~3/4 of this function's time. Each visited candidate is
/// checked again against the current (tighter) bound: the candidates of a plain loop, in
/// its order.
inline Index merge_partner(const SupportVectors& sv, Index m, const double* krow_m) {
  const Index B = sv.size();
  if (sv.n_coef() != 1) return merge_partner_scan(sv, m, krow_m);
  const double* a = sv.A().data();
  // Seed: the first nearest candidate (largest k), by two vectorised maxima around m.
  double kmax = -std::numeric_limits<double>::infinity();
  if (m > 0) kmax = Eigen::Map<const Vector>(krow_m, m).maxCoeff();
  if (m + 1 < B) kmax = (std::max)(kmax, Eigen::Map<const Vector>(krow_m + m + 1, B - m - 1).maxCoeff());
  constexpr Index kBlock = 64;
  Index seed = -1;
  for (Index j0 = 0; j0 < B && seed < 0; j0 += kBlock)
    for (std::uint64_t bits = merge_mask_not_below(krow_m + j0, (std::min)(kBlock, B - j0), kmax); bits; bits &= bits - 1) {
      const Index j = j0 + merge_lowest_bit(bits);
      if (j != m && krow_m[j] == kmax) {  // none if NaN got in the way: plain scan
        seed = j;
        break;
      }
    }
  const MergeTable& table = merge_table();
  const double am = a[m];
  double best = seed < 0 ? 0.0 : table.per_unit(am / a[seed], krow_m[seed]);
  if (seed < 0 || std::isnan(best)) return merge_partner_scan(sv, m, krow_m);
  Index n = seed;
  double k_min = table.prune_below_fast(best);  // k < k_min: lower_bound(k) > best, cannot win
  for (Index j0 = 0; j0 < B; j0 += kBlock)
    for (std::uint64_t bits = merge_mask_not_below(krow_m + j0, (std::min)(kBlock, B - j0), k_min); bits; bits &= bits - 1) {
      const Index j = j0 + merge_lowest_bit(bits);
      if (krow_m[j] < k_min || j == m || j == seed) continue;  // NaN passes, as in merge_partner_scan
      const double e = table.per_unit(am / a[j], krow_m[j]);
      if (e < best || (e == best && j < n)) {
        if (e < best) k_min = table.prune_below_fast(e);
        best = e, n = j;
      }
    }
  return n;
}

/// The merged pair (m, n) exactly: s from the coordinates (not -ln of a rounded kernel
/// value), h, k(x_m, z), k(x_n, z), the degradation; z (eq. 20) into z[0..d) and alpha_z
/// (eq. 22) into alpha_z[0..c). z is formed from the nearer end so that |z - x_m| =
/// |1-h| |x_m - x_n| to rounding even for |h| >> 1.
struct MergePair {
  double s = 0.0, h = 0.0, k_mz = 0.0, k_nz = 0.0, degradation = 0.0;
};
inline MergePair merge_pair(const SupportVectors& sv, const Kernel& kernel, Index m, Index n, double* z,
                            double* alpha_z) {
  const RowMatrix& A = sv.A();
  const RowMatrix& X = sv.X();
  MergePair p;
  p.s = kernel.gamma() * (X.row(m) - X.row(n)).squaredNorm();
  p.h = merge_h_s(A.row(m), A.row(n), p.s);
  const MergeTerms t = merge_terms(p.s, p.h);
  p.k_mz = t.k_mz;
  p.k_nz = t.k_nz;
  p.degradation = merge_degradation(A.row(m), A.row(n), t);
  const double h = p.h;
  for (Index l = 0; l < sv.dim(); ++l) {
    const double xm = X(m, l), xn = X(n, l);
    z[l] = h >= 0.5 ? xm + (h - 1.0) * (xm - xn) : xn + h * (xm - xn);
  }
  for (Index i = 0; i < sv.n_coef(); ++i) alpha_z[i] = A(m, i) * p.k_mz + A(n, i) * p.k_nz;
  return p;
}

}  // namespace detail

/// Reduces the store by one SV by merging (BSGD paper, section 4.3). Gaussian kernel only.
///
/// m = argmin_j ||alpha_j||^2 (k(x, x) = 1); if alpha_m == 0 it is simply erased. Otherwise
/// its partner n = argmin_{j != m} of the merge degradation of (m, j):
///  - binary (n_coef() == 1): ranked by the precomputed table E(alpha_m/alpha_j, k_mj)
///    (detail::MergeTable, no exp per candidate; a lower bound of E in k skips the look-up
///    for every candidate that cannot win, ~80% of them, see detail::merge_partner), then h
///    is solved exactly for the chosen partner (measured: it is the exact best in 99.9% of
///    random stores, otherwise worse by at most ~3e-5 alpha_m^2, see MergeTable);
///  - multi-class: the exact 1-D solve of eq. (21) for every candidate (the paper's way; a
///    few logs per candidate).
/// z = h x_m + (1-h) x_n (eq. 20) takes the slot of m (of n when m is the last row, which
/// erase would move), with alpha_z from eq. (22) and id max(id_m, id_n); n is erased.
///
/// Returns degradation = ||w_before - w_after||^2 and norm_change = ||w_after||^2 -
/// ||w_before||^2 in raw coefficient units (w = sum_i alpha_i phi(x_i), summed over the c
/// coefficient columns): norm_change = 2 <w_before, Delta> + ||Delta||^2 with
/// Delta = alpha_z phi(z) - alpha_m phi(x_m) - alpha_n phi(x_n), from the three kernel rows
/// of x_m, x_n and z, computed before the store changes. O(B (d + c)) (+ O(B c) logs multi-class).
/// The cache-free reference of Merging, which needs only z's row (BudgetMaintainer uses it
/// for learners without a budget).
///
/// `work` is grown to max(size(), dim() + n_coef()) and `work2` to size() when smaller;
/// no heap allocation otherwise (the binary table is built once, on first use).
/// \throws std::invalid_argument if !kernel.unit_diagonal() or size() < 2.
inline MaintenanceResult merge_reduce(SupportVectors& sv, const Kernel& kernel, Vector& work, Vector& work2) {
  if (!kernel.unit_diagonal()) detail::invalid("merge_reduce: merging needs the Gaussian (rbf) kernel (BSGD eq. 20)");
  const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
  if (!(B >= 2)) detail::invalid("merge_reduce: needs at least two support vectors");
  if (work.size() < (std::max)(B, d + c)) work.resize((std::max)(B, d + c));
  if (work2.size() < B) work2.resize(B);
  const RowMatrix& A = sv.A();
  MaintenanceResult res;

  double m_norm = 0.0;
  const Index m = detail::merge_smallest(sv, m_norm, work);
  if (m_norm == 0.0) {  // contributes nothing to w
    sv.erase(m);
    return res;
  }

  // Kernel row of x_m: partner search and f(x_m) in one pass.
  sv.kernel_row(kernel, sv.x(m).transpose(), sv.sqnorm()(m), work);
  work(m) = 1.0;
  const double f_m = detail::merge_score_dot(sv, work, A.row(m));
  const Index n = detail::merge_partner(sv, m, work.data());

  sv.kernel_row(kernel, sv.x(n).transpose(), sv.sqnorm()(n), work2);
  work2(n) = 1.0;
  const double f_n = detail::merge_score_dot(sv, work2, A.row(n));

  // z and alpha_z go into `work`, which x_m's row no longer needs.
  const detail::MergePair pair = detail::merge_pair(sv, kernel, m, n, work.data(), work.data() + d);
  res.degradation = pair.degradation;
  const auto z = work.head(d);
  const auto alpha_z = work.segment(d, c);
  sv.kernel_row(kernel, z, z.squaredNorm(), work2);
  const double f_z = detail::merge_score_dot(sv, work2, alpha_z);
  res.norm_change = 2.0 * (f_z - f_m - f_n) + res.degradation;

  const Index keep = (m == B - 1) ? n : m, drop = (keep == m) ? n : m;
  const std::int64_t id = (std::max)(sv.id(m), sv.id(n));
  sv.set_x(keep, z);
  sv.alpha(keep) = alpha_z.transpose();
  sv.carry_combine(keep, m, n, pair.k_mz, pair.k_nz);
  sv.set_id(keep, id);
  sv.erase(drop);
  return res;
}

/// merge_reduce with the kernel matrix of the SVs cached (GramCache): the same partner, h,
/// z, alpha_z and degradation, but one kernel row per merge instead of three.
///
///  - the partner search reads k(x_m, .) from the cached row m (no exp);
///  - f(x_m) = K_m . alpha and f(x_n) = K_n . alpha are dot products with cached rows;
///  - the only kernel row computed is z's: z is written into its slot first (so the row's
///    query and |z|^2 are exactly the store's, which keeps rebuild() bitwise, see GramCache),
///    its row over the B SVs gives f(z) (with the analytic k(x_keep, z) = k_mz or k_nz for
///    the slot z overwrote) and becomes row/column `keep` of the cache; then `drop` is
///    erased from the store and the cache alike (swap-with-last in both).
/// Cost per merge: O(B (d + c)) plus B kernel values (+ at most 7 for the canonical tail).
///
/// The pushed SV's row is held back (on_push keeps it aside) until the step that follows:
/// under budget pressure that is a merge, which writes the new SV's row and z's row into
/// the cache in one pass over its columns, where pushing, replacing and erasing walked them
/// three times (at B = 100 the strided column stores were ~15% of a BSGD step). Anything else
/// that needs the cache first (gram(), the next push) writes the held row as GramTracked does.
///
/// Protocol (as Projection): after every push call on_push(sv, krow, kappa) with the row the
/// learner scored the new example with; clear() when the store is cleared; rebuild(sv, kernel)
/// after replacing the store (e.g. loading). Differences from merge_reduce in the kernel
/// values (the canonical cached ones vs. freshly computed rows, <= 1 ulp) can only change the
/// chosen partner on an exact tie.
///
/// Without norm tracking (track_norm(false)) the cache is dropped and a merge reports the
/// degradation only (MaintenanceResult::norm_exact = false): f(x_m), f(x_n) and f(z) exist
/// only for norm_change, and z's kernel row only for them and the cache. What is left is
/// the partner search over k(x_m, .), which is the held row of the pushed SV (m is the newest
/// SV in 99.8% of a BSGD run's merges) or else one fresh kernel row, made canonical as the
/// cached rows are, so partner, h, z and alpha_z are the same in both modes. A learner that
/// projects w onto a ball only needs ||w|| when it may exceed the radius, so it can bound
/// ||w|| and switch the tracking back on (one O(B^2 d) rebuild) when the bound gets close
/// (KernelPegasos). That is the paper's O(B) space and time for merging (section 4.3: "no
/// need to store the kernel matrix"), with one kernel row per example instead of two.
class Merging : public GramTracked {
 public:
  explicit Merging(const Kernel& kernel = Kernel()) : GramTracked(kernel) {}

  /// The kernel matrix of the current SVs (writes a held-back pushed row first).
  /// \throws std::logic_error without norm tracking (there is no cache then).
  const GramCache& gram() const {
    GramTracked::gram();  // throws without tracking
    flush();
    return m_gram;
  }

  /// Forgets every SV (keeps the storage).
  void clear() {
    m_held = false;
    GramTracked::clear();
  }

  /// GramTracked::track_norm (a held-back row is dropped either way: the rebuild covers it).
  void track_norm(bool on, const SupportVectors& sv) {
    if (on != m_track) m_held = false;
    GramTracked::track_norm(on, sv);
  }

  /// As GramTracked::on_push (same checks, same canonical values), but the new SV's row is
  /// held back for the next reduce() (see the class comment). Without norm tracking only the
  /// held row is kept.
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    const Index n = sv.size();
    if (m_track) {
      flush();
      prepare_push(sv);
    }
    if (!(krow.size() >= n - 1)) detail::invalid("Merging::on_push: krow is shorter than the number of previous SVs");
    if (m_new.size() < n) m_new.resize((std::max)(n, sv.capacity()));
    m_new.head(n - 1) = krow.head(n - 1);
    m_gram.canonical_tail(sv, m_kernel, n - 1, sv.x(n - 1).transpose(), sv.sqnorm()(n - 1), m_new);
    m_new(n - 1) = kappa;
    m_held = true;
  }

  /// GramTracked::rebuild, and sizes the held row for the store's capacity.
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    m_held = false;
    GramTracked::rebuild(sv, kernel);
    if (m_new.size() < sv.capacity()) m_new.resize(sv.capacity());
  }

  /// Removes one SV by merging (see merge_reduce for the rule and the reported numbers;
  /// without norm tracking norm_change is NaN and norm_exact false).
  /// Allocation-free once the work vectors reached the store's size.
  /// \throws std::invalid_argument if !kernel.unit_diagonal(), kernel is not the cache's
  ///         kernel or size() < 2; std::logic_error when the cache is out of sync.
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel) {
    if (!kernel.unit_diagonal())
      detail::invalid("Merging::reduce: merging needs the Gaussian (rbf) kernel (BSGD eq. 20)");
    if (!detail::same_kernel(kernel, m_kernel))
      detail::invalid("Merging::reduce: kernel differs from the cached one");
    const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
    if (!(B >= 2)) detail::invalid("Merging::reduce: needs at least two support vectors");
    if (m_track && B != m_gram.size() + (m_held ? 1 : 0))
      detail::cache_out_of_sync("Merging::reduce", B, m_gram.size());
    if (!m_track && m_held && !(m_new.size() >= B)) detail::cache_out_of_sync("Merging::reduce", B, m_new.size());
    if (m_row.size() < B) m_row.resize((std::max)(B, sv.capacity()));
    if (m_zw.size() < d + c) m_zw.resize(d + c);
    const RowMatrix& A = sv.A();
    MaintenanceResult res;

    double m_norm = 0.0;
    const Index m = detail::merge_smallest(sv, m_norm, m_row);
    if (m_norm == 0.0) {  // contributes nothing to w
      if (m_held && m == B - 1) {
        m_held = false;  // the held row dies with its SV
      } else if (m_track) {
        flush();
        m_gram.erase(m);
      } else {
        m_held = false;  // the held SV moves into slot m: simply forget its row
      }
      sv.erase(m);
      return res;
    }

    const double* km = m_track ? row(m, B) : untracked_row(sv, kernel, m, B);  // k(x_m, x_m) = 1
    const Index n = detail::merge_partner(sv, m, km);
    const detail::MergePair pair = detail::merge_pair(sv, kernel, m, n, m_zw.data(), m_zw.data() + d);
    res.degradation = pair.degradation;
    const auto alpha_z = m_zw.segment(d, c);
    const Index keep = (m == B - 1) ? n : m, drop = (keep == m) ? n : m;
    const std::int64_t id = (std::max)(sv.id(m), sv.id(n));
    // f(x_m) and f(x_n) from the cached rows (tracking only).
    const double f_m = m_track ? detail::merge_score_dot(sv, km, A.row(m)) : 0.0;
    const double f_n = m_track ? detail::merge_score_dot(sv, row(n, B), A.row(n)) : 0.0;

    // z into its slot; with tracking, then its row over the B SVs (the slot's own entry is
    // k(z, z) now; f(z) needs k(x_keep, z) of the point it replaced, known in closed form).
    sv.set_x(keep, m_zw.head(d));
    if (m_track) {
      const auto z = sv.x(keep).transpose();
      const double z_sq = sv.sqnorm()(keep);
      sv.kernel_row(kernel, z, z_sq, m_row);
      m_gram.canonical_tail(sv, kernel, B, z, z_sq, m_row);
      m_row(keep) = keep == m ? pair.k_mz : pair.k_nz;
      const double f_z = detail::merge_score_dot(sv, m_row, alpha_z);  // coefficients still the old ones
      m_row(keep) = kernel.self(z_sq);
      res.norm_change = 2.0 * (f_z - f_m - f_n) + res.degradation;
    } else {
      res.norm_change = std::numeric_limits<double>::quiet_NaN();
      res.norm_exact = false;
    }

    sv.alpha(keep) = alpha_z.transpose();
    sv.carry_combine(keep, m, n, pair.k_mz, pair.k_nz);
    sv.set_id(keep, id);
    const Index last = B - 1;
    if (m_track) {  // without tracking there is no cache to update
      if (m_held && drop != last) {
        // The held SV (last) moves into drop's slot, as in the store: z's row and its row go
        // in together, each with the other's slot renamed.
        m_row(drop) = m_row(last);  // k(z, x_new)
        m_new(keep) = m_row(last);
        m_new(drop) = m_new(last);  // k(x_new, x_new)
        m_gram.replace_two(keep, m_row.data(), drop, m_new.data());
      } else {
        m_gram.replace(keep, m_row, m_row(keep));
        if (!m_held) m_gram.erase(drop);  // (held and drop == last: the held SV merged away)
      }
    }
    m_held = false;
    sv.erase(drop);
    return res;
  }

 private:
  /// Without norm tracking: row m over all B SVs, the held row when m is the held SV, else
  /// computed (canonical, as the cache's rows are).
  const double* untracked_row(const SupportVectors& sv, const Kernel& kernel, Index m, Index B) {
    if (m_held && m == B - 1) return m_new.data();
    const auto xm = sv.x(m).transpose();
    const double sq = sv.sqnorm()(m);
    sv.kernel_row(kernel, xm, sq, m_row);
    m_gram.canonical_tail(sv, kernel, B, xm, sq, m_row);
    m_row(m) = kernel.self(sq);
    return m_row.data();
  }

  /// Row i of the kernel matrix over all B SVs: the held row itself for the held SV (last),
  /// else the cached row with the held column's entry put in its scratch slot.
  const double* row(Index i, Index B) {
    if (!m_held) return m_gram.row_data(i);
    if (i == B - 1) return m_new.data();
    double* r = m_gram.row_data(i);
    r[B - 1] = m_new(i);
    return r;
  }

  /// Writes a held-back row into the cache (GramTracked::on_push's writes).
  void flush() const {
    if (!m_held) return;
    m_held = false;
    const Index n = m_gram.size();
    m_gram.on_push(m_new, m_new(n));
  }

  Vector m_row, m_zw;  // z's kernel row; z and alpha_z
  mutable Vector m_new;  // the held-back row of the last pushed SV (its k(x_new, x_new) last)
  mutable bool m_held = false;
};

}  // namespace budgetkernel
