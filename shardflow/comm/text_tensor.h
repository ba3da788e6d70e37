/// @file
/// Text carried as a tensor: one i32 element per character, so that a short control message
/// (an address, a JSON header) travels over any Transport beside the data. Used by the
/// membership protocol (comm/membership.h) and the elastic state transfer
/// (train/state_transfer.h); a few KiB at most, where the 4x size does not matter.
///
/// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

#include <shardflow/core/tensor.h>

namespace sf::comm {

/// `s` as an i32 tensor of shape (s.size(),).
Tensor text_tensor(std::string_view s);
/// The text of a tensor text_tensor made: each i32 element's low byte, in order. An empty string
/// for a tensor that is not a 1-dimensional i32 tensor.
std::string tensor_text(const Tensor& t);

}  // namespace sf::comm
