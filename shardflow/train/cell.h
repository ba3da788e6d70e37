/// @file
/// Cell: a piece of network that adds its ops to a graph (MindSpore's nn.Cell).
///
/// A cell owns Parameters and child cells under local names; the root's finalize() gives
/// every parameter its full dotted name ("dense_relu_sequential.0.weight", as MindSpore
/// prints them) and initialises it. Calling a cell pushes its name as a graph scope, so
/// its ops read "dense_relu_sequential/0/MatMul" in the IR.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/sharding/op_strategy.h>
#include <shardflow/train/parameter.h>
#include <shardflow/train/primitive.h>
#include <shardflow/train/rank_owner.h>

namespace sf::nn {

/// A piece of network that adds its ops to a graph (MindSpore's nn.Cell); subclasses
/// implement construct().
class Cell {
 public:
  virtual ~Cell() = default;

  /// Adds this cell's ops for input x; the value returned is the cell's output.
  virtual Value construct(GraphBuilder& b, Value x) = 0;
  /// Runs construct() inside this cell's scope. Claims the cell for the calling rank first
  /// (claim_for_calling_rank).
  Value operator()(GraphBuilder& b, Value x);
  /// Runs `body` as operator() runs construct(): claimed, finalized, inside this cell's scope and
  /// pipeline stage. For a construct that takes other inputs than one value (the Python
  /// binding's cells, whose construct may take several).
  void call_scoped(GraphBuilder& b, const std::function<void()>& body);

  /// One network per rank: with several ranks in this process (--devices N), the first rank
  /// that uses this cell owns it until its job ends, and a use from another rank is refused
  /// with InvalidArgument "network 'Network' is already used by rank 0 in this process; ..."
  /// (train/rank_owner.h). Model, value_and_grad and every call of the cell check it; the same
  /// rank may reuse a network, and a process with one rank or none is never refused.
  void claim_for_calling_rank();

  /// Every parameter of this cell and its children, in registration order, named and
  /// initialised (the first call finalizes with the global seed): MindSpore's get_parameters,
  /// what a checkpoint or an evaluation binds.
  ParameterList get_parameters();
  /// Those of get_parameters() that require a gradient: what an optimizer steps.
  ParameterList trainable_params();
  /// Those that do not (BatchNorm's moving statistics): updated by in-place ops of the graph.
  ParameterList untrainable_params();
  /// Names and initialises the parameters under `prefix` ("" for the root).
  void finalize(const std::string& prefix, uint64_t seed);

  /// The graph node of a parameter, created on first use with the parameter's full name.
  Value param(GraphBuilder& b, Parameter& p);

  /// Every op strategy of this cell and its children, keyed by node name: the shard() calls of
  /// their primitives (for the nodes those have added to a graph) and the shard(name, ...) calls.
  StrategyTable strategies() const;
  /// Shards the op named `op_name` in the graph ("fc1/MatMul" of an Mlp), for ops a cell adds
  /// without a Primitive; the same table a strategy file fills.
  void shard(const std::string& op_name, OpStrategy strategy) { strategies_[op_name] = std::move(strategy); }

  /// Pipeline parallel (seed 003, docs/pipeline.md): the stage this cell's ops run on; -1, the
  /// default, runs them on the stage of the cell that calls it. Stages must not decrease in
  /// execution order (checked when a PipelineCell builds its graph).
  void set_pipeline_stage(int stage) { pipeline_stage_ = stage; }
  /// The stage set_pipeline_stage() set, or -1.
  int pipeline_stage() const { return pipeline_stage_; }
  /// The trainable parameters the stages in `stages` read: those of cells on them and those added to one
  /// of them with Parameter::add_pipeline_stage (MindSpore's infer_param_pipeline_stage() with
  /// the calling rank's stages: train/pipeline_cell.h).
  ParameterList params_of_stages(const std::vector<int>& stages);
  /// The parameters of the calling rank's stages (MindSpore's infer_param_pipeline_stage): with
  /// p = pipeline_stages and v = pipeline_interleave from the parallel context, rank r runs
  /// stage s = r / (devices / p) and, interleaved, s + p, ..., s + (v-1)·p. All parameters when
  /// p = 1.
  ParameterList infer_param_pipeline_stage();

  /// Training or inference behaviour for this cell and its children (MindSpore's set_train;
  /// BatchNorm2d uses the batch's statistics and adds their moving-average updates only when
  /// training). Read when construct() runs: a graph already built keeps the mode it was built
  /// in. Cells start in training mode, as PyTorch's modules do (MindSpore's start in inference
  /// mode and Model sets them).
  void set_train(bool mode = true);
  /// Whether the cell is in training mode (set_train).
  bool training() const { return training_; }

  /// The cell's name as a graph scope (its parent sets it to the name it registers it under).
  const std::string& scope_name() const { return scope_; }
  /// Sets scope_name().
  void set_scope_name(std::string s) { scope_ = std::move(s); }

 protected:
  /// The returned reference stays valid for the cell's lifetime. requires_grad = false
  /// registers a non-trainable parameter (see Parameter).
  Parameter& register_parameter(const std::string& name, Shape shape, const std::string& init,
                                bool requires_grad = true);
  /// Registers a parameter made outside the cell (the Python binding's Parameter objects); it
  /// is named and initialised with the cell's others.
  Parameter& register_parameter(const std::string& name, Parameter p);
  /// The returned reference stays valid for the cell's lifetime.
  Primitive& register_primitive(const std::string& instance_name, const std::string& op, Attrs attrs = {});
  /// Adds `cell` as a child named `name` (its scope name); returns it.
  template <class C>
  std::shared_ptr<C> register_cell(const std::string& name, std::shared_ptr<C> cell) {
    cell->set_scope_name(name);
    children_.emplace_back(name, cell);
    return cell;
  }

 private:
  std::string scope_;
  std::deque<std::pair<std::string, Parameter>> params_;  ///< deque: references stay valid
  std::vector<std::pair<std::string, std::shared_ptr<Cell>>> children_;
  std::deque<Primitive> primitives_;
  StrategyTable strategies_;
  bool finalized_ = false;
  bool training_ = true;
  int pipeline_stage_ = -1;
  RankOwner rank_owner_;
};

/// A shared cell, as a parent holds its children.
using CellPtr = std::shared_ptr<Cell>;

}  // namespace sf::nn
