#include <shardflow/train/pipeline_cell.h>

#include <shardflow/core/error.h>

namespace sf::nn {

PipelineCell::PipelineCell(WithLossCell net_with_loss, int micro_size)
    : net_with_loss_(std::move(net_with_loss)), micro_size_(micro_size) {
  SF_ENFORCE(micro_size >= 1, InvalidArgument, "PipelineCell: micro_size must be >= 1, got {}", micro_size);
}

}  // namespace sf::nn
