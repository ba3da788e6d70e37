/// @file
/// Fault points: named places of a training step where a kill test makes a rank die on purpose,
/// so that each phase a rank can die in is hit for certain rather than by a random moment's
/// chance (tests/elastic/kill_matrix.py, scenario "phases"; docs/elastic.md, "Tests"):
///   "step"        a step's start, as its batch is fed to the forward (Model::train);
///   "collective"  a message a collective sends (comm/detail/call.h): the gradient AllReduce of
///                 backward, tensor parallel's collectives, a checkpoint save's agreement;
///   "optimizer"   the update: halfway through Optimizer::step's parameters, or an in-graph SGD
///                 update op (data parallel's Model::train);
///   "save"        a checkpoint save, before this rank writes its file.
///
/// SF_FAULT_AT="NAME:N:RANK" makes the process whose SF_RANK (sfrun's rank) is RANK SIGKILL
/// itself the Nth time it passes fault_point("NAME"). Unset — always, outside the tests — a fault
/// point costs a load and a branch. A malformed value is reported once on stderr and arms
/// nothing: a fault point cannot throw where it stands (inside kernels and noexcept writers).
///
/// Threading: any thread; the count is atomic.
#pragma once

namespace sf {

/// Passes the fault point `name` (see the file comment).
void fault_point(const char* name);

}  // namespace sf
