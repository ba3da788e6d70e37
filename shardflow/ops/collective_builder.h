/// @file
/// CollectiveBuilder: adds collective ops on one communication group to a graph, one call per
/// MindSpore op (ops.AllReduce, ops.AllGather, ...), with MindSpore's argument names.
///
/// It fills in the attributes every collective carries, "group" and "group_size"
/// (ops/collective_attrs.h), so shape inference sees the group's size while ops/ stays
/// unaware of comm; actors/collective_context.h turns a comm::Group into the GroupRef taken
/// here. Rank ids are group ranks. Every call validates at once and throws an error naming the
/// op and the rule broken (an AlltoAll split dim not divisible by split_count, a root out of
/// range, NeighborExchangeV2 lengths larger than the input, ...).
///
/// Threading: as GraphBuilder (one thread while building). The GraphBuilder must outlive this.
#pragma once

#include <string>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_attrs.h>

namespace sf {

/// Adds collective ops on one communication group to a GraphBuilder's graph.
class CollectiveBuilder {
 public:
  /// Collectives on `group`, added through `b`.
  CollectiveBuilder(GraphBuilder& b, GroupRef group) : b_(b), group_(std::move(group)) {}

  /// The group every collective of this builder runs on.
  const GroupRef& group() const { return group_; }

  /// MindSpore's ops.AllReduce: the reduction of every rank's x; op: "sum", "prod", "max" or
  /// "min".
  Value all_reduce(Value x, const std::string& op = "sum");
  /// MindSpore's ops.AllGather: every rank's x concatenated along dim 0.
  Value all_gather(Value x);
  /// MindSpore's ops.ReduceScatter: the reduction of every rank's x, split along dim 0.
  Value reduce_scatter(Value x, const std::string& op = "sum");
  /// MindSpore's ops.Broadcast: x of rank `root_rank` on every rank.
  Value broadcast(Value x, int64_t root_rank);
  /// MindSpore's ops.AlltoAll: x split into `split_count` blocks along `split_dim`, block i
  /// sent to rank i, the received blocks concatenated along `concat_dim`.
  Value all_to_all(Value x, int64_t split_count, int64_t split_dim, int64_t concat_dim);
  /// xs[i] (of shape send_shapes[i]) goes to send_rank_ids[i]; returns one value per
  /// recv_rank_ids entry. Packs and unpacks around one NeighborExchange node
  /// (ops/kernels/neighbor_exchange_ops.cc says why).
  std::vector<Value> neighbor_exchange(const std::vector<Value>& xs, const std::vector<int64_t>& send_rank_ids,
                                       const std::vector<int64_t>& recv_rank_ids, const std::vector<Shape>& recv_shapes,
                                       const std::vector<Shape>& send_shapes, DType recv_type = DType::kF32);
  /// MindSpore's ops.NeighborExchangeV2: exchanges the borders of an NCHW x with the (up to
  /// eight) neighbouring ranks and returns x grown by the received borders.
  Value neighbor_exchange_v2(Value x, const std::vector<int64_t>& send_rank_ids, const std::vector<int64_t>& send_lens,
                             const std::vector<int64_t>& recv_rank_ids, const std::vector<int64_t>& recv_lens,
                             const std::string& data_format = "NCHW");
  /// Returns Send's token (ops/kernels/send_receive_ops.cc).
  Value send(Value x, int64_t sr_tag, int64_t dest_rank);
  /// `virtual_input` orders the Receive after it (MindSpore's virtual input); none: a scalar Fill.
  Value receive(int64_t sr_tag, int64_t src_rank, const Shape& shape, DType dtype = DType::kF32,
                Value virtual_input = {});

 private:
  Attrs attrs() const { return {{"group", group_.name}, {"group_size", group_.size}}; }

  GraphBuilder& b_;
  GroupRef group_;
};

}  // namespace sf
