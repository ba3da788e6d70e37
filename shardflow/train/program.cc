#include <shardflow/train/program.h>

#include <fmt/format.h>

#include <set>

#include <shardflow/core/error.h>
#include <shardflow/train/parameter_record.h>

namespace sf {

bool Program::accepts(const std::vector<Tensor>& in) const {
  if (shapes.size() != in.size()) return false;
  for (size_t i = 0; i < in.size(); ++i)
    if (shapes[i] != in[i].shape() || dtypes[i] != in[i].dtype()) return false;
  return true;
}

void Program::feeds(const std::vector<Tensor>& in, Runtime::Feeds& out) const {
  out.clear();
  if (splits == 1) {
    for (size_t c = 0; c < in.size(); ++c) out.emplace_back(inputs[0][c], shard_input ? shard_input(c, in[c]) : in[c]);
    return;
  }
  const int64_t rows = in[0].dim(0) / splits;
  for (size_t c = 0; c < in.size(); ++c) out.emplace_back(wholes[c], in[c]);
  for (int s = 0; s < splits; ++s)
    for (size_t c = 0; c < in.size(); ++c) out.emplace_back(inputs[s][c], in[c].rows(s * rows, (s + 1) * rows));
}

namespace {
// `wanted` blocks if every input has the same number of rows and it divides evenly, else 1.
int splits_for(const std::vector<Tensor>& in, int wanted) {
  if (wanted <= 1 || in.empty()) return 1;
  for (const Tensor& t : in)
    if (t.rank() == 0 || t.dim(0) != in[0].dim(0)) return 1;
  return in[0].dim(0) % wanted == 0 && in[0].dim(0) >= wanted ? wanted : 1;
}
}  // namespace

Program& ProgramCache::get(const std::vector<Tensor>& inputs) {
  if (last_ && last_->accepts(inputs)) return *last_;  // the common case: same batch shape as before
  std::string sig;
  for (const Tensor& t : inputs) sig += t.describe() + ";";
  auto it = programs_.find(sig);
  if (it == programs_.end()) {
    auto p = std::make_unique<Program>();
    p->splits = splits_for(inputs, splits_);
    GraphBuilder b(p->graph);
    std::vector<std::vector<Value>> parts(p->splits);
    for (int s = 0; s < p->splits; ++s) {
      p->inputs.emplace_back();
      for (size_t c = 0; c < inputs.size(); ++c) {
        Shape shape = inputs[c].shape();
        if (p->splits > 1) shape[0] /= p->splits;
        std::string name = p->splits > 1 ? fmt::format("input{}/part{}", c, s) : fmt::format("input{}", c);
        parts[s].push_back(b.input(name, shape, inputs[c].dtype()));
        p->inputs[s].push_back(parts[s].back().id);
      }
    }
    for (size_t c = 0; c < inputs.size(); ++c) {
      p->shapes.push_back(inputs[c].shape());
      p->dtypes.push_back(inputs[c].dtype());
      // The whole batch too, for ops over all rows (a weight update), so they need no concat.
      if (p->splits > 1) p->wholes.push_back(b.input(fmt::format("input{}", c), inputs[c].shape(), inputs[c].dtype()).id);
    }
    nn::ParameterRecord read;  // every parameter the network reads, not only params_
    build_(b, parts, *p);
    p->runtime =
        std::make_unique<Runtime>(p->graph, p->fetches, RuntimeOptions{.threads = opts_.threads, .trace = opts_.trace});
    // Where both name a parameter, the caller's list wins (Model's evaluation in semi-auto mode
    // passes whole values under the names of the network's sharded parameters).
    std::set<std::string> given;
    for (const Parameter& param : params_) given.insert(param.name());
    for (const Parameter& param : read.parameters()) {
      int id = p->graph.find(param.name());
      if (id >= 0 && !given.count(param.name())) p->runtime->bind(id, param.value());
    }
    for (const Parameter& param : params_) {
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
