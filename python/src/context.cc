// The parallel context (set_auto_parallel_context), the global seed and the log sink.
#include <fmt/format.h>

#include <shardflow/parallel/context.h>
#include <shardflow/train/log_sink.h>
#include <shardflow/train/rank_log.h>

#include "bindings.h"

namespace sf::python {

namespace {

ParallelMode mode_of(const std::string& name) {
  for (ParallelMode m : {ParallelMode::kStandAlone, ParallelMode::kDataParallel, ParallelMode::kHybridParallel,
                         ParallelMode::kSemiAutoParallel, ParallelMode::kAutoParallel})
    if (parallel_mode_name(m) == name) return m;
  throw InvalidArgument(fmt::format(
      "parallel_mode '{}': stand_alone, data_parallel, hybrid_parallel, semi_auto_parallel or auto_parallel", name));
}

}  // namespace

void bind_context(py::module_& m) {
  m.def(
      "set_auto_parallel_context",
      [](const py::kwargs& kw) {
        AutoParallelContext c = get_auto_parallel_context();
        for (const auto& [k, v] : kw) {
          const std::string key = k.cast<std::string>();
          if (key == "parallel_mode") c.parallel_mode = mode_of(v.cast<std::string>());
          else if (key == "gradients_mean") c.gradients_mean = v.cast<bool>();
          else if (key == "search_mode") c.search_mode = v.cast<std::string>();
          else if (key == "dataset_strategy") c.dataset_strategy = v.cast<std::string>();
          else if (key == "full_batch") c.dataset_strategy = v.cast<bool>() ? "full_batch" : "data_parallel";
          else if (key == "strategy_ckpt_save_file") c.strategy_ckpt_save_file = v.cast<std::string>();
          else if (key == "strategy_ckpt_load_file") c.strategy_ckpt_load_file = v.cast<std::string>();
          else if (key == "pipeline_stages") c.pipeline_stages = v.cast<int>();
          else if (key == "pipeline_scheduler") c.pipeline_scheduler = v.cast<std::string>();
          else if (key == "pipeline_interleave") c.pipeline_interleave = v.cast<int>();
          else if (key == "bucket_bytes") c.bucket_bytes = v.cast<int64_t>();
          else if (key == "save_graphs") c.save_graphs = v.cast<bool>();
          else if (key == "save_graphs_path") c.save_graphs_path = v.cast<std::string>();
          else throw InvalidArgument(fmt::format("set_auto_parallel_context: no option '{}'", key));
        }
        set_auto_parallel_context(c);
      },
      "Sets the named fields of the parallel context (parallel/context.h); the others keep their values.");
  m.def("get_auto_parallel_context", [](const std::string& key) -> py::object {
    const AutoParallelContext c = get_auto_parallel_context();
    if (key == "parallel_mode") return py::str(std::string(parallel_mode_name(c.parallel_mode)));
    if (key == "gradients_mean") return py::bool_(c.gradients_mean);
    if (key == "search_mode") return py::str(c.search_mode);
    if (key == "dataset_strategy") return py::str(c.dataset_strategy);
    if (key == "full_batch") return py::bool_(c.dataset_strategy == "full_batch");
    if (key == "pipeline_stages") return py::int_(c.pipeline_stages);
    if (key == "pipeline_scheduler") return py::str(c.pipeline_scheduler);
    if (key == "pipeline_interleave") return py::int_(c.pipeline_interleave);
    if (key == "save_graphs") return py::bool_(c.save_graphs);
    if (key == "save_graphs_path") return py::str(c.save_graphs_path);
    throw InvalidArgument(fmt::format("get_auto_parallel_context: no option '{}'", key));
  });
  m.def("reset_auto_parallel_context", &reset_auto_parallel_context);
  m.def("set_seed", &set_seed, py::arg("seed"));
  m.def("get_seed", &get_seed);
  m.def("log_line", [](const std::string& line) { log_line(line); },
        "Writes a line through the log sink (the rank's log; rank 0's to stdout).");
  m.def(
      "set_log_ranks",
      [](const std::string& ranks, const std::string& job_dir) { set_log_ranks(parse_log_ranks(ranks), job_dir); },
      py::arg("ranks"), py::arg("job_dir") = "",
      "Which ranks of this process print to stdout (rank0, all, files) and the job directory of their files.");
  m.def("new_job_dir", &new_job_dir, py::arg("log_dir"), "Makes and returns log_dir/<n>, n the first free number.");
}

}  // namespace sf::python
