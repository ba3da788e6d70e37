/// @file
/// The membership protocol of elastic jobs (docs/elastic.md): after a peer is lost, the
/// survivors agree among themselves, over the links they still have, on who is left and on the
/// step to go back to, then open a new world of just them. No coordinator: every survivor runs
/// the same rounds and reaches the same answer; the lowest rank has no special part in the
/// agreement, so any rank may die, rank 0 included, during a step or during the agreement itself.
/// Rank 0 only also holds the world's door (JoinDoor), and a replacement that asked there joins
/// the world the agreement makes.
///
/// A round: each survivor sends every rank it believes alive the set of lost ranks it knows and
/// the last step it committed, under membership tags (comm/transport.h: a Transport::interrupt
/// leaves them working), then waits for the same from each of them. A wait gives up the round
/// as soon as this rank's transport reports a new loss, so no survivor waits on one that has
/// moved to a later round. When every proposal of a round names the same lost set as its own,
/// a survivor decides: the members are the ranks not lost, in their old order (its new rank is
/// its index), and the step is the least one committed among them. Survivors that decide in
/// the same round received the same proposals, so they decide the same. The members then
/// swap the addresses of the new world's endpoints (Transport::seed_next_world) and link; a
/// member lost meanwhile sends the others back to the next round with it added.
///
/// Joins: rank 0's proposal also says how many replacements it admits (0 or 1). When it does,
/// the new world has one more rank, the last; once the members' addresses are swapped, rank 0
/// gives them to the joiner at the door and relays its answer to the members, and all link.
/// A joiner that does not answer sends everyone to the next round without it.
///
/// Threading: called by one thread of the rank, while nothing else of the rank uses `world`.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <shardflow/comm/transport.h>

namespace sf::comm {

/// What one survivor brings to the agreement.
struct MembershipInput {
  /// The generation of `world`: 0 for the job's first world, one more for each change.
  uint32_t generation = 0;
  /// The last step this rank committed (its newest consistent state).
  int64_t committed_step = 0;
  /// Peers this rank knows are lost (more are read from the transport as they are lost).
  std::vector<int> lost;
  /// How long a survivor waits for a peer that is alive but silent before counting it lost
  /// (a frozen peer is lost sooner, by its heartbeat).
  std::chrono::milliseconds timeout{60000};
  /// How long the members of a decided world wait for each other's links (and the door's
  /// holder for a joiner's answer).
  std::chrono::milliseconds link_timeout{5000};
  /// Joins (rank 0 only, which holds the world's door): the door and the requests it holds.
  /// At most one joiner enters per change, and only while the world has fewer than max_size
  /// ranks; the other requests stay with the door.
  JoinDoor* door = nullptr;
  std::vector<JoinRequest> joining;  ///< the door's requests, oldest first
  int max_size = 0;                  ///< the most ranks the job may have (0: no joins)
  /// Every rank's label (the launcher's rank numbers), by rank, for a joiner's admission;
  /// empty: the ranks themselves.
  std::vector<int> labels;
};

/// The agreed change.
struct MembershipChange {
  /// Ranks of the old world that are gone, ascending.
  std::vector<int> lost;
  /// Ranks of the old world that form the new one, ascending: new rank i is old rank members[i].
  std::vector<int> members;
  /// This rank's rank in the new world.
  int rank = 0;
  /// The least step committed among the members: where they all go back to.
  int64_t step = 0;
  /// The labels of the ranks that joined (JoinRequest::label): new ranks members.size() on.
  std::vector<int> joined;
  /// Rank 0: the door's requests this change did not admit, oldest first (the door may serve
  /// the next world, whose rank 0 this rank stays).
  std::vector<JoinRequest> waiting;
  /// Rounds it took (1 when every survivor saw the same losses at once).
  int rounds = 0;
  /// This rank's endpoint of the new world (members.size() ranks, generation + 1).
  std::shared_ptr<Transport> transport;
};

/// The tag under which the door's holder tells the other ranks that a replacement asks to join:
/// each then stops its step and enters the agreement as after a loss.
inline Tag join_notice_tag() { return membership_tag(0xffffffffu, 0); }

/// The peers of `world` that are gone, lost or closed, ascending: what a survivor counts as
/// lost.
std::vector<int> gone_peers(const Transport& world);

/// Runs the agreement on `world` after a loss. A peer that closed its endpoint counts as lost.
/// Throws InvalidArgument when `world` cannot change its membership (mpi, inproc), and Error
/// when this rank finds itself removed: no peer answered and at least one had closed its
/// endpoint, which is what a rank sees when the others went on without it. (A rank frozen past
/// the heartbeat sees its peers lost instead; the caller notices its own freeze, see
/// train/elastic_train.h.)
MembershipChange agree_membership(Transport& world, const MembershipInput& in);

}  // namespace sf::comm
