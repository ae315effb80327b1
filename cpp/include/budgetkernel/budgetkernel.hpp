#pragma once
/// \file budgetkernel.hpp
/// Umbrella header: everything the library offers.

#include "version.hpp"
#include "common.hpp"
#include "kernel.hpp"
#include "sv_store.hpp"
#include "incremental_inverse.hpp"
#include "gram_cache.hpp"
#include "budget/result.hpp"
#include "budget/removal.hpp"
#include "budget/projection.hpp"
#include "budget/merging.hpp"
#include "budget/maintainer.hpp"
#include "budget/nearest_neighbor.hpp"
#include "io.hpp"
#include "learners/learner_base.hpp"
#include "learners/pegasos.hpp"
#include "learners/kernel_expansion.hpp"
#include "learners/passive_aggressive.hpp"
#include "learners/perceptron.hpp"
