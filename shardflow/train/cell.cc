#include <shardflow/train/cell.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <typeinfo>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/parameter_record.h>
#include <shardflow/train/pipeline_stages.h>

namespace sf::nn {

namespace {
// The class name without namespaces ("Network" for a user's `Network : nn::Cell`).
std::string class_name(const Cell& c) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(typeid(c).name(), nullptr, nullptr, &status),
                                                   std::free);
  std::string name = status == 0 && demangled ? demangled.get() : typeid(c).name();
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}
}  // namespace

void Cell::claim_for_calling_rank() {
  if (!comm::is_virtual_rank()) return;  // one rank in this process, or none: nothing to share
  const std::string what = scope_.empty() ? fmt::format("network '{}'", class_name(*this))
                                          : fmt::format("cell '{}' ({})", scope_, class_name(*this));
  rank_owner_.claim(what, "build one network per rank (inside the rank's function)");
}

Value Cell::operator()(GraphBuilder& b, Value x) {
  Value y;
  call_scoped(b, [&] { y = construct(b, x); });
  return y;
}

void Cell::call_scoped(GraphBuilder& b, const std::function<void()>& body) {
  claim_for_calling_rank();
  if (!finalized_) finalize("", get_seed());
  const int first = b.graph().size();
  if (!scope_.empty()) b.push_scope(scope_);
  if (pipeline_stage_ >= 0) pipeline_stage_entered(scope_, pipeline_stage_);
  body();
  if (!scope_.empty()) b.pop_scope();
  if (pipeline_stage_ >= 0) pipeline_stage_ops(first, b.graph().size(), pipeline_stage_);
}

void Cell::finalize(const std::string& prefix, uint64_t seed) {
  for (auto& [name, p] : params_) p.finalize(prefix + name, seed);
  for (auto& [name, c] : children_) c->finalize(prefix + name + ".", seed);
  finalized_ = true;
}

ParameterList Cell::get_parameters() {
  if (!finalized_) finalize("", get_seed());
  ParameterList out;
  for (auto& [name, p] : params_) out.push_back(p);
  for (auto& [name, c] : children_)
    for (auto& p : c->get_parameters()) out.push_back(p);
  return out;
}

ParameterList Cell::trainable_params() {
  ParameterList out;
  for (Parameter& p : get_parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

ParameterList Cell::untrainable_params() {
  ParameterList out;
  for (Parameter& p : get_parameters())
    if (!p.requires_grad()) out.push_back(p);
  return out;
}

void Cell::set_train(bool mode) {
  training_ = mode;
  for (auto& [name, c] : children_) c->set_train(mode);
}

ParameterList Cell::params_of_stages(const std::vector<int>& stages) {
  if (!finalized_) finalize("", get_seed());
  ParameterList out;
  auto on = [&](int s) { return std::find(stages.begin(), stages.end(), s) != stages.end(); };
  // Walks the tree with each cell's effective stage (its own, else its caller's).
  std::function<void(Cell&, int)> walk = [&](Cell& c, int inherited) {
    const int stage = c.pipeline_stage_ >= 0 ? c.pipeline_stage_ : inherited;
    for (auto& [name, p] : c.params_) {
      const auto& extra = p.pipeline_stages();
      if (p.requires_grad() && (on(std::max(stage, 0)) || std::any_of(extra.begin(), extra.end(), on)))
        out.push_back(p);
    }
    for (auto& [name, child] : c.children_) walk(*child, stage);
  };
  walk(*this, -1);
  return out;
}

ParameterList Cell::infer_param_pipeline_stage() {
  const AutoParallelContext ctx = get_auto_parallel_context();
  if (ctx.pipeline_stages <= 1) return trainable_params();
  comm::RankContext* rank = comm::current_rank_or_null();
  const int devices = rank ? rank->size() : 1;
  SF_ENFORCE(devices % ctx.pipeline_stages == 0, InvalidArgument,
             "infer_param_pipeline_stage: pipeline_stages {} does not divide the {} devices", ctx.pipeline_stages,
             devices);
  const int stage = (rank ? rank->rank() : 0) / (devices / ctx.pipeline_stages);
  std::vector<int> stages;
  for (int c = 0; c < ctx.pipeline_interleave; ++c) stages.push_back(stage + c * ctx.pipeline_stages);
  return params_of_stages(stages);
}

Value Cell::param(GraphBuilder& b, Parameter& p) {
  parameter_read(p);
  int id = b.graph().find(p.name());
  if (id >= 0) return {id};
  return b.parameter(p.name(), p.shape());
}

Primitive& Cell::register_primitive(const std::string& instance_name, const std::string& op, Attrs attrs) {
  for (const Primitive& p : primitives_)
    SF_ENFORCE(p.instance_name() != instance_name, InvalidArgument, "cell '{}': primitive '{}' registered twice", scope_,
               instance_name);
  primitives_.emplace_back(instance_name, op, std::move(attrs));
  return primitives_.back();
}

StrategyTable Cell::strategies() const {
  StrategyTable table = strategies_;
  for (const Primitive& p : primitives_)
    if (p.strategy())
      for (const std::string& node : p.node_names()) table[node] = *p.strategy();
  for (const auto& [name, c] : children_)
    for (auto& [node, s] : c->strategies()) table[node] = s;
  return table;
}

Parameter& Cell::register_parameter(const std::string& name, Shape shape, const std::string& init,
                                    bool requires_grad) {
  for (const auto& [n, p] : params_)
    SF_ENFORCE(n != name, InvalidArgument, "cell '{}': parameter '{}' registered twice", scope_, name);
  params_.emplace_back(name, Parameter(std::move(shape), init, requires_grad));
  return params_.back().second;
}

Parameter& Cell::register_parameter(const std::string& name, Parameter p) {
  SF_ENFORCE(p.defined(), InvalidArgument, "cell '{}': parameter '{}' is not defined", scope_, name);
  for (const auto& [n, q] : params_)
    SF_ENFORCE(n != name, InvalidArgument, "cell '{}': parameter '{}' registered twice", scope_, name);
  params_.emplace_back(name, std::move(p));
  return params_.back().second;
}

}  // namespace sf::nn
