#pragma once
// ModuleList: submodules held in a list, named "0", "1", ... as torch.nn.ModuleList, so that
// their parameters show up in parameters() and state_dict() ("blocks.0.norm1.weight"). It has no
// forward of its own: the owner decides how to run them.
//
//   auto blocks = register_module("blocks", std::make_shared<tg::nn::ModuleList>());
//   for (int i = 0; i < 2; ++i) blocks->push_back(std::make_shared<TransformerBlock>(64, 4));
//   for (auto& block : *blocks) x = (*block)(x);
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <vector>

#include <tapegrad/core/error.h>
#include <tapegrad/nn/module.h>

namespace tg::nn {

class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);

  ModuleList& push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  // The i-th module (IndexError when out of range); at<M>(i) casts it to its type.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  template <typename M> std::shared_ptr<M> at(size_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    TG_CHECK(m != nullptr, TypeError, "ModuleList", "module ", i, " is a ", (*this)[i]->type_name(),
             ", not the type asked for");
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace tg::nn
