// The Twin Vector Machine's model file (learners/tvm_io.hpp): determinism and save -> load ->
// continue bit for bit, budgetkernel::Model on its fields, corrupt fields refused.
#include <budgetkernel/io.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>

#include <algorithm>
#include <limits>

#include "test_tvm_fixtures.hpp"
#include "test_util.hpp"

using namespace budgetkernel;
using namespace tvm_test;

TEST_CASE("Model reads the TVM fields and predicts the same") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(200, c, 15);
    TwinVectorMachine m(2, c, tvm_params(12));
    m.partial_fit(s.X, s.y.data());
    FieldMap fm;
    m.save(fm);
    const Model model(FieldMap::from_bytes(fm.to_bytes()));
    CHECK(model.learner() == "tvm");
    CHECK(model.n_support() == m.n_twins());
    const RowMatrix P = probe_points(30, 16);
    const RowMatrix Dm = model.decision_function(P);
    RowMatrix D(P.rows(), m.n_outputs());
    m.decision_function(P, D);
    CHECK((Dm - D).cwiseAbs().maxCoeff() <= 1e-10);
  }
}

TEST_CASE("determinism, budget, save -> load -> continue equals an uninterrupted run bitwise") {
  for (bool random : {false, true}) {
    for (int c : {2, 3}) {
      for (TVMMerge merge : {TVMMerge::Input, TVMMerge::Feature}) {
        if (random && merge == TVMMerge::Feature) continue;
        const Stream s = make_stream(300, c, 17);
        TVMParams p = tvm_params(10);
        p.random_baseline = random;
        p.merge = merge;
        p.seed = 5;
        TwinVectorMachine full(2, c, p), again(2, c, p), first(2, c, p);
        full.partial_fit(s.X, s.y.data());
        again.partial_fit(s.X, s.y.data());
        CHECK(same_bytes(full, again));
        for (Index k = 0; k < full.n_outputs(); ++k) CHECK(full.n_twins(k) <= p.budget);
        const RowMatrix A = s.X.topRows(170), B = s.X.bottomRows(130);
        first.partial_fit(A, s.y.data());
        FieldMap fm;
        first.save(fm);
        TwinVectorMachine resumed;
        resumed.load(FieldMap::from_bytes(fm.to_bytes()));
        CHECK(same_bytes(first, resumed));
        resumed.partial_fit(B, s.y.data() + 170);
        CHECK(same_bytes(full, resumed));
        CHECK(full.counters().mistakes == resumed.counters().mistakes);
      }
    }
  }
}

TEST_CASE("corrupt model fields raise") {
  const Stream s = make_stream(120, 2, 19);
  TwinVectorMachine m(2, 2, tvm_params(8));
  m.partial_fit(s.X, s.y.data());
  FieldMap good;
  m.save(good);
  auto loads = [](const FieldMap& fm) {
    TwinVectorMachine t;
    t.load(fm);
    return t.n_twins();
  };
  CHECK(loads(good) == 8);
  const RowMatrix Q = good.get_matrix("tvm.m0.q", -1, 2);
  const RowMatrix S = good.get_matrix("tvm.m0.s", Q.rows(), 2);
  {
    FieldMap f = good;
    f.set_int("tvm.budget", 4);  // fewer than the twins stored
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set("tvm.m2", 0.5);  // m2 <= m1
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set_int("tvm.merge", 7);
    CHECK_THROWS(loads(f));
  }
  for (const char* name : {"tvm.ridge", "tvm.m0.svm.ridge", "tvm.m0.svm.kmax"}) {
    FieldMap f = good;
    f.erase(name);  // format v1 always writes it: a file without it is refused
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set_int("tvm.one_sided", 2);
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    RowMatrix S2 = S;
    S2(0, 0) += 1.0;  // weight differs from the machine's example
    f.set_matrix("tvm.m0.s", S2);
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    RowMatrix S2 = S;
    S2(1, 0) = -1.0;
    f.set_matrix("tvm.m0.s", S2);
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    RowMatrix Q2 = Q;
    Q2(2, 1) += 1e-9;  // twin point differs from the machine's example
    f.set_matrix("tvm.m0.q", Q2);
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    RowMatrix Q2 = Q;
    Q2(0, 0) = std::numeric_limits<double>::quiet_NaN();
    f.set_matrix("tvm.m0.q", Q2);
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    auto keys = f.get_ints("tvm.m0.keys", 2 * Q.rows());
    std::swap(keys[0], keys[1]);
    f.set_ints("tvm.m0.keys", keys);
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set_matrix("tvm.m0.q", Q.topRows(Q.rows() - 1));  // shapes disagree
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set("tvm.C", 3.0 * m.params().C);  // the machine's C no longer matches
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set_bytes("learner", "bsgd");
    CHECK_THROWS(loads(f));
  }
  {
    FieldMap f = good;
    f.set_bytes("rng", "garbage");
    CHECK_THROWS(loads(f));
  }
}

TEST_MAIN()
