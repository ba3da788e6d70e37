// Signature: what one rank says it is calling at a group's sequence number — the collective,
// the dtype and shape of its tensor, and the options every rank must share (reduce op, root,
// split_count, ...). In debug mode (comm/debug.h) ranks exchange signatures before any data
// moves, so a mismatch becomes one clear error on every rank, naming which rank called what,
// instead of wrong numbers or a timeout.
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::comm::detail {

struct Signature {
  std::string op;
  bool has_tensor = false;
  DType dtype = DType::kF32;
  Shape shape;
  // False for collectives whose ranks may pass different shapes (NeighborExchange): only the
  // dtype is compared then.
  bool shape_must_match = true;
  // Option values that every rank must agree on, with their names for the message.
  std::vector<std::pair<std::string, int64_t>> params;

  static Signature of(std::string_view op, const Tensor& t, bool shape_must_match = true);
  static Signature bare(std::string_view op);  // no tensor (Barrier)
  Signature& with(std::string name, int64_t value);

  // "AllReduce f32(4, 8) op=0" — as it appears in errors and the flight recorder.
  std::string describe() const;
  // Whether two ranks calling these could take part in one collective.
  bool matches(const Signature& other) const;

  // Wire form: an i32 tensor (transports carry tensors only).
  Tensor encode() const;
  // Throws InvalidArgument on a malformed encoding.
  static Signature decode(const Tensor& t);
};

// The error text every rank builds from the same list of signatures (element i = group rank
// i's), grouping ranks that called the same thing: "rank 0 called AllReduce f32(4, 8);
// rank 1 called AllReduce f32(4, 9)". `world_ranks` maps group ranks to world ranks.
std::string describe_mismatch(const std::vector<Signature>& by_rank, const std::vector<int>& world_ranks);

}  // namespace sf::comm::detail
