// The kernels of the collective graph ops (ops/collective_attrs.h): one collective node run
// on this rank's comm group through the direct comm calls (comm/comm.h), so a graph and a
// direct call share one implementation. ops/ cannot hold these because it must not know
// comm. The group's collective actor (actors/collective_actor.h) calls it in program order.
//
// Threading: blocks the calling thread until the collective has finished, at most `timeout`
// (the comm call's own bound); throws what the comm call throws (InvalidArgument, ShapeError,
// PeerLost). The inputs are only read; the result is a fresh tensor with the node's shape.
#pragma once

#include <chrono>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

Tensor run_collective(const Node& n, const std::vector<Tensor>& inputs, const comm::Group& group,
                      std::chrono::milliseconds timeout);

}  // namespace sf
