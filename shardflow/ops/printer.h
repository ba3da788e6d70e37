/// @file
/// Text form of the graph IR, one node per line:
/// @verbatim
///   %3 = MatMul(%0, %1) {transpose_a=0, transpose_b=1} : f32(32, 512)  # fc1/MatMul
/// @endverbatim
#pragma once

#include <string>

#include <shardflow/ops/graph.h>

namespace sf {

/// The whole graph, one line per node.
std::string print_ir(const Graph& g);
/// One node's line, without the newline (parallel/ir_dump.h appends strategies and groups).
std::string print_node(const Node& n);

}  // namespace sf
