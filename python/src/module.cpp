// The private extension module budgetkernel._core (and its AVX2 twin _core_avx2, built
// from the same sources): it only registers the wrap_* pieces.
#include "bindings.hpp"

#include <budgetkernel/io.hpp>       // Model, FieldMap
#include <budgetkernel/version.hpp>  // version_string

#ifndef BUDGETKERNEL_MODULE_NAME
#define BUDGETKERNEL_MODULE_NAME _core
#endif

#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_AMD64))
#include <intrin.h>
#endif

void wrap_libsvm(py::module_& m);  // wrap_libsvm.cpp: the LIBSVM reader
void wrap_pa_regression(py::module_& m);  // wrap_pa_regression.cpp: PARegressor

namespace {

/// Whether this CPU (and OS) can run the AVX2+FMA module.
bool cpu_has_avx2_fma() {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_AMD64))
  int r[4];
  __cpuid(r, 0);
  if (r[0] < 7) return false;
  __cpuid(r, 1);
  const bool fma = (r[2] >> 12) & 1, osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1;
  if (!(fma && osxsave && avx) || (_xgetbv(0) & 6) != 6) return false;
  __cpuidex(r, 7, 0);
  return (r[1] >> 5) & 1;
#else
  return false;
#endif
}

}  // namespace

PYBIND11_MODULE(BUDGETKERNEL_MODULE_NAME, m) {
  m.doc() = "budgetkernel's C++ core (private; use the budgetkernel package)";
  m.attr("__version__") = bk::version_string;
  m.def("cpu_has_avx2_fma", &cpu_has_avx2_fma, "Whether this CPU can run the AVX2+FMA build of the core.");
#if defined(__AVX2__)
  m.attr("simd") = "avx2+fma";
#else
  m.attr("simd") = "baseline";
#endif
  // pybind11 already turns the core's std::invalid_argument into ValueError and
  // std::runtime_error (bad state, corrupt file) into RuntimeError.
  m.def(
      "load_model_info",
      [](const py::bytes& data) {
        bk::Model model(bk::FieldMap::from_bytes(std::string(data)));
        py::dict d;
        d["learner"] = model.learner();
        d["n_features"] = model.n_features();
        d["n_outputs"] = model.n_outputs();
        d["n_support"] = model.n_support();
        d["metadata"] = py::bytes(model.fields().get_bytes("meta"));
        return d;
      },
      py::arg("data"), "Reads the header of a model file (any learner) without building the learner.");
  wrap_pegasos(m);
  wrap_passive_aggressive(m);
  wrap_perceptron(m);
  wrap_svm(m);
  wrap_sparse(m);
  wrap_regression(m);
  wrap_pa_regression(m);
  wrap_many(m);
  wrap_libsvm(m);
}
