#include <shardflow/parallel/ir_dump.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/printer.h>

namespace sf {

namespace {

// "(2, 4)" for a tuple, as MindSpore prints it; a layout as its call was written.
std::string entry_str(const TensorStrategy& s) {
  if (s.is_layout()) return s.layout().spec();
  return fmt::format("({}{})", fmt::join(s.tuple(), ", "), s.tuple().size() == 1 ? "," : "");
}

std::string op_strategy_str(const OpStrategy& s) {
  return fmt::format("in_strategy: {}, out_strategy: {}", strategy_tuple_str(s.in),
                     s.out.empty() ? "None" : strategy_tuple_str(s.out));
}

const std::vector<int>& ranks_of(const Node& n, const GroupRanks& groups) {
  const std::string name = group_of(n).name;
  auto it = groups.find(name);
  SF_ENFORCE(it != groups.end(), InvalidArgument, "IR dump: {} runs on group '{}', which the local graph does not list",
             node_label(n), name);
  return it->second;
}

std::string group_str(const Node& n, const GroupRanks& groups) {
  const std::vector<int>& ranks = ranks_of(n, groups);
  return fmt::format("group_ranks: {}, rank_list: ({})", fmt::join(ranks, "-"), fmt::join(ranks, ", "));
}

// A DOT string literal: quotes and backslashes escaped, lines broken with \n.
std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// One DOT node per graph node (those in `ids`), one edge per input among them.
template <class Label>
std::string to_dot(const std::string& title, const Graph& g, const std::vector<int>& ids, Label label) {
  std::vector<bool> shown(g.size(), false);
  for (int id : ids) shown[id] = true;
  std::string out = fmt::format("digraph {} {{\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n",
                                dot_quote(title));
  for (int id : ids) {
    const Node& n = g.node(id);
    std::string style;
    const std::string text = label(n, style);
    out += fmt::format("  n{} [label={}{}];\n", id, dot_quote(text), style);
  }
  for (int id : ids)
    for (int in : g.node(id).inputs)
      if (shown[in]) out += fmt::format("  n{} -> n{};\n", in, id);
  return out + "}\n";
}

std::string shape_line(const Node& n) { return fmt::format("{}{}", dtype_name(n.dtype), shape_str(n.shape)); }

std::vector<int> all_nodes(const Graph& g) {
  std::vector<int> ids(g.size());
  for (int i = 0; i < g.size(); ++i) ids[i] = i;
  return ids;
}

}  // namespace

std::string strategy_tuple_str(const std::vector<TensorStrategy>& list) {
  std::vector<std::string> parts;
  for (const TensorStrategy& s : list) parts.push_back(entry_str(s));
  return fmt::format("({}{})", fmt::join(parts, ", "), parts.size() == 1 ? "," : "");
}

std::string print_strategy_ir(const Graph& global, const GraphSharding& sharding) {
  std::string out = fmt::format("# step_parallel_begin: the global graph on {} devices, each op's strategy\n",
                                sharding.devices);
  for (int id : sharding.nodes) {
    const Node& n = global.node(id);
    const NodeSharding& ns = sharding.at(id);
    if (!ns.op) {
      out += fmt::format("{}\n    {{layout: {}}}\n", print_node(n), ns.layout.str());
      continue;
    }
    out += fmt::format("{}\n    {{{}}}{} device matrix {}\n", print_node(n), op_strategy_str(ns.op->strategy),
                       strategy_origin(*ns.op), ns.op->mesh.str());
  }
  return out;
}

std::string print_execute_ir(const Graph& local, const GroupRanks& groups) {
  std::string out = "# execute: this rank's local graph as it runs, with the inserted communication\n";
  for (const auto& [name, ranks] : groups)
    out += fmt::format("# group {}: rank_list ({})\n", name, fmt::join(ranks, ", "));
  for (const Node& n : local.nodes()) {
    out += print_node(n) + "\n";
    if (is_collective(n)) out += fmt::format("    {{{}}}\n", group_str(n, groups));
  }
  return out;
}

std::string strategy_dot(const Graph& global, const GraphSharding& sharding) {
  return to_dot("step_parallel_begin", global, sharding.nodes, [&](const Node& n, std::string& style) {
    const NodeSharding& ns = sharding.at(n.id);
    if (!ns.op) {
      style = ", style=rounded";
      return fmt::format("%{} {}\n{}\n{}\nlayout {}", n.id, n.op, n.name, shape_line(n), ns.layout.str());
    }
    if (ns.op->given) style = ", style=filled, fillcolor=\"#dbe9f6\"";
    return fmt::format("%{} {}\n{}\n{}\n{}{}", n.id, n.op, n.name, shape_line(n), op_strategy_str(ns.op->strategy),
                       strategy_origin(*ns.op));
  });
}

std::string execute_dot(const Graph& local, const GroupRanks& groups) {
  return to_dot("execute", local, all_nodes(local), [&](const Node& n, std::string& style) {
    std::string text = fmt::format("%{} {}\n{}\n{}", n.id, n.op, n.name, shape_line(n));
    if (is_collective(n)) {
      style = ", style=filled, fillcolor=\"#f6d8c8\"";
      text += '\n';
      text += group_str(n, groups);
    }
    return text;
  });
}

std::vector<std::string> write_ir_dump(const std::string& path, int rank, const Graph& global,
                                       const GraphSharding& sharding, const Graph& local, const GroupRanks& groups) {
  const std::string dir = fmt::format("{}/rank_{}", path, rank);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"step_parallel_begin.ir", print_strategy_ir(global, sharding)},
      {"step_parallel_begin.dot", strategy_dot(global, sharding)},
      {"execute.ir", print_execute_ir(local, groups)},
      {"execute.dot", execute_dot(local, groups)},
  };
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    written.push_back(dir + "/" + name);
    write_text_file(written.back(), text);
  }
  return written;
}

}  // namespace sf
