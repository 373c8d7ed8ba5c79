#pragma once
// tapegrad: one include for the whole public API.
#include <tapegrad/core/cuda.h>
#include <tapegrad/core/dtype.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/factories.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/core/operators.h>
#include <tapegrad/core/overloads.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/core/scalar.h>
#include <tapegrad/core/tensor.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/autograd/engine.h>
#include <tapegrad/autograd/gradcheck.h>
#include <tapegrad/autograd/node.h>
#include <tapegrad/ops/seed_scatter.h>
