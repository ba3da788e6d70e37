#include <shardflow/train/save_graphs.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/parallel/ir_dump.h>

namespace sf {

std::vector<std::string> save_graphs(const SemiAutoProgram& sp, const std::string& path) {
  // The local graph was moved into the program and extended with the backward; its groups
  // (the forward's and the gradient mirrors') stay listed on sp.local.
  return write_ir_dump(path, sp.local.rank, sp.global, sp.sharding, sp.program.graph, sp.local.groups);
}

std::vector<std::string> save_graphs(const pipeline::StageProgram& program,
                                     const std::vector<pipeline::StageGraph>& stages, int rank,
                                     const std::string& path) {
  GroupRanks groups(program.groups.begin(), program.groups.end());
  std::vector<int> world;
  for (int r = 0; r < program.stages * program.per_stage; ++r) world.push_back(r);
  for (const char* name : {pipeline::kSendGroup, pipeline::kRecvActivationGroup, pipeline::kRecvGradientGroup})
    groups.emplace(name, world);
  const std::string dir = fmt::format("{}/rank_{}", path, rank);
  std::vector<std::pair<std::string, std::string>> files;
  const bool several = program.chunks.size() > 1;
  for (size_t c = 0; c < program.chunks.size(); ++c) {
    const int v = program.chunks[c].virtual_stage;
    const std::string name = several ? fmt::format("step_parallel_begin_chunk{}", c) : "step_parallel_begin";
    const std::string header =
        fmt::format("# virtual stage {} of stage {} ({} devices)\n", v, program.stage, program.per_stage);
    files.emplace_back(name + ".ir", header + print_strategy_ir(stages[v].graph, program.shardings[v]));
    files.emplace_back(name + ".dot", strategy_dot(stages[v].graph, program.shardings[v]));
  }
  files.emplace_back("execute.ir", print_execute_ir(program.graph, groups));
  files.emplace_back("execute.dot", execute_dot(program.graph, groups));
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    written.push_back(dir + "/" + name);
    write_text_file(written.back(), text);
  }
  return written;
}

void SaveGraphs::on_step_end(const RunContext&) {
  if (!files_.empty()) return;
  if (PipelineStep* step = model_.pipeline_step()) {
    files_ = step->save_graphs(path_);
    return;
  }
  const SemiAutoProgram* sp = model_.semi_auto_program();
  SF_ENFORCE(sp != nullptr, InvalidArgument,
             "SaveGraphs: the parallel IR exists in semi_auto_parallel and auto_parallel modes only; the model "
             "trains in {} mode",
             parallel_mode_name(get_auto_parallel_context().parallel_mode));
  files_ = save_graphs(*sp, path_);
}

}  // namespace sf
