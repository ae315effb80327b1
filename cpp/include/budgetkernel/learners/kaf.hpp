#pragma once
/// \file learners/kaf.hpp
/// The kernel adaptive filters (regression on streams; Liu, Principe & Haykin, *Kernel
/// Adaptive Filtering*, Wiley 2010): KLMS and QKLMS (kaf/klms.hpp), KRLS with the
/// approximate-linear-dependence test (kaf/krls.hpp) and the sliding-window KRLS
/// (kaf/sliding_krls.hpp). Their shared surface is described in kaf/kaf_common.hpp; their
/// derivations in docs/derivations.md, "Kernel adaptive filters".

#include "kaf/kaf_common.hpp"
#include "kaf/klms.hpp"
#include "kaf/krls.hpp"
#include "kaf/sliding_krls.hpp"
