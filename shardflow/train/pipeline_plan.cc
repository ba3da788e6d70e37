#include <shardflow/train/pipeline_plan.h>

#include <chrono>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/parallel/auto_parallel.h>
#include <shardflow/parallel/step_estimate.h>
#include <shardflow/parallel/strategy_file.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/stage_program.h>
#include <shardflow/pipeline/transfers.h>
#include <shardflow/train/pipeline_stages.h>

namespace sf {

pipeline::Schedule pipeline_schedule(const AutoParallelContext& context, int64_t devices, int micro_size) {
  const int stages = context.pipeline_stages;
  SF_ENFORCE(devices >= 1, InvalidArgument, "pipeline: {} devices; a job has at least 1", devices);
  SF_ENFORCE(stages >= 1 && devices % stages == 0, InvalidArgument,
             "pipeline: pipeline_stages {} does not divide the {} devices: stages x devices per stage must "
             "equal the device count",
             stages, devices);
  SF_ENFORCE(micro_size >= stages, InvalidArgument,
             "pipeline: micro_size {} is smaller than pipeline_stages {}; each stage needs a micro-batch of its "
             "own (micro_size >= stages)",
             micro_size, stages);
  const pipeline::ScheduleKind kind = pipeline::schedule_kind(context.pipeline_scheduler);
  SF_ENFORCE(context.pipeline_interleave == 1 || kind == pipeline::ScheduleKind::kInterleaved1F1B, InvalidArgument,
             "pipeline: pipeline_interleave {} needs pipeline_scheduler 'interleaved_1f1b', not '{}'",
             context.pipeline_interleave, context.pipeline_scheduler);
  return pipeline::make_schedule(kind, stages, micro_size, context.pipeline_interleave);
}

std::shared_ptr<const std::vector<pipeline::StageGraph>> split_pipeline_cell(nn::PipelineCell& cell,
                                                                             const std::vector<Shape>& micro_shapes,
                                                                             const std::vector<DType>& dtypes,
                                                                             int virtual_stages) {
  SF_ENFORCE(micro_shapes.size() == 2 && dtypes.size() == 2, InvalidArgument,
             "pipeline: a batch is (data, label), got {} columns", micro_shapes.size());
  Graph graph;
  int loss = -1;
  std::vector<int> stage_of;
  {
    nn::StageRecord record;
    GraphBuilder b(graph);
    Value x = b.input("data", micro_shapes[0], dtypes[0]);
    Value y = b.input("label", micro_shapes[1], dtypes[1]);
    loss = cell.net_with_loss()(b, x, y).id;
    stage_of = record.stage_of_nodes(graph.size());
  }
  return std::make_shared<const std::vector<pipeline::StageGraph>>(
      pipeline::split_stages(graph, loss, stage_of, virtual_stages));
}

StageStrategies stage_strategies(const std::vector<pipeline::StageGraph>& stages, StrategyTable given,
                                 const AutoParallelContext& context, int per_stage) {
  StageStrategies out;
  if (!context.strategy_ckpt_load_file.empty())
    for (const auto& [op, s] : load_strategy_file(context.strategy_ckpt_load_file)) given[op] = s;  // the file wins
  out.given = given;
  out.table = std::move(given);
  if (context.parallel_mode != ParallelMode::kAutoParallel) return out;
  // Each stage searches over its own devices; its ops' names are the network's, so the tables
  // of all stages merge into one.
  for (const pipeline::StageGraph& sg : stages) {
    StrategySearch search = search_strategies(sg.graph, {sg.objective}, out.given, per_stage, context);
    for (const auto& [op, s] : search.table) out.table[op] = s;
    out.searches.push_back(std::move(search));
  }
  return out;
}

StrategyTable strategies_of(const std::vector<pipeline::StageGraph>& stages,
                            const std::vector<GraphSharding>& shardings) {
  StrategyTable table;
  for (const pipeline::StageGraph& sg : stages)
    for (const auto& [op, s] : strategies_of(sg.graph, shardings[sg.virtual_stage])) table.emplace(op, s);
  return table;
}

std::string PipelinePlan::str(bool explain, const std::string& given_by) const {
  std::string out;
  if (explain) {
    if (!strategies.searches.empty()) {
      for (size_t v = 0; v < strategies.searches.size(); ++v)
        out += fmt::format("virtual stage {}: {}\n", v, strategies.searches[v].explain());
    } else {
      out += "strategies: semi-auto parallel, per stage\n";
      for (const auto& [op, s] : used())
        out += fmt::format("{}: {} — {}\n", op, s.str(),
                           strategies.given.count(op) ? "given by " + given_by
                                                      : std::string("the default (the batch over the stage's devices)"));
    }
  }
  out += fmt::format(
      "dry run on {} ranks: {} stages x {} ranks each, {} micro-batches, {}{}; planned in {:.3f} s; per rank and "
      "step:\n",
      devices, stages, per_stage, micro_batches, schedule, chunks > 1 ? fmt::format(", {} chunks per rank", chunks) : "",
      seconds);
  constexpr double kMiB = 1024.0 * 1024.0;
  for (int s = 0; s < stages; ++s) {
    const StageFigures& f = figures[s];
    out += fmt::format(
        "stage {} (ranks {}..{}): {} ops; parameters {:.3f} MiB, activations {:.3f} MiB per micro-batch x {} "
        "stashed at most; collectives {:.3f} MiB (gradients {:.3f} MiB), to neighbour stages {:.3f} MiB\n",
        s, f.first_rank, f.first_rank + per_stage - 1, f.local_ops, f.parameter_bytes / kMiB,
        f.activation_bytes / kMiB, f.peak_in_flight, f.collective_bytes / kMiB, f.gradient_bytes / kMiB,
        f.transfer_bytes / kMiB);
  }
  // Each op's strategy (not GraphSharding::str: on thousands of ranks its group lists run to
  // megabytes), by virtual stage.
  for (const pipeline::StageGraph& sg : *stage_graphs) {
    out += fmt::format("virtual stage {} (stage {}):\n", sg.virtual_stage, sg.virtual_stage % stages);
    for (const auto& [op, s] : strategies_of(sg.graph, shardings[sg.virtual_stage]))
      out += fmt::format("  {}: {}\n", op, s.str());
  }
  return out;
}

PipelinePlan plan_pipeline(nn::PipelineCell& cell, const std::vector<Shape>& batch_shapes,
                           const std::vector<DType>& dtypes, int64_t devices, const AutoParallelContext& context) {
  const auto begin = std::chrono::steady_clock::now();
  PipelinePlan plan;
  plan.devices = devices;
  plan.stages = context.pipeline_stages;
  plan.chunks = context.pipeline_interleave;
  plan.micro_batches = cell.micro_size();
  const pipeline::Schedule schedule = pipeline_schedule(context, devices, plan.micro_batches);
  plan.schedule = schedule.name;
  plan.per_stage = static_cast<int>(devices / plan.stages);
  SF_ENFORCE(!batch_shapes.empty() && !batch_shapes[0].empty(), InvalidArgument,
             "pipeline: a batch needs a leading batch dimension");
  std::vector<Shape> micro = batch_shapes;
  for (Shape& s : micro) {
    SF_ENFORCE(!s.empty() && s[0] % plan.micro_batches == 0, InvalidArgument,
               "pipeline: the batch of {} rows is not divisible by micro_size {}", s.empty() ? 0 : s[0],
               plan.micro_batches);
    s[0] /= plan.micro_batches;
  }
  cell.net_with_loss().network().trainable_params();  // the parameters exist before the graph names them
  plan.stage_graphs = split_pipeline_cell(cell, micro, dtypes, plan.stages * plan.chunks);
  plan.strategies =
      stage_strategies(*plan.stage_graphs, cell.net_with_loss().network().strategies(), context, plan.per_stage);

  const pipeline::Schedule lowered = pipeline::with_transfers(schedule);
  const pipeline::SimulationResult simulated = pipeline::simulate_schedule(lowered);
  for (int s = 0; s < plan.stages; ++s) {
    const int rank = s * plan.per_stage;
    const pipeline::StageProgram prog = pipeline::build_stage_program(
        *plan.stage_graphs, lowered, plan.strategies.table, rank,
        {.per_stage = plan.per_stage,
         .split_backward = pipeline::splits_backward(schedule),
         .gradients_mean = context.gradients_mean});
    if (s == 0) plan.shardings = prog.shardings;
    PipelinePlan::StageFigures f;
    f.first_rank = rank;
    f.local_ops = prog.graph.size();
    f.peak_in_flight = simulated.stages[s].peak_stashed;
    f.transfer_bytes = static_cast<double>(prog.sent_bytes) * plan.micro_batches;
    for (const pipeline::StageProgram::Chunk& ch : prog.chunks) {
      const pipeline::StageGraph& sg = (*plan.stage_graphs)[ch.virtual_stage];
      const StepEstimate e = estimate_step(sg.graph, prog.shardings[ch.virtual_stage]);
      f.parameter_bytes += e.parameter_bytes;
      f.activation_bytes += e.activation_bytes;
      for (const auto& [kind, bytes] : e.collective_bytes) {
        const bool gradients = kind == "AllReduce (gradients)";
        f.collective_bytes += gradients ? bytes : bytes * plan.micro_batches;  // the gradients once per step
        if (gradients) f.gradient_bytes += bytes;
      }
    }
    plan.figures.push_back(f);
  }
  // The last rank's program too, as a dry run builds the first and the last rank's graphs: a
  // plan that holds on one end of the matrix and not the other is found here.
  if (devices > 1)
    pipeline::build_stage_program(*plan.stage_graphs, lowered, plan.strategies.table, static_cast<int>(devices - 1),
                                  {.per_stage = plan.per_stage,
                                   .split_backward = pipeline::splits_backward(schedule),
                                   .gradients_mean = context.gradients_mean});
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return plan;
}

}  // namespace sf
