#include <tapegrad/nn/containers.h>

#include <string>

namespace tg::nn {

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) : ModuleList() {
  for (const auto& m : modules) push_back(m);
}

ModuleList& ModuleList::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
  return *this;
}

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  TG_CHECK(i < modules_.size(), IndexError, "ModuleList", "index ", i,
           " is out of range for a list of ", modules_.size(), " modules");
  return modules_[i];
}

}  // namespace tg::nn
