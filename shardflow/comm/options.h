/// @file
/// Defaults shared by every collective's options struct.
#pragma once

#include <chrono>

namespace sf::comm {

/// Per-operation timeout (MindSpore/HCCL's default is 300 s): a collective that has not
/// finished by then fails with PeerLost naming the rank that stalled it.
inline constexpr std::chrono::milliseconds kDefaultTimeout{300'000};

/// The timeout options start with: SF_COMM_TIMEOUT (seconds, may be fractional) if set, else
/// kDefaultTimeout; set_default_timeout() (sf::comm::init's --comm-timeout) overrides both.
/// Thread-safe; applies to options created afterwards.
std::chrono::milliseconds default_timeout();
/// Sets the timeout default_timeout() returns from now on.
void set_default_timeout(std::chrono::milliseconds timeout);

}  // namespace sf::comm
