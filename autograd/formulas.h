#pragma once
// Named backward helpers that specs' formulas call (PyTorch keeps these in FunctionsManual.cpp).
// Each is written with public ops, so double backward works through them.
#include <tapegrad/autograd/formulas/attention.h>
#include <tapegrad/autograd/formulas/conv.h>
#include <tapegrad/autograd/formulas/elementwise.h>
#include <tapegrad/autograd/formulas/fused.h>
#include <tapegrad/autograd/formulas/indexing.h>
#include <tapegrad/autograd/formulas/linalg.h>
#include <tapegrad/autograd/formulas/nn_ops.h>
#include <tapegrad/autograd/formulas/softmax.h>
#include <tapegrad/autograd/formulas/reduce.h>
#include <tapegrad/autograd/formulas/shape.h>
#include <tapegrad/autograd/formulas/views.h>
#include <tapegrad/autograd/formulas/scatter.h>
