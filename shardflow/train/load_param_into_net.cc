#include <shardflow/train/load_param_into_net.h>

#include <fmt/format.h>

#include <map>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

LoadReport load_param_into_net(nn::Cell& net, const NamedTensors& tensors, bool strict, const std::string& source) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : tensors) by_name.emplace(name, &t);
  const ParameterList params = net.get_parameters();
  LoadReport report;
  std::vector<std::string> misshaped;
  std::map<std::string, bool> used;
  for (const Parameter& p : params) {
    auto it = by_name.find(p.name());
    if (it == by_name.end()) {
      report.param_not_load.push_back(p.name());
      continue;
    }
    used[p.name()] = true;
    const Tensor& src = *it->second;
    // A rank's checkpoint holds the block of each parameter it holds (value(), not shape()).
    if (src.shape() != p.value().shape() || src.dtype() != p.value().dtype())
      misshaped.push_back(fmt::format("{}: checkpoint {}, network {}", brief_text(p.name(), 60), src.describe(),
                                      p.value().describe()));
  }
  for (const auto& [name, t] : tensors)
    if (!used.count(name)) report.ckpt_not_load.push_back(name);
  SF_ENFORCE(misshaped.empty(), ShapeError, "load_param_into_net: {} has {} tensor{} of another shape or dtype than "
             "the network's parameter: {}", source, misshaped.size(), misshaped.size() == 1 ? "" : "s",
             brief_names(misshaped, 3, 120));
  SF_ENFORCE(!strict || report.param_not_load.empty(), InvalidArgument,
             "load_param_into_net: {} lacks {} of the network's {} parameters: {} (it holds {}); pass strict = false "
             "to load the others",
             source, report.param_not_load.size(), params.size(), brief_names(report.param_not_load, 6),
             brief_contents(tensors));
  for (Parameter p : params)
    if (auto it = by_name.find(p.name()); it != by_name.end()) p.value().copy_from(*it->second);
  return report;
}

LoadReport load_param_into_net(nn::Cell& net, const std::string& ckpt_path, bool strict) {
  return load_param_into_net(net, load_checkpoint(ckpt_path), strict, fmt::format("checkpoint '{}'", brief_text(ckpt_path)));
}

}  // namespace sf
