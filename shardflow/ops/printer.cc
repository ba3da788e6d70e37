#include <shardflow/ops/printer.h>

#include <fmt/format.h>

namespace sf {

std::string print_node(const Node& n) {
  std::string args;
  for (size_t i = 0; i < n.inputs.size(); ++i) args += fmt::format("{}%{}", i ? ", " : "", n.inputs[i]);
  std::string attrs = n.attrs.str();
  return fmt::format("%{} = {}({}){}{} : {}{}  # {}", n.id, n.op, args, attrs.empty() ? "" : " ", attrs,
                     dtype_name(n.dtype), shape_str(n.shape), n.name);
}

std::string print_ir(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) out += print_node(n) + "\n";
  return out;
}

}  // namespace sf
