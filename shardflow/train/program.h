/// @file
/// Program: a graph built for one input signature (shapes and dtypes), with its actor
/// runtime, cached so that every step with the same batch shape reuses the same actors and
/// buffers. A final short batch or an eval batch of another size gets its own program.
///
/// A program may split each batch into `splits` equal row blocks, each fed to its own copy
/// of the network (zero-copy row views): the copies' ops are independent actors that run
/// concurrently on the worker threads, so one process uses all its threads on a chain of
/// layers that would otherwise run one op at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/actors/runtime.h>
#include <shardflow/ops/builder.h>
#include <shardflow/train/parameter.h>

namespace sf {

/// How programs run on the actor runtime.
struct ExecOptions {
  int threads = 1;      ///< actor worker threads
  int batch_splits = 0; ///< row blocks per batch for a training step; 0 = one per thread
  bool trace = false;   ///< record actor events (Program::runtime->write_trace)
  /// Plain SGD in the graph: fuse each weight update with its gradient's GEMM. Off, the GEMM
  /// writes a gradient buffer that ApplyGradientDescent reads, as data parallel must (to
  /// measure what the fusion saves).
  bool fuse_sgd = true;
};

/// A graph built for one input signature, with its actor runtime.
struct Program {
  Graph graph;  ///< the network (and loss, gradients, updates) on this signature
  std::vector<Shape> shapes;  ///< the full input signature
  std::vector<DType> dtypes;  ///< the dtype of each input column
  int splits = 1;             ///< row blocks each batch is cut into
  std::vector<std::vector<int>> inputs;  ///< [split][column]: Input node ids
  std::vector<int> wholes;               ///< [column]: Input fed the whole batch, when split
  std::vector<int> fetches;              ///< filled by the builder
  /// When set, the part of column c of a batch that this rank is fed (semi-auto parallel: its
  /// block of the global batch, train/semi_auto_step.h); else the column itself.
  std::function<Tensor(size_t c, const Tensor& column)> shard_input;
  std::unique_ptr<Runtime> runtime;  ///< the actors that run `graph`

  /// True if the inputs have the shapes and dtypes this program was built for.
  bool accepts(const std::vector<Tensor>& in) const;
  /// (input node, tensor) pairs for the runtime: each column cut into `splits` row views
  /// (and, when split, also whole).
  void feeds(const std::vector<Tensor>& in, Runtime::Feeds& out) const;
};

/// Adds the program's ops for the inputs (parts[split][column]) and sets program.fetches.
using ProgramBuilder =
    std::function<void(GraphBuilder& b, const std::vector<std::vector<Value>>& parts, Program& program)>;

/// Programs by input signature, each built on first use.
class ProgramCache {
 public:
  /// `splits` is the number of row blocks wanted per batch (1 = none); a batch that does not
  /// divide evenly gets one block.
  ProgramCache(ProgramBuilder build, ParameterList params, ExecOptions opts, int splits = 1)
      : build_(std::move(build)), params_(std::move(params)), opts_(opts), splits_(splits) {}
  /// The program for these inputs' signature, built and bound on first use: every parameter
  /// the network read while building (train/parameter_record.h) and `params`.
  Program& get(const std::vector<Tensor>& inputs);
  /// Runs the program for these inputs; returns its fetches (valid until the next run).
  const std::vector<Tensor>& run(const std::vector<Tensor>& inputs);
  /// The most recently used program, or nullptr.
  Program* last() { return last_; }

 private:
  ProgramBuilder build_;
  ParameterList params_;
  ExecOptions opts_;
  int splits_;
  std::map<std::string, std::unique_ptr<Program>> programs_;
  Program* last_ = nullptr;
  Runtime::Feeds feeds_;
};

}  // namespace sf
