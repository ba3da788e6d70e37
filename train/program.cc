#include "train/program.h"

#include <fmt/format.h>

#include "core/error.h"

namespace sf {

namespace {
bool matches(const Program& p, const std::vector<Tensor>& inputs) {
  if (p.inputs.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& n = p.graph.node(p.inputs[i]);
    if (n.shape != inputs[i].shape() || n.dtype != inputs[i].dtype()) return false;
  }
  return true;
}
}  // namespace

Program& ProgramCache::get(const std::vector<Tensor>& inputs) {
  if (last_ && matches(*last_, inputs)) return *last_;  // the common case: same batch shape as before
  std::string sig;
  for (const Tensor& t : inputs) sig += t.describe() + ";";
  auto it = programs_.find(sig);
  if (it == programs_.end()) {
    auto p = std::make_unique<Program>();
    GraphBuilder b(p->graph);
    std::vector<Value> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in.push_back(b.input(fmt::format("input{}", i), inputs[i].shape(), inputs[i].dtype()));
      p->inputs.push_back(in.back().id);
    }
    build_(b, in, *p);
    p->runtime = std::make_unique<Runtime>(p->graph, p->fetches, RuntimeOptions{.threads = opts_.threads, .trace = opts_.trace});
    for (auto& param : params_) {
      int id = p->graph.find(param.name());
      if (id >= 0) p->runtime->bind(id, param.value());
    }
    it = programs_.emplace(sig, std::move(p)).first;
  }
  last_ = it->second.get();
  return *last_;
}

const std::vector<Tensor>& ProgramCache::run(const std::vector<Tensor>& inputs) {
  Program& p = get(inputs);
  feeds_.clear();
  for (size_t i = 0; i < inputs.size(); ++i) feeds_.emplace_back(p.inputs[i], inputs[i]);
  return p.runtime->run(feeds_);
}

}  // namespace sf
