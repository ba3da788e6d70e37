/// @file
/// Pipeline parallel's cells (seed 003): WithLossCell puts a loss on a network, PipelineCell
/// splits each batch into micro_size micro-batches that flow through the network's pipeline
/// stages (docs/pipeline.md). The loss of a step is the sum of the micro-batches' losses, as
/// MindSpore's PipelineCell computes it, and so are the gradients.
///
/// @code
///   sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
///                                  .gradients_mean = true, .dataset_strategy = "full_batch",
///                                  .pipeline_stages = 2});
///   net.layer3->set_pipeline_stage(1); ...
///   sf::nn::PipelineCell net_pipeline(sf::nn::WithLossCell(net, sf::nn::CrossEntropyLoss()), 2);
///   sf::Model model(net_pipeline, sf::nn::Momentum(net.infer_param_pipeline_stage(), 0.01f, 0.9f));
/// @endcode
#pragma once

#include <memory>

#include <shardflow/train/cell.h>
#include <shardflow/train/losses.h>

namespace sf::nn {

/// A network with its loss (MindSpore's nn.WithLossCell): (data, label) -> scalar loss.
class WithLossCell {
 public:
  /// `net` must outlive the cell.
  WithLossCell(Cell& net, std::shared_ptr<LossFn> loss) : net_(&net), loss_(std::move(loss)) {}
  /// `net` and a copy of `loss`: WithLossCell(net, CrossEntropyLoss()).
  template <class Loss, class = std::enable_if_t<std::is_base_of_v<LossFn, Loss>>>
  WithLossCell(Cell& net, Loss loss) : WithLossCell(net, std::make_shared<Loss>(std::move(loss))) {}

  /// Adds the network and its loss; returns the scalar loss.
  Value operator()(GraphBuilder& b, Value data, Value label) { return (*loss_)(b, (*net_)(b, data), label); }
  /// The network, without the loss.
  Cell& network() { return *net_; }
  /// The loss.
  const std::shared_ptr<LossFn>& loss() const { return loss_; }

 private:
  Cell* net_;
  std::shared_ptr<LossFn> loss_;
};

/// MindSpore's PipelineCell: a network with its loss, each batch split into micro_size
/// micro-batches that flow through its pipeline stages.
class PipelineCell {
 public:
  /// Throws InvalidArgument for micro_size < 1; Model refuses one below the number of stages.
  PipelineCell(WithLossCell net_with_loss, int micro_size);
  /// The network with its loss.
  WithLossCell& net_with_loss() { return net_with_loss_; }
  /// The number of micro-batches a batch is split into.
  int micro_size() const { return micro_size_; }

 private:
  WithLossCell net_with_loss_;
  int micro_size_;
};

}  // namespace sf::nn
