// Lowering of a compute-only schedule (F, B, W) into the one stages run: each F on a virtual
// stage after the first gets the RECV_F of its input just before it and each F before the last
// stage a SEND_F just after it; B likewise with RECV_B / SEND_B in the other direction. Sends
// never wait, so a receive placed right before the action that needs it cannot deadlock
// unless the compute order itself does — which simulate_schedule checks on the result.
//
// Threading: pure function.
#pragma once

#include <shardflow/pipeline/schedule.h>

namespace sf::pipeline {

// Throws InvalidArgument if the schedule already has transfers.
Schedule with_transfers(const Schedule& compute_only);

}  // namespace sf::pipeline
