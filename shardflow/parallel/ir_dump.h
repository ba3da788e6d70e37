// The parallel IR dump (MindSpore's save_graphs): what one rank of a semi-auto parallel job
// was given and what it runs, as text and as Graphviz DOT, written under <path>/rank_<r>/:
//
//   step_parallel_begin.ir  the global graph (global shapes), each op with its strategy as the
//                           user wrote it, like seed 002's step_parallel_begin_*.ir line
//                             %3 = MatMul(%1, %2) : f32(16, 16)  # matmul/MatMul
//                                 {in_strategy: ((2, 4), (4, 1)), out_strategy: None} device matrix (2,4,1)
//   execute.ir              the rank's local graph as it runs (local shapes, forward and
//                           backward), every inserted collective with its group and rank
//                           list, like seed 002's 18_execute_*.ir
//                             %9 = AllReduce(%8) {group='0-1-2-3', ...} : f32(8, 16)  # matmul/out/AllReduce
//                                 {group_ranks: 0-1-2-3, rank_list: (0, 1, 2, 3)}
//   step_parallel_begin.dot, execute.dot   the same graphs for `dot -Tsvg`.
//
// The printers reuse ops/printer.h's line per node and add what parallel mode knows. The
// writer creates the directories and replaces each file atomically (temp file + rename), so a
// reader never sees half a dump. docs/ir_dump.md describes the files.
//
// Threading: pure functions of their arguments; concurrent calls for different ranks are fine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/graph_sharding.h>

namespace sf {

// A group's name -> its world ranks (LocalGraph::groups, plus the gradient mirrors' groups).
using GroupRanks = std::map<std::string, std::vector<int>>;

// The strategy as MindSpore prints it: "((2, 4), (4, 1))", or the layout calls as written.
std::string strategy_tuple_str(const std::vector<TensorStrategy>& list);

// step_parallel_begin.ir: the nodes the sharding covers, each op with its strategy ("(default)"
// when not the user's) and device matrix, each source with the layout it is cut to.
std::string print_strategy_ir(const Graph& global, const GraphSharding& sharding);
// execute.ir: every node of the local graph; collectives with their group's rank list.
// Throws InvalidArgument naming the node for a collective whose group `groups` lacks.
std::string print_execute_ir(const Graph& local, const GroupRanks& groups);

// DOT of the global graph (ops labelled with their strategy) and of the local graph
// (collectives filled and labelled with their group).
std::string strategy_dot(const Graph& global, const GraphSharding& sharding);
std::string execute_dot(const Graph& local, const GroupRanks& groups);

// Writes the four files under <path>/rank_<rank>/; returns their paths. Throws IoError naming
// the file it could not write.
std::vector<std::string> write_ir_dump(const std::string& path, int rank, const Graph& global,
                                       const GraphSharding& sharding, const Graph& local, const GroupRanks& groups);

}  // namespace sf
