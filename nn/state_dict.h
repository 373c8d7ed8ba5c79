#pragma once
// Named tensors: what a module's or an optimizer's state_dict() returns and what tg::save writes.
#include <map>
#include <string>

#include <tapegrad/generated/tensor.h>

namespace tg {

// Sorted by name, so files and printouts come out in the same order every time.
using StateDict = std::map<std::string, Tensor>;

}  // namespace tg
