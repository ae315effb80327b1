#pragma once
// Learner parameters across the binding, by name. Each C++ Params struct is a Python class of
// the same name whose attributes are its fields (the same names), built from keyword
// arguments; a learner is built from one (`KernelPegasos(n_features, n_classes, params)`) or
// straight from the keywords (`KernelPegasos(n_features, n_classes, lam=1e-3, budget=50)`).
// Enum fields cross as their names (the tables of detail/enum_names.hpp), and the kernel as
// four flat fields kernel (name), gamma, degree, coef0. Nothing is range-checked here: the
// learner's constructor calls Params::validate(), whose std::invalid_argument naming the
// parameter pybind11 turns into ValueError. Defaults are the structs' own.
#include "bindings.hpp"

#include <budgetkernel/detail/enum_names.hpp>
#include <budgetkernel/kernel.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

/// The Python class of a Params struct P; fields are added with field / enum_field / kernel.
template <class P>
class ParamsClass {
 public:
  /// Every Params struct holds a Kernel `kernel`: its four fields come first.
  ParamsClass(py::module_& m, const char* name, const char* doc)
      : m_cls(m, name, py::module_local(), doc), m_fields(std::make_shared<std::vector<std::string>>()) {
    m_cls.attr("choices") = py::dict();  // field -> its valid names, for messages and the CLI
    kernel();
    auto fields = m_fields;
    std::string cls_name = name;
    m_cls.def(py::init([fields, cls_name](const py::kwargs& kw) { return from_kwargs(*fields, cls_name, kw); }),
              "Keyword arguments named as the fields; the others keep their defaults.")
        .def("validate", &P::validate, "Raises ValueError naming the first invalid parameter.")
        .def("__repr__", [fields, cls_name](const py::object& self) {
          std::string s = cls_name + "(";
          for (std::size_t i = 0; i < fields->size(); ++i)
            s += (i ? ", " : "") + (*fields)[i] + "=" + std::string(py::repr(self.attr((*fields)[i].c_str())));
          return s + ")";
        });
  }

  template <class T>
  ParamsClass& field(const char* name, T P::*member, const char* doc = "") {
    m_cls.def_readwrite(name, member, doc);
    m_fields->push_back(name);
    return *this;
  }

  /// An enum field, as the name the table gives its value.
  template <class E, std::size_t N>
  ParamsClass& enum_field(const char* name, E P::*member, const bk::detail::EnumName<E> (&table)[N]) {
    const auto* names = &table;
    m_cls.def_property(
        name, [member, names](const P& p) { return std::string(bk::detail::enum_name(*names, p.*member)); },
        [member, names, name](P& p, const std::string& s) { p.*member = bk::detail::enum_from_name(*names, s, name); },
        ("one of " + bk::detail::enum_choices(table)).c_str());
    add_choices(name, table);
    m_fields->push_back(name);
    return *this;
  }

 private:
  /// The Kernel field `kernel` as kernel (name), gamma, degree, coef0. Setting one builds the
  /// kernel anew from the four (the Kernel constructor checks them together).
  void kernel() {
    m_cls.def_property("kernel", [](const P& p) { return kernel_str(p); },
                       [](P& p, const std::string& s) {
                         set_kernel(p, s, p.kernel.gamma(), p.kernel.degree(), p.kernel.coef0());
                       },
                       ("one of " + bk::detail::enum_choices(bk::kernel_names) + " (see kernel.hpp)").c_str())
        .def_property("gamma", [](const P& p) { return p.kernel.gamma(); },
                      [](P& p, double g) { set_kernel(p, kernel_str(p), g, p.kernel.degree(), p.kernel.coef0()); })
        .def_property("degree", [](const P& p) { return p.kernel.degree(); },
                      [](P& p, int d) { set_kernel(p, kernel_str(p), p.kernel.gamma(), d, p.kernel.coef0()); })
        .def_property("coef0", [](const P& p) { return p.kernel.coef0(); },
                      [](P& p, double c) { set_kernel(p, kernel_str(p), p.kernel.gamma(), p.kernel.degree(), c); });
    add_choices("kernel", bk::kernel_names);
    m_fields->insert(m_fields->end(), {"kernel", "gamma", "degree", "coef0"});
  }

  template <class E, std::size_t N>
  void add_choices(const char* name, const bk::detail::EnumName<E> (&table)[N]) {
    py::tuple names(N);
    for (std::size_t i = 0; i < N; ++i) names[i] = py::str(table[i].name);
    m_cls.attr("choices")[name] = names;
  }

  static std::string kernel_str(const P& p) { return bk::kernel_name(p.kernel.type()); }
  static void set_kernel(P& p, const std::string& type, double gamma, int degree, double coef0) {
    p.kernel = bk::Kernel(bk::detail::enum_from_name(bk::kernel_names, type, "kernel"), gamma, degree, coef0);
  }

  /// P from keyword arguments: the kernel's four first and at once, then each field through
  /// its attribute (so enums take their names). An unknown name is a TypeError.
  static P from_kwargs(const std::vector<std::string>& fields, const std::string& cls_name, const py::kwargs& kw) {
    P p;
    py::object self = py::cast(&p, py::return_value_policy::reference);
    const char* kernel_keys[] = {"kernel", "gamma", "degree", "coef0"};
    if (std::any_of(std::begin(kernel_keys), std::end(kernel_keys), [&](const char* k) { return kw.contains(k); }))
      set_kernel(p, kw.contains("kernel") ? kw["kernel"].cast<std::string>() : kernel_str(p),
                 kw.contains("gamma") ? kw["gamma"].cast<double>() : p.kernel.gamma(),
                 kw.contains("degree") ? kw["degree"].cast<int>() : p.kernel.degree(),
                 kw.contains("coef0") ? kw["coef0"].cast<double>() : p.kernel.coef0());
    for (auto item : kw) {
      const std::string key = py::str(item.first);
      if (std::find(std::begin(kernel_keys), std::end(kernel_keys), key) != std::end(kernel_keys)) continue;
      if (std::find(fields.begin(), fields.end(), key) == fields.end())
        throw py::type_error(cls_name + "() got an unexpected keyword argument '" + key + "'");
      py::setattr(self, item.first, item.second);
    }
    return p;
  }

  py::class_<P> m_cls;
  std::shared_ptr<std::vector<std::string>> m_fields;
};

/// The constructors of learner L with Params P: from a P, or from P's fields as keywords.
template <class L, class P, class Cls, class Make>
void def_init_from_params(Cls& cls, Make make) {
  cls.def(py::init([make](bk::Index n_features, bk::Index n_classes, const P& params) {
            return make(n_features, n_classes, params);
          }),
          py::arg("n_features"), py::arg("n_classes"), py::arg("params"))
      .def(py::init([make](bk::Index n_features, bk::Index n_classes, const py::kwargs& kw) {
             return make(n_features, n_classes, py::type::of<P>()(**kw).template cast<P>());
           }),
           py::arg("n_features"), py::arg("n_classes"),
           "The parameters as keywords named as the fields of the Params class (the others keep their defaults).");
  cls.def_property_readonly("params", [](const L& s) {
    UseGuard use(&s, false);
    return s.params();
  }, "The construction parameters (a copy), as the Params class.");
}

/// def_init_from_params for a learner built by its (n_features, n_classes, params) constructor.
template <class L, class P, class Cls>
void def_init_from_params(Cls& cls) {
  def_init_from_params<L, P>(cls, [](bk::Index d, bk::Index c, const P& p) { return L(d, c, p); });
}
