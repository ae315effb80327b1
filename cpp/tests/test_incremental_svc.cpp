// IncrementalSVC (learners/incremental_svc.hpp), the one-vs-rest learner over exact machines:
// equal to independent machines and to retraining, save -> load -> continue bit for bit,
// scoring from the support vectors only, the ridge in every machine.
#include <budgetkernel/budgetkernel.hpp>
#include <budgetkernel/learners/incremental_svc.hpp>
#include <budgetkernel/svm/incremental_svm.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "test_idsvm_fixtures.hpp"
#include "test_util.hpp"

using namespace budgetkernel;
using namespace idsvm_test;

TEST_CASE("IncrementalSVC: binary and one-vs-rest equal independent machines; prequential predictions") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(80, c, 201 + static_cast<std::uint64_t>(c));
    IncrementalSVC l(2, c, svc_params());
    std::vector<std::int32_t> pred(80);
    l.partial_fit_weighted(s.X, s.y.data(), s.w.data(), pred.data());
    const Index outs = c == 2 ? 1 : c;
    CHECK(l.n_outputs() == outs);
    std::vector<IncrementalSVM> ref;
    for (Index k = 0; k < outs; ++k) ref.emplace_back(2, svc_params().kernel, 2.0);
    int mistakes = 0;
    for (Index i = 0; i < 80; ++i) {
      Vector f(outs);
      for (Index k = 0; k < outs; ++k) f(k) = ref[static_cast<std::size_t>(k)].decision(s.X.row(i).data());
      const std::int32_t p = detail::predict_from_scores(f);
      CHECK(p == pred[static_cast<std::size_t>(i)]);
      mistakes += p != s.y[static_cast<std::size_t>(i)];
      for (Index k = 0; k < outs; ++k) {
        const double yk = outs == 1 ? (s.y[static_cast<std::size_t>(i)] == 1 ? 1.0 : -1.0)
                                    : (s.y[static_cast<std::size_t>(i)] == k ? 1.0 : -1.0);
        ref[static_cast<std::size_t>(k)].learn(s.X.row(i).data(), yk, s.w[static_cast<std::size_t>(i)]);
      }
    }
    CHECK(l.counters().examples == 80 && l.counters().mistakes == mistakes && l.counters().labels == 80);
    const Stream t = make_stream(30, c, 7);
    RowMatrix D(30, outs);
    l.decision_function(t.X, D);
    double e = 0.0;
    for (Index i = 0; i < 30; ++i)
      for (Index k = 0; k < outs; ++k) e = std::max(e, std::abs(D(i, k) - ref[static_cast<std::size_t>(k)].decision(t.X.row(i).data())));
    CHECK(e < 1e-12);
    for (Index k = 0; k < outs; ++k) CHECK(check_kkt(l.machine(k), "svc machine") == 0);
    // n_support by brute force.
    Index nsv = 0;
    for (Index i = 0; i < l.machine(0).size(); ++i) {
      bool sv = false;
      for (Index k = 0; k < outs; ++k) sv = sv || l.machine(k).alpha(i) > 0.0;
      nsv += sv;
    }
    CHECK(l.n_support() == nsv && nsv > 0);
  }
}

TEST_CASE("IncrementalSVC: unlearn / set_weight / set_C by example number equal retraining") {
  const Stream s = make_stream(60, 3, 301);
  IncrementalSVC a(2, 3, svc_params());
  a.partial_fit(s.X, s.y.data());
  Stream kept;
  kept.X.resize(0, 2);
  for (Index i = 0; i < 60; ++i) {
    if (i % 5 == 2) {
      a.unlearn(i);
    } else {
      kept.X.conservativeResize(kept.X.rows() + 1, 2);
      kept.X.row(kept.X.rows() - 1) = s.X.row(i);
      kept.y.push_back(s.y[static_cast<std::size_t>(i)]);
      kept.w.push_back(i % 7 == 0 ? 2.5 : 1.0);
    }
  }
  for (Index i = 0; i < 60; i += 7)
    if (i % 5 != 2) a.set_weight(i, 2.5);
  a.set_C(0.7);
  CHECK_THROWS(a.unlearn(2));
  CHECK_THROWS(a.unlearn(60));
  CHECK_THROWS(a.set_weight(2, 1.0));
  CHECK_THROWS(a.set_weight(0, -1.0));
  CHECK_THROWS(a.set_C(0.0));
  bool inv = false;
  try {
    a.unlearn(-1);
  } catch (const std::invalid_argument&) {
    inv = true;
  }
  CHECK(inv);
  IncrementalSVC b(2, 3, svc_params(0.7));
  b.partial_fit_weighted(kept.X, kept.y.data(), kept.w.data());
  const Stream t = make_stream(30, 3, 8);
  RowMatrix Da(30, 3), Db(30, 3);
  a.decision_function(t.X, Da);
  b.decision_function(t.X, Db);
  CHECK((Da - Db).cwiseAbs().maxCoeff() < 1e-7);
  for (Index k = 0; k < 3; ++k) CHECK_NEAR(a.machine(k).dual_objective(), b.machine(k).dual_objective(), 1e-9 * std::abs(b.machine(k).dual_objective()));
}

TEST_CASE("IncrementalSVC: save -> load -> continue bit for bit; Model predicts the same; bad input raises") {
  for (int c : {2, 4}) {
    const Stream s = make_stream(90, c, 401 + static_cast<std::uint64_t>(c));
    IncrementalSVC a(2, c, svc_params()), b;
    a.partial_fit_weighted(s.X.topRows(45), s.y.data(), s.w.data());
    a.unlearn(10);
    a.metadata = "meta";
    FieldMap fm;
    a.save(fm);
    const std::string bytes = fm.to_bytes();
    b.load(FieldMap::from_bytes(bytes));
    CHECK(b.metadata == "meta");
    // Model (learner-independent predictor) from the same file.
    const Model model(FieldMap::from_bytes(bytes));
    CHECK(model.learner() == "idsvm" && model.n_support() == a.n_support());
    const Stream t = make_stream(25, c, 9);
    RowMatrix Dm = model.decision_function(t.X), Da(25, a.n_outputs());
    a.decision_function(t.X, Da);
    CHECK(Dm == Da);  // both score the same support vectors the same way
    std::vector<std::int32_t> pa(45), pb(45);
    a.partial_fit_weighted(s.X.bottomRows(45), s.y.data() + 45, s.w.data() + 45, pa.data());
    b.partial_fit_weighted(s.X.bottomRows(45), s.y.data() + 45, s.w.data() + 45, pb.data());
    CHECK(pa == pb);
    a.set_C(5.0);
    b.set_C(5.0);
    FieldMap fa, fb;
    a.save(fa);
    b.save(fb);
    CHECK(fa.to_bytes() == fb.to_bytes());
    // Corrupt files.
    auto raises = [&](auto&& edit) { return load_refused<IncrementalSVC>(fa, edit); };
    CHECK(raises([](FieldMap& f) { f.set("C", 0.0); }));
    CHECK(raises([](FieldMap& f) { f.set("C", 4.0); }));  // machines disagree with the learner
    CHECK(raises([](FieldMap& f) { f.set_bytes("learner", "bsgd"); }));
    CHECK(raises([](FieldMap& f) { f.set_int("n_classes", 1); }));
    CHECK(raises([](FieldMap& f) { f.set_int("m0.next_key", 3); }));
    if (c > 2) CHECK(raises([](FieldMap& f) { f.set_ints("m1.keys", std::vector<std::int64_t>(static_cast<std::size_t>(f.get_ints("m1.keys").size()), 0)); }));
  }
  // Invalid parameters and inputs.
  IDSVMParams p = svc_params();
  p.C = -1.0;
  CHECK_THROWS(IncrementalSVC(2, 2, p));
  p.C = std::nan("");
  CHECK_THROWS(IncrementalSVC(2, 2, p));
  CHECK_THROWS(IncrementalSVC(0, 2, svc_params()));
  CHECK_THROWS(IncrementalSVC(2, 1, svc_params()));
  IncrementalSVC l(2, 2, svc_params());
  RowMatrix X(2, 2);
  X << 0, 1, 1, 0;
  const std::int32_t y[2] = {0, 1}, ybad[2] = {0, 2};
  const double w[2] = {1.0, 0.0}, wn[2] = {1.0, std::nan("")};
  CHECK_THROWS(l.partial_fit_weighted(X, y, w, nullptr));
  CHECK_THROWS(l.partial_fit_weighted(X, y, wn, nullptr));
  CHECK_THROWS(l.partial_fit(X, ybad));
  CHECK(l.counters().examples == 0);  // validated before learning anything
}

TEST_CASE("IncrementalSVC: scoring reads the support vectors only, and they follow every change of the model") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(120, c, 501 + static_cast<std::uint64_t>(c));
    const Stream t = make_stream(40, c, 11);
    IncrementalSVC a(2, c, svc_params(0.5));
    a.partial_fit(s.X.topRows(80), s.y.data());
    // The gathered set is exactly the examples with alpha > 0 in some machine, in row order.
    const auto sup = a.support();
    std::vector<std::int64_t> keys;
    for (Index i = 0; i < a.machine(0).size(); ++i) {
      bool sv = false;
      for (Index k = 0; k < a.n_outputs(); ++k) sv = sv || a.machine(k).alpha(i) > 0.0;
      if (sv) keys.push_back(a.machine(0).key(i));
    }
    CHECK(static_cast<Index>(keys.size()) == sup->sv.size() && a.n_support() == sup->sv.size());
    CHECK(std::equal(keys.begin(), keys.end(), sup->sv.ids().begin()));
    CHECK(sup->sv.size() < a.machine(0).size());  // some examples are in R: nothing to score there
    CHECK(gap_to_machines(a, t.X) < 1e-12);
    // A row scored alone equals the same row in a chunk (decision vs decision_function).
    RowMatrix D(t.X.rows(), a.n_outputs());
    a.decision_function(t.X, D);
    Vector f(a.n_outputs());
    a.decision(t.X.row(5).data(), f.data());
    CHECK(f.transpose() == D.row(5));
    // Every kind of change: the next scoring sees it (a copy keeps its own model).
    const IncrementalSVC before = a;
    const RowMatrix D_before = D;
    a.step(s.X.row(80).data(), s.y[80]);
    CHECK(gap_to_machines(a, t.X) < 1e-12);
    a.unlearn(3);
    CHECK(gap_to_machines(a, t.X) < 1e-12);
    a.set_weight(7, 3.0);
    CHECK(gap_to_machines(a, t.X) < 1e-12);
    a.set_C(2.0);
    CHECK(gap_to_machines(a, t.X) < 1e-12);
    a.partial_fit(s.X.bottomRows(39), s.y.data() + 81);
    CHECK(gap_to_machines(a, t.X) < 1e-12);
    RowMatrix Db(t.X.rows(), a.n_outputs());
    before.decision_function(t.X, Db);
    CHECK(Db == D_before);
    // load() replaces the model whole, gathered set included.
    FieldMap fm;
    before.save(fm);
    a.load(fm);
    a.decision_function(t.X, Db);
    CHECK(Db == D_before);
    // Concurrent first use after a change: every thread sees the same values.
    a.step(s.X.row(100).data(), s.y[100]);
    RowMatrix ref(t.X.rows(), a.n_outputs());
    {
      const IncrementalSVC fresh = a;  // its gathered set is not made yet
      std::vector<RowMatrix> got(4, RowMatrix(t.X.rows(), a.n_outputs()));
      std::vector<std::thread> threads;
      for (std::size_t j = 0; j < got.size(); ++j) threads.emplace_back([&, j] { fresh.decision_function(t.X, got[j]); });
      for (auto& th : threads) th.join();
      a.decision_function(t.X, ref);
      for (const auto& g : got) CHECK(g == ref);
    }
  }
}

TEST_CASE("IncrementalSVC: ridge reaches every machine, resumes bit for bit, is validated") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(80, c, 501 + static_cast<std::uint64_t>(c));
    IDSVMParams p = svc_params();
    p.ridge = 0.01;
    IncrementalSVC a(2, c, p), b;
    a.partial_fit_weighted(s.X.topRows(40), s.y.data(), s.w.data());
    const Index outs = a.n_outputs();
    // machine k equals an IncrementalSVM with the same ridge on the k-versus-rest labels
    for (Index k = 0; k < outs; ++k) {
      CHECK(a.machine(k).ridge() == 0.01);
      IncrementalSVM ref(2, p.kernel, p.C, p.ridge);
      for (Index i = 0; i < 40; ++i) {
        const std::int32_t yi = s.y[static_cast<std::size_t>(i)];
        ref.learn(s.X.row(i).data(), outs == 1 ? (yi == 1 ? 1.0 : -1.0) : (yi == k ? 1.0 : -1.0), s.w[static_cast<std::size_t>(i)]);
      }
      FieldMap f1, f2;
      a.machine(k).save(f1, "m.");
      ref.save(f2, "m.");
      CHECK(f1.to_bytes() == f2.to_bytes());
      CHECK(check_kkt(a.machine(k), "svc ridge") == 0);
    }
    FieldMap fm;
    a.save(fm);
    CHECK(fm.get_f64("ridge") == 0.01);
    b.load(FieldMap::from_bytes(fm.to_bytes()));
    CHECK(b.params().ridge == 0.01);
    a.partial_fit_weighted(s.X.bottomRows(40), s.y.data() + 40, s.w.data() + 40);
    b.partial_fit_weighted(s.X.bottomRows(40), s.y.data() + 40, s.w.data() + 40);
    a.unlearn(5);
    b.unlearn(5);
    FieldMap fa, fb;
    a.save(fa);
    b.save(fb);
    CHECK(fa.to_bytes() == fb.to_bytes());
    auto raises = [&](auto&& edit) { return load_refused<IncrementalSVC>(fa, edit); };
    CHECK(raises([](FieldMap& f) { f.set("ridge", 0.02); }));  // the machines disagree with the learner
    CHECK(raises([](FieldMap& f) { f.set("ridge", -1.0); }));
  }
  IDSVMParams p = svc_params();
  p.ridge = -1e-9;
  CHECK_THROWS(IncrementalSVC(2, 2, p));
  p.ridge = std::nan("");
  CHECK_THROWS(IncrementalSVC(2, 2, p));
  p.ridge = std::numeric_limits<double>::infinity();
  CHECK_THROWS(IncrementalSVC(2, 2, p));
}

TEST_MAIN()
