// Debug checks of the comm layer: when on, every collective first exchanges its signature
// (comm/detail/signature.h) with the other ranks of its group and refuses, on every rank,
// a call whose ranks disagree on the op, dtype, shape or options — naming which rank called
// what — before any data moves. Costs one small message round per collective, so it is off
// unless SF_COMM_DEBUG=1 is set or set_debug_checks(true) is called (sf::comm::init's
// --comm-debug does that).
//
// Threading: the flag is atomic; switch it before collectives are running.
#pragma once

namespace sf::comm {

bool debug_checks();
void set_debug_checks(bool on);

}  // namespace sf::comm
