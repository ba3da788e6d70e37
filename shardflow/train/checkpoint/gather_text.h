/// @file
/// all_gather_text: every rank of the calling rank's world contributes a string and receives
/// all of them, by rank — the small control messages of a checkpoint's collective save (what
/// each rank holds, what it wrote, whether rank 0 committed). Carried by the comm layer's
/// AllGather as i32 words (lengths first, then the texts padded to the longest), so it runs
/// over every transport. On a thread with no rank, or a world of one, it returns {text}.
///
/// Threading: as comm::all_gather: every rank of the world calls it, in the same order.
#pragma once

#include <string>
#include <vector>

namespace sf::ckpt {

/// Every rank's `text`, indexed by world rank. Throws PeerLost if a rank does not take part
/// within the comm layer's timeout.
std::vector<std::string> all_gather_text(const std::string& text);

}  // namespace sf::ckpt
