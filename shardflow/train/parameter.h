/// @file
/// Parameter: a named trainable tensor shared by the cell that owns it, the optimizer that
/// updates it and the runtime that reads it (a handle: copies refer to the same tensor).
/// Under semi-auto parallel a rank holds only its block of the tensor: shape() stays the full
/// (global) shape the network is built with, value() is the block.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf {

/// A trainable (or stored) tensor of a cell, with its name, initializer and sharding; copies
/// share it.
class Parameter {
 public:
  Parameter() = default;  ///< no parameter; defined() is false
  /// `init` names an initializer (train/initializer.h); values are generated when the
  /// parameter gets its full name, because the name selects its random stream.
  /// requires_grad = false makes a non-trainable parameter (MindSpore's requires_grad=False,
  /// e.g. BatchNorm's moving statistics): bound and saved like any other, but neither
  /// differentiated nor stepped (Cell::trainable_params leaves it out).
  Parameter(Shape shape, std::string init, bool requires_grad = true);

  /// False for a default-constructed Parameter.
  bool defined() const { return data_ != nullptr; }
  /// The full name, e.g.\ "fc1.weight" (empty until finalize()).
  const std::string& name() const { return data_->name; }
  /// The full shape, as the network sees it; value().shape() is the block this rank holds.
  const Shape& shape() const { return data_->shape; }
  ///@{
  /// The value this rank holds (the whole tensor, or its block when sharded).
  Tensor& value() { return data_->value; }
  const Tensor& value() const { return data_->value; }
  ///@}
  /// The initializer's name.
  const std::string& init() const { return data_->init; }
  /// Whether the value has been generated (by finalize()).
  bool initialized() const { return data_->initialized; }
  /// False for a non-trainable parameter.
  bool requires_grad() const { return data_->requires_grad; }

  /// Sets the full name and, the first time, fills the value from (seed, name).
  void finalize(const std::string& full_name, uint64_t seed);
  /// Keeps only the block of shape `block` at `offset`, generated from the initializer at each
  /// element's global index, so it equals that block of the unsharded initial value and the full
  /// tensor is never needed. Done once, before the first step; sharding again at the same block
  /// does nothing, at another is refused (InvalidArgument naming the parameter).
  void shard(const std::vector<int64_t>& offset, const Shape& block);
  /// Whether shard() has cut it to a block.
  bool sharded() const { return data_->sharded; }
  /// Where the block held starts in the full tensor (empty when not sharded).
  const std::vector<int64_t>& offset() const { return data_->offset; }
  /// The same parameter (copies share it).
  bool operator==(const Parameter& o) const { return data_ == o.data_; }

  /// Pipeline parallel: a parameter read by cells on several stages is added to each extra
  /// stage (MindSpore's add_pipeline_stage), so that infer_param_pipeline_stage() gives it to
  /// those stages' optimizers; its gradient is then summed over the stages.
  void add_pipeline_stage(int stage);
  /// The stages add_pipeline_stage() added.
  const std::vector<int>& pipeline_stages() const { return data_->pipeline_stages; }

 private:
  struct Data {
    std::string name;
    std::string init;
    Shape shape;  ///< full
    Tensor value;
    bool initialized = false;
    bool requires_grad = true;
    uint64_t seed = 0;
    bool sharded = false;
    std::vector<int64_t> offset;  ///< of the block held, when sharded
    std::vector<int> pipeline_stages;  ///< added with add_pipeline_stage
  };
  std::shared_ptr<Data> data_;
};

/// A list of parameters, e.g.\ a cell's trainable_params().
using ParameterList = std::vector<Parameter>;

/// The global seed (MindSpore's set_seed): parameter initialisation and shuffles derive from it.
void set_seed(uint64_t seed);
/// The global seed set_seed() set.
uint64_t get_seed();

}  // namespace sf
