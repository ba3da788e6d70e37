#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

int GradContext::emit(const std::string& op, std::vector<int> inputs, Attrs attrs) {
  return g_.add(op, std::move(inputs), std::move(attrs), fmt::format("Gradients/{}/{}-{}", fwd_.name, op, count_++));
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* reg = [] {
    auto* r = new OpRegistry();
    register_builtin_ops(*r);
    return r;
  }();
  return *reg;
}

void OpRegistry::add(OpDef def) {
  SF_ENFORCE(!contains(def.name), InvalidArgument, "op '{}' is registered twice", def.name);
  defs_.push_back(std::make_unique<OpDef>(std::move(def)));
}

const OpDef& OpRegistry::find(const std::string& name) const {
  for (const auto& d : defs_)
    if (d->name == name) return *d;
  SF_THROW(NotFound, "unknown op '{}'", name);
}

bool OpRegistry::contains(const std::string& name) const {
  for (const auto& d : defs_)
    if (d->name == name) return true;
  return false;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& d : defs_) out.push_back(d->name);
  return out;
}

}  // namespace sf
