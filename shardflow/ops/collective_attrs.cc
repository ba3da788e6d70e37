#include <shardflow/ops/collective_attrs.h>

#include <array>
#include <string_view>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

namespace {
constexpr std::array<std::string_view, 10> kCollectiveOps = {
    "AllReduce",        "AllGather",          "ReduceScatter",          "Broadcast", "AlltoAll",
    "NeighborExchange", "NeighborExchangeV2", "NeighborExchangeV2Grad", "Send",      "Receive"};
}  // namespace

bool is_collective(const Node& n) {
  for (std::string_view op : kCollectiveOps)
    if (n.op == op) return true;
  return false;
}

GroupRef group_of(const Node& n) {
  GroupRef g{n.attrs.get_str("group"), n.attrs.get_int("group_size", 0)};
  SF_ENFORCE(!g.name.empty(), InvalidArgument, "{}: attribute 'group' (the communication group's name) is missing",
             node_label(n));
  SF_ENFORCE(g.size >= 1, InvalidArgument,
             "{}: attribute 'group_size' of group '{}' must be >= 1, got {} (build collectives with "
             "CollectiveBuilder, which sets it)",
             node_label(n), g.name, g.size);
  return g;
}

std::vector<int64_t> encode_shapes(const std::vector<Shape>& shapes) {
  std::vector<int64_t> out;
  for (const Shape& s : shapes) {
    out.push_back(static_cast<int64_t>(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

std::vector<Shape> decode_shapes(const Node& n, const std::string& key) {
  const std::vector<int64_t> flat = n.attrs.get_ints(key);
  std::vector<Shape> out;
  for (size_t i = 0; i < flat.size();) {
    const int64_t rank = flat[i++];
    SF_ENFORCE(rank >= 0 && static_cast<size_t>(rank) <= flat.size() - i, InvalidArgument,
               "{}: attribute '{}' is not a list of shapes (each its rank, then its dims)", node_label(n), key);
    Shape s(flat.begin() + static_cast<std::ptrdiff_t>(i), flat.begin() + static_cast<std::ptrdiff_t>(i + rank));
    for (int64_t d : s)
      SF_ENFORCE(d >= 0, InvalidArgument, "{}: attribute '{}' holds shape {} with a negative dim", node_label(n), key,
                 brief_shape(s));
    out.push_back(std::move(s));
    i += static_cast<size_t>(rank);
  }
  return out;
}

DType dtype_attr(const Node& n, const std::string& key, DType def) {
  const std::string dt = n.attrs.get_str(key, std::string(dtype_name(def)));
  SF_ENFORCE(dt == "f32" || dt == "i32", InvalidArgument, "{}: attribute '{}' = '{}' is not a dtype (f32 or i32)",
             node_label(n), key, dt);
  return dt == "f32" ? DType::kF32 : DType::kI32;
}

void refuse_outside_runtime(const Node& n, const std::vector<Tensor>&, Tensor&) {
  SF_THROW(InvalidArgument,
           "{}: a collective op runs only in the actor runtime (actors/runtime.h), whose CollectiveContext maps "
           "group '{}' to this rank's comm group; the sequential Executor cannot run it",
           node_label(n), n.attrs.get_str("group"));
}

}  // namespace sf
