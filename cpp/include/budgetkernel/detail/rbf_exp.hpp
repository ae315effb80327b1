#pragma once
/// \file detail/rbf_exp.hpp
/// The RBF kernel row's element-wise map out[j] = exp(-gamma max(0, |s_j|^2 + |x|^2 - 2 out[j]))
/// with our own exp: SIMD on x86-64, one value at a time elsewhere. On every path a value
/// depends on its two points only, not on its position in the row.
///
/// Why: the exp of this map is the hottest instruction sequence of the library (every learner
/// computes one kernel row per example; merging computes a second one per merge). Eigen's
/// vectorised exp evaluates a rational (Pade) form with a division and, without AVX2, is
/// slower than glibc's scalar exp.
/// Here the argument is never positive, so the overflow handling drops out. The method is the
/// classic table-driven one: x = (64 n + j) ln2/64 + r with |r| <= ln2/128 (n and j by the
/// 1.5 * 2^52 rounding trick), exp(x) = 2^n * 2^(j/64) * (1 + q(r)), q the Taylor polynomial of
/// e^r - 1 to degree 6 (truncation error < 3e-20 on that interval), 2^(j/64) from a 64-entry
/// table stored as a double plus its rounding error (so the product is good to ~0.5 ulp before
/// the final rounding) and 2^n assembled from n's bits. The table is read by scalar loads,
/// which beat AVX2's gather. Accuracy against std::exp (test_kernel asserts it for both
/// builds, over 3 * 10^6 random arguments in [-746, 0]): within 1 ulp, subnormal results
/// within 1 of their spacing 2^-1074. Timings: docs/derivations.md, "Measurements behind
/// design choices".
///
/// Every element goes through the same SIMD lanes (the tail is padded into one more packet),
/// so a value depends on its two points only, not on its position in the row: the position
/// effects that GramCache::canonical_tail repairs for a vector bulk with a scalar tail do not
/// exist on this path (GramCache::canonical_block is 1 for RBF here, except where gemv
/// computes the dot products, 4 < d < detail::kDotBlockMinDim).
///
/// Other architectures (aarch64: Apple silicon, Linux ARM servers) run the SSE2 sequence one
/// value at a time (rbf_exp1), operation for operation, so with -ffp-contract=off (the Python
/// module's flags) they give the x86-64 baseline build's values bit for bit. (Eigen's exp on
/// aarch64 NEON is up to 2 ulp off in the normal range, returns 5.6e-309 instead of 0 for
/// every argument below about -709.8, so two far apart points would have a nonzero kernel
/// value, and depends on the position in the row.)
///
/// Arguments: x <= -746 (including -inf, from an overflowing distance) give 0; NaN propagates.

#include "../common.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

// MSVC defines __AVX2__ under /arch:AVX2 (which also enables FMA) but never __FMA__.
#if defined(__AVX2__) && (defined(__FMA__) || defined(_MSC_VER))
#include <immintrin.h>
#define BUDGETKERNEL_RBF_EXP_AVX2 1
#elif defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define BUDGETKERNEL_RBF_EXP_SSE2 1
#endif

namespace budgetkernel {
namespace detail {

namespace rbf_exp {
inline constexpr double kLog2eN = 64.0 * 1.4426950408889634;  // 64 / ln 2
// ln2 / 64 split so that m * kLn2HiN is exact for |m| < 2^21 (fdlibm's split of ln 2, / 64).
inline constexpr double kLn2HiN = 6.93147180369123816490e-01 / 64.0;
inline constexpr double kLn2LoN = 1.90821492927058770002e-10 / 64.0;
inline constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: x + kShift rounds x to an integer
inline constexpr double kLowest = -746.0;             // exp(-746) < 2^-1075 rounds to 0
// 2^n is built as 2^(n + kBias) * 2^-kBias so that n down to -1076 stays a normal number
// before the last product (which rounds into the subnormals exactly as a product does).
inline constexpr int kBias = 54;
inline constexpr double kUnbias = 0x1p-54;
// e^r - 1 = r (1 + r (1/2 + r (1/6 + ...))): 1/k!, k = 6 .. 2 (Horner order), then 1.
inline constexpr double kQ[6] = {1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0};
// 2^(j/64) = kT[j] + kTlo[j], j = 0..63 (60-digit values rounded to double, and the rest).
alignas(64) inline constexpr double kT[64] = {
    0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0,
    0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0,
    0x1.172b83c7d517bp+0, 0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0,
    0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0,
    0x1.3dea64c123422p+0, 0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0,
    0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0,
    0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0,
    0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0,
    0x1.9c49182a3f090p+0, 0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0,
    0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0,
    0x1.d5818dcfba487p+0, 0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0, 0x1.fa7c1819e90d8p+0,
};
alignas(64) inline constexpr double kTlo[64] = {
    0x0p+0, -0x1.19083535b085dp-56, 0x1.d73e2a475b465p-55, 0x1.186be4bb284ffp-57,
    0x1.8a62e4adc610bp-54, 0x1.03a1727c57b53p-59, -0x1.6c51039449b3ap-54, -0x1.32fbf9af1369ep-54,
    -0x1.19041b9d78a76p-55, 0x1.e5b4c7b4968e4p-55, 0x1.e016e00a2643cp-54, 0x1.dc775814a8495p-55,
    0x1.9b07eb6c70573p-54, 0x1.2bd339940e9d9p-55, 0x1.612e8afad1255p-55, 0x1.0024754db41d5p-54,
    0x1.6f46ad23182e4p-55, 0x1.32721843659a6p-54, -0x1.63aeabf42eae2p-54, -0x1.5e436d661f5e3p-56,
    0x1.ada0911f09ebcp-55, -0x1.ef3691c309278p-58, 0x1.89b7a04ef80d0p-59, 0x1.3c1a3b69062f0p-56,
    0x1.d4397afec42e2p-56, -0x1.4b309d25957e3p-54, -0x1.07abe1db13cadp-55, 0x1.9bb2c011d93adp-54,
    0x1.6324c054647adp-54, 0x1.ba6f93080e65ep-54, -0x1.383c17e40b497p-54, -0x1.bb60987591c34p-54,
    -0x1.bdd3413b26456p-54, -0x1.bbe3a683c88abp-57, -0x1.16e4786887a99p-55, -0x1.0245957316dd3p-54,
    -0x1.41577ee04992fp-55, 0x1.05d02ba15797ep-56, -0x1.d4c1dd41532d8p-54, -0x1.fc6f89bd4f6bap-54,
    0x1.6e9f156864b27p-54, 0x1.5cc13a2e3976cp-55, -0x1.75fc781b57ebcp-57, -0x1.d185b7c1b85d1p-54,
    0x1.c7c46b071f2bep-56, -0x1.359495d1cd533p-54, -0x1.d2f6edb8d41e1p-54, 0x1.0fac90ef7fd31p-54,
    0x1.7a1cd345dcc81p-54, -0x1.2805e3084d708p-57, -0x1.5584f7e54ac3bp-56, 0x1.23dd07a2d9e84p-55,
    0x1.11065895048ddp-55, 0x1.2884dff483cadp-54, 0x1.503cbd1e949dbp-56, -0x1.cbc3743797a9cp-54,
    0x1.2ed02d75b3707p-55, 0x1.c2300696db532p-54, -0x1.1a5cd4f184b5cp-54, 0x1.39e8980a9cc8fp-55,
    -0x1.e9c23179c2893p-54, 0x1.dc7f486a4b6b0p-54, 0x1.9d3e12dd8a18bp-54, 0x1.74853f3a5931ep-55,
};

/// The scalar form of the method, for x in [kScalarLo, kScalarHi] (2^n normal, no overflow):
/// exp(x) = hi + lo with hi = 2^n kT[j] (exact) and lo = 2^n (kT[j] q(r) + kTlo[j]).
struct Split {
  double hi, lo;
};
inline constexpr double kScalarLo = -708.0, kScalarHi = 709.0;
inline Split split(double x) {
  const double kd0 = x * kLog2eN + kShift;
  std::uint64_t ki;
  std::memcpy(&ki, &kd0, sizeof ki);  // low bits: 0x8000000000000 + 64 n + j
  const double kd = kd0 - kShift;
  const double r = (x - kd * kLn2HiN) - kd * kLn2LoN;  // the first product is exact
  // q = r + r^2 (1/2 + r/6) + r^4 (1/24 + r/120 + r^2/720): Estrin's scheme, the same
  // polynomial as kQ with half of Horner's dependent steps (this exp is latency-bound).
  const double r2 = r * r;
  const double q = r + r2 * ((kQ[4] + r * kQ[3]) + r2 * ((kQ[2] + r * kQ[1]) + r2 * kQ[0]));
  const std::uint64_t j = ki & 63;
  const std::uint64_t bits = (((ki - j) >> 6) + 1023) << 52;  // the rounding constant's bits shift out
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  // Scaled before q is known (exact: powers of two), so that q is followed by one product-sum.
  const double hi = scale * kT[j];
  return {hi, hi * q + scale * kTlo[j]};
}
}  // namespace rbf_exp

/// Scalar exp by the method above (within 1 ulp of std::exp; test_merging): for the few scalar
/// exps of a merge (budget/merge_solver.hpp). Inline, so that independent ones overlap in the
/// pipeline (cheaper than glibc's exp and expm1 calls there).
/// Outside [-708, 709] (subnormal or overflowing results, +-inf, NaN): std::exp.
inline double fast_exp(double x) {
  if (!(x >= rbf_exp::kScalarLo && x <= rbf_exp::kScalarHi)) return std::exp(x);
  const rbf_exp::Split p = rbf_exp::split(x);
  return p.hi + p.lo;
}

/// Scalar expm1 by the same split, free of cancellation: e^x - 1 = (hi - 1) + lo, where
/// hi - 1 = 2^n kT[j] - 1 is exact for |x| < ln 2 (n = -1, 0: Sterbenz) and 0 for
/// |x| < ln2/128 (then the result is lo = q(x) itself). Within 2 ulp of std::expm1 (the 2 where
/// the two terms have opposite signs, n = -1; test_merging).
/// Outside [-708, 709]: std::expm1.
inline double fast_expm1(double x) {
  if (!(x >= rbf_exp::kScalarLo && x <= rbf_exp::kScalarHi)) return std::expm1(x);
  const rbf_exp::Split p = rbf_exp::split(x);
  return (p.hi - 1.0) + p.lo;
}

/// fast_exp(x) and fast_expm1(x) from one split (slow path: std::exp and std::expm1).
inline void fast_exp_expm1(double x, double& e, double& em1) {
  if (!(x >= rbf_exp::kScalarLo && x <= rbf_exp::kScalarHi)) {
    e = std::exp(x);
    em1 = std::expm1(x);
    return;
  }
  const rbf_exp::Split p = rbf_exp::split(x);
  e = p.hi + p.lo;
  em1 = (p.hi - 1.0) + p.lo;
}

/// exp of one argument <= 0: rbf_exp2's operations in their order (max with NaN passed
/// through, mul and add rounded separately, Horner), for the builds without SSE2 (see the file
/// comment). Defined in every build, so that the x86-64 tests compare it with the SIMD paths.
inline double rbf_exp1(double x) {
  using namespace rbf_exp;
  x = kLowest > x ? kLowest : x;  // _mm_max_pd(kLowest, x): NaN in x is returned
  double kd = x * kLog2eN;
  kd = kd + kShift;
  std::uint64_t ki;
  std::memcpy(&ki, &kd, sizeof ki);  // low bits: 0x8000000000000 + 64 n + j
  kd = kd - kShift;
  const double hi = kd * kLn2HiN;  // exact
  double r = x - hi;
  const double lo = kd * kLn2LoN;
  r = r - lo;
  double q = kQ[0];
  for (int k = 1; k < 6; ++k) {
    q = q * r;
    q = q + kQ[k];
  }
  q = q * r;
  const std::uint64_t j = ki & 63;
  const double t = kT[j], tq_lo = t * q;
  const double tq = t + (tq_lo + kTlo[j]);
  const std::uint64_t n = (ki - j) >> 6;
  const std::uint64_t e = (n + static_cast<std::uint64_t>(1023 + kBias)) << 52;
  double scale;
  std::memcpy(&scale, &e, sizeof scale);
  const double v = tq * scale;
  return v * kUnbias;
}

/// rbf_value2 for one entry.
inline double rbf_value1(double dot, double sq, double x_sq, double neg_gamma) {
  const double d2 = (sq + x_sq) - (dot + dot);
  const double m = 0.0 > d2 ? 0.0 : d2;  // _mm_max_pd(0, d2): NaN passed through
  return rbf_exp1(neg_gamma * m);
}

#if defined(BUDGETKERNEL_RBF_EXP_AVX2)
/// exp of four arguments <= 0 (see the file comment).
inline __m256d rbf_exp4(__m256d x) {
  using namespace rbf_exp;
  x = _mm256_max_pd(_mm256_set1_pd(kLowest), x);  // NaN in x is returned (second operand)
  const __m256d shift = _mm256_set1_pd(kShift);
  __m256d kd = _mm256_fmadd_pd(x, _mm256_set1_pd(kLog2eN), shift);
  const __m256i ki = _mm256_castpd_si256(kd);  // low bits: 0x8000000000000 + 64 n + j
  kd = _mm256_sub_pd(kd, shift);
  __m256d r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(kLn2HiN), x);
  r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(kLn2LoN), r);
  __m256d q = _mm256_set1_pd(kQ[0]);
  for (int k = 1; k < 6; ++k) q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(kQ[k]));
  q = _mm256_mul_pd(q, r);
  const __m256i j = _mm256_and_si256(ki, _mm256_set1_epi64x(63));
  alignas(32) std::int64_t jj[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(jj), j);
  const __m256d t = _mm256_set_pd(kT[jj[3]], kT[jj[2]], kT[jj[1]], kT[jj[0]]);
  const __m256d tlo = _mm256_set_pd(kTlo[jj[3]], kTlo[jj[2]], kTlo[jj[1]], kTlo[jj[0]]);
  const __m256d tq = _mm256_add_pd(t, _mm256_fmadd_pd(t, q, tlo));  // 2^(j/64) e^r
  // Biased exponent n + kBias + 1023 in the top 12 bits (the rounding constant's bits shift out).
  const __m256i n = _mm256_srli_epi64(_mm256_sub_epi64(ki, j), 6);
  const __m256i e = _mm256_slli_epi64(_mm256_add_epi64(n, _mm256_set1_epi64x(1023 + kBias)), 52);
  return _mm256_mul_pd(_mm256_mul_pd(tq, _mm256_castsi256_pd(e)), _mm256_set1_pd(kUnbias));
}

/// -gamma max(0, sq + x_sq - 2 dot), then exp, for four entries.
inline __m256d rbf_value4(__m256d dot, __m256d sq, __m256d x_sq, __m256d neg_gamma) {
  const __m256d d2 = _mm256_sub_pd(_mm256_add_pd(sq, x_sq), _mm256_add_pd(dot, dot));
  return rbf_exp4(_mm256_mul_pd(neg_gamma, _mm256_max_pd(_mm256_setzero_pd(), d2)));
}
#elif defined(BUDGETKERNEL_RBF_EXP_SSE2)
/// exp of two arguments <= 0 (see the file comment); SSE2 has no FMA: r by the exact split.
inline __m128d rbf_exp2(__m128d x) {
  using namespace rbf_exp;
  x = _mm_max_pd(_mm_set1_pd(kLowest), x);
  const __m128d shift = _mm_set1_pd(kShift);
  __m128d kd = _mm_add_pd(_mm_mul_pd(x, _mm_set1_pd(kLog2eN)), shift);
  const __m128i ki = _mm_castpd_si128(kd);
  kd = _mm_sub_pd(kd, shift);
  __m128d r = _mm_sub_pd(x, _mm_mul_pd(kd, _mm_set1_pd(kLn2HiN)));  // the product is exact
  r = _mm_sub_pd(r, _mm_mul_pd(kd, _mm_set1_pd(kLn2LoN)));
  __m128d q = _mm_set1_pd(kQ[0]);
  for (int k = 1; k < 6; ++k) q = _mm_add_pd(_mm_mul_pd(q, r), _mm_set1_pd(kQ[k]));
  q = _mm_mul_pd(q, r);
  const __m128i j = _mm_and_si128(ki, _mm_set1_epi64x(63));
  alignas(16) std::int64_t jj[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(jj), j);
  const __m128d t = _mm_set_pd(kT[jj[1]], kT[jj[0]]), tlo = _mm_set_pd(kTlo[jj[1]], kTlo[jj[0]]);
  const __m128d tq = _mm_add_pd(t, _mm_add_pd(_mm_mul_pd(t, q), tlo));
  const __m128i n = _mm_srli_epi64(_mm_sub_epi64(ki, j), 6);
  const __m128i e = _mm_slli_epi64(_mm_add_epi64(n, _mm_set1_epi64x(1023 + kBias)), 52);
  return _mm_mul_pd(_mm_mul_pd(tq, _mm_castsi128_pd(e)), _mm_set1_pd(kUnbias));
}

inline __m128d rbf_value2(__m128d dot, __m128d sq, __m128d x_sq, __m128d neg_gamma) {
  const __m128d d2 = _mm_sub_pd(_mm_add_pd(sq, x_sq), _mm_add_pd(dot, dot));
  return rbf_exp2(_mm_mul_pd(neg_gamma, _mm_max_pd(_mm_setzero_pd(), d2)));
}
#endif

/// out[j] = exp(-gamma max(0, sq[j] + x_sq - 2 out[j])) for j < n (out holds the dot products).
inline void rbf_finish(const double* sq, Index n, double x_sq, double gamma, double* out) {
#if defined(BUDGETKERNEL_RBF_EXP_AVX2)
  constexpr Index W = 4;
  const __m256d xs = _mm256_set1_pd(x_sq), ng = _mm256_set1_pd(-gamma);
  Index j = 0;
  for (; j + W <= n; j += W)
    _mm256_storeu_pd(out + j, rbf_value4(_mm256_loadu_pd(out + j), _mm256_loadu_pd(sq + j), xs, ng));
  if (j < n) {  // the tail through the same lanes (padding: zeros, results discarded)
    alignas(32) double d[W] = {0.0, 0.0, 0.0, 0.0}, s[W] = {0.0, 0.0, 0.0, 0.0};
    for (Index t = j; t < n; ++t) d[t - j] = out[t], s[t - j] = sq[t];
    _mm256_store_pd(d, rbf_value4(_mm256_load_pd(d), _mm256_load_pd(s), xs, ng));
    for (Index t = j; t < n; ++t) out[t] = d[t - j];
  }
#elif defined(BUDGETKERNEL_RBF_EXP_SSE2)
  constexpr Index W = 2;
  const __m128d xs = _mm_set1_pd(x_sq), ng = _mm_set1_pd(-gamma);
  Index j = 0;
  for (; j + W <= n; j += W)
    _mm_storeu_pd(out + j, rbf_value2(_mm_loadu_pd(out + j), _mm_loadu_pd(sq + j), xs, ng));
  if (j < n) {
    alignas(16) double d[W] = {out[j], 0.0}, s[W] = {sq[j], 0.0};
    _mm_store_pd(d, rbf_value2(_mm_load_pd(d), _mm_load_pd(s), xs, ng));
    out[j] = d[0];
  }
#else
  for (Index j = 0; j < n; ++j) out[j] = rbf_value1(out[j], sq[j], x_sq, -gamma);
#endif
}

}  // namespace detail
}  // namespace budgetkernel
