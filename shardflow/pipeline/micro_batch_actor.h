// The actor of one micro-batch on one virtual stage: answers PhaseRequests (pipeline/messages.h)
// by running the phase on its MicroBatch, which holds the micro-batch's stash.
#pragma once

#include <caf/event_based_actor.hpp>
#include <memory>

#include <shardflow/pipeline/micro_batch.h>

namespace sf::pipeline {

caf::behavior micro_batch_actor(caf::event_based_actor* self, std::shared_ptr<MicroBatch> micro_batch);

}  // namespace sf::pipeline
