// Defaults shared by every collective's options struct.
#pragma once

#include <chrono>

namespace sf::comm {

// Per-operation timeout (MindSpore/HCCL's default is 300 s): a collective that has not
// finished by then fails with PeerLost naming the rank that stalled it.
inline constexpr std::chrono::milliseconds kDefaultTimeout{300'000};

}  // namespace sf::comm
