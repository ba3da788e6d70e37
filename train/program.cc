#include "train/program.h"

#include <fmt/format.h>

#include "core/error.h"

namespace sf {

bool Program::accepts(const std::vector<Tensor>& in) const {
  if (inputs.size() != in.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    const Node& n = graph.node(inputs[i]);
    if (n.shape != in[i].shape() || n.dtype != in[i].dtype()) return false;
  }
  return true;
}

void Program::feeds(const std::vector<Tensor>& in, Runtime::Feeds& out) const {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) out.emplace_back(inputs[i], in[i]);
}

Program& ProgramCache::get(const std::vector<Tensor>& inputs) {
  if (last_ && last_->accepts(inputs)) return *last_;  // the common case: same batch shape as before
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
  p.feeds(inputs, feeds_);
  return p.runtime->run(feeds_);
}

}  // namespace sf
