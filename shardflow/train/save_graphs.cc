#include <shardflow/train/save_graphs.h>

#include <shardflow/core/error.h>
#include <shardflow/parallel/ir_dump.h>

namespace sf {

std::vector<std::string> save_graphs(const SemiAutoProgram& sp, const std::string& path) {
  // The local graph was moved into the program and extended with the backward; its groups
  // (the forward's and the gradient mirrors') stay listed on sp.local.
  return write_ir_dump(path, sp.local.rank, sp.global, sp.sharding, sp.program.graph, sp.local.groups);
}

void SaveGraphs::on_step_end(const RunContext&) {
  if (!files_.empty()) return;
  const SemiAutoProgram* sp = model_.semi_auto_program();
  SF_ENFORCE(sp != nullptr, InvalidArgument,
             "SaveGraphs: the parallel IR exists in semi_auto_parallel and auto_parallel modes only; the model "
             "trains in {} mode",
             parallel_mode_name(get_auto_parallel_context().parallel_mode));
  files_ = save_graphs(*sp, path_);
}

}  // namespace sf
