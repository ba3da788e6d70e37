// CollectiveBuilder: adds collective ops on one communication group to a graph, one call per
// MindSpore op (ops.AllReduce, ops.AllGather, ...), with MindSpore's argument names.
//
// It fills in the attributes every collective carries, "group" and "group_size"
// (ops/collective_attrs.h), so shape inference sees the group's size while ops/ stays
// unaware of comm; actors/collective_context.h turns a comm::Group into the GroupRef taken
// here. Rank ids are group ranks. Every call validates at once and throws an error naming the
// op and the rule broken (an AlltoAll split dim not divisible by split_count, a root out of
// range, NeighborExchangeV2 lengths larger than the input, ...).
//
// Threading: as GraphBuilder (one thread while building). The GraphBuilder must outlive this.
#pragma once

#include <string>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_attrs.h>

namespace sf {

class CollectiveBuilder {
 public:
  CollectiveBuilder(GraphBuilder& b, GroupRef group) : b_(b), group_(std::move(group)) {}

  const GroupRef& group() const { return group_; }

  // op: "sum", "prod", "max" or "min".
  Value all_reduce(Value x, const std::string& op = "sum");
  Value all_gather(Value x);
  Value reduce_scatter(Value x, const std::string& op = "sum");
  Value broadcast(Value x, int64_t root_rank);
  Value all_to_all(Value x, int64_t split_count, int64_t split_dim, int64_t concat_dim);
  // xs[i] (of shape send_shapes[i]) goes to send_rank_ids[i]; returns one value per
  // recv_rank_ids entry. Packs and unpacks around one NeighborExchange node
  // (ops/kernels/neighbor_exchange_ops.cc says why).
  std::vector<Value> neighbor_exchange(const std::vector<Value>& xs, const std::vector<int64_t>& send_rank_ids,
                                       const std::vector<int64_t>& recv_rank_ids, const std::vector<Shape>& recv_shapes,
                                       const std::vector<Shape>& send_shapes, DType recv_type = DType::kF32);
  Value neighbor_exchange_v2(Value x, const std::vector<int64_t>& send_rank_ids, const std::vector<int64_t>& send_lens,
                             const std::vector<int64_t>& recv_rank_ids, const std::vector<int64_t>& recv_lens,
                             const std::string& data_format = "NCHW");
  // Returns Send's token (ops/kernels/send_receive_ops.cc).
  Value send(Value x, int64_t sr_tag, int64_t dest_rank);
  // `virtual_input` orders the Receive after it (MindSpore's virtual input); none: a scalar Fill.
  Value receive(int64_t sr_tag, int64_t src_rank, const Shape& shape, DType dtype = DType::kF32,
                Value virtual_input = {});

 private:
  Attrs attrs() const { return {{"group", group_.name}, {"group_size", group_.size}}; }

  GraphBuilder& b_;
  GroupRef group_;
};

}  // namespace sf
