#include <shardflow/ops/collective_builder.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

Value CollectiveBuilder::all_reduce(Value x, const std::string& op) {
  Attrs a = attrs();
  a.set("op", op);
  return b_.op("AllReduce", {x}, std::move(a));
}

Value CollectiveBuilder::all_gather(Value x) { return b_.op("AllGather", {x}, attrs()); }

Value CollectiveBuilder::reduce_scatter(Value x, const std::string& op) {
  Attrs a = attrs();
  a.set("op", op);
  return b_.op("ReduceScatter", {x}, std::move(a));
}

Value CollectiveBuilder::broadcast(Value x, int64_t root_rank) {
  Attrs a = attrs();
  a.set("root_rank", root_rank);
  return b_.op("Broadcast", {x}, std::move(a));
}

Value CollectiveBuilder::all_to_all(Value x, int64_t split_count, int64_t split_dim, int64_t concat_dim) {
  Attrs a = attrs();
  a.set("split_count", split_count).set("split_dim", split_dim).set("concat_dim", concat_dim);
  return b_.op("AlltoAll", {x}, std::move(a));
}

std::vector<Value> CollectiveBuilder::neighbor_exchange(const std::vector<Value>& xs,
                                                        const std::vector<int64_t>& send_rank_ids,
                                                        const std::vector<int64_t>& recv_rank_ids,
                                                        const std::vector<Shape>& recv_shapes,
                                                        const std::vector<Shape>& send_shapes, DType recv_type) {
  SF_ENFORCE(xs.size() == send_rank_ids.size() && xs.size() == send_shapes.size(), InvalidArgument,
             "NeighborExchange (group '{}'): {} inputs for {} send_rank_ids and {} send_shapes", group_.name,
             xs.size(), send_rank_ids.size(), send_shapes.size());
  std::vector<Value> flat;
  for (size_t i = 0; i < xs.size(); ++i) {
    SF_ENFORCE(b_.shape(xs[i]) == send_shapes[i], ShapeError,
               "NeighborExchange (group '{}'): input {} has shape {} but send_shapes[{}] is {}", group_.name, i,
               brief_shape(b_.shape(xs[i])), i, brief_shape(send_shapes[i]));
    flat.push_back(b_.reshape(xs[i], {numel(send_shapes[i])}));
  }
  Value packed = flat.empty() ? b_.fill({0}, 0.0f) : flat.size() == 1 ? flat[0] : b_.concat(flat, 0);
  Attrs a = attrs();
  a.set("send_rank_ids", send_rank_ids).set("recv_rank_ids", recv_rank_ids);
  a.set("send_shapes", encode_shapes(send_shapes)).set("recv_shapes", encode_shapes(recv_shapes));
  a.set("recv_type", std::string(dtype_name(recv_type)));
  const Value out = b_.op("NeighborExchange", {packed}, std::move(a));
  std::vector<Value> received;
  int64_t offset = 0;
  for (const Shape& s : recv_shapes) {
    const int64_t n = numel(s);
    received.push_back(b_.reshape(b_.strided_slice(out, {offset}, {offset + n}), s));
    offset += n;
  }
  return received;
}

Value CollectiveBuilder::neighbor_exchange_v2(Value x, const std::vector<int64_t>& send_rank_ids,
                                              const std::vector<int64_t>& send_lens,
                                              const std::vector<int64_t>& recv_rank_ids,
                                              const std::vector<int64_t>& recv_lens, const std::string& data_format) {
  Attrs a = attrs();
  a.set("send_rank_ids", send_rank_ids).set("send_lens", send_lens);
  a.set("recv_rank_ids", recv_rank_ids).set("recv_lens", recv_lens);
  a.set("data_format", data_format);
  return b_.op("NeighborExchangeV2", {x}, std::move(a));
}

Value CollectiveBuilder::send(Value x, int64_t sr_tag, int64_t dest_rank) {
  Attrs a = attrs();
  a.set("sr_tag", sr_tag).set("dest_rank", dest_rank);
  return b_.op("Send", {x}, std::move(a));
}

Value CollectiveBuilder::receive(int64_t sr_tag, int64_t src_rank, const Shape& shape, DType dtype,
                                 Value virtual_input) {
  Attrs a = attrs();
  a.set("sr_tag", sr_tag).set("src_rank", src_rank).set("shape", shape);
  a.set("dtype", std::string(dtype_name(dtype)));
  if (!virtual_input.valid()) virtual_input = b_.fill({}, 0.0f);
  return b_.op("Receive", {virtual_input}, std::move(a));
}

}  // namespace sf
