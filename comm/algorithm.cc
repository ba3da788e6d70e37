#include "comm/algorithm.h"

#include "core/error.h"

namespace sf::comm {

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kRecursiveDoubling: return "recursive_doubling";
    case Algorithm::kBinomialTree: return "binomial_tree";
    case Algorithm::kPairwise: return "pairwise";
    case Algorithm::kDissemination: return "dissemination";
  }
  return "invalid";
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "AllReduce";
    case Collective::kAllGather: return "AllGather";
    case Collective::kReduceScatter: return "ReduceScatter";
    case Collective::kBroadcast: return "Broadcast";
    case Collective::kAllToAll: return "AlltoAll";
    case Collective::kBarrier: return "Barrier";
  }
  return "invalid";
}

Algorithm choose_algorithm(Collective c, int64_t nbytes, int /*group_size*/) {
  switch (c) {
    case Collective::kAllReduce: return nbytes <= kSmallAllReduceBytes ? Algorithm::kRecursiveDoubling : Algorithm::kRing;
    case Collective::kAllGather:
    case Collective::kReduceScatter: return Algorithm::kRing;
    case Collective::kBroadcast: return Algorithm::kBinomialTree;
    case Collective::kAllToAll: return Algorithm::kPairwise;
    case Collective::kBarrier: return Algorithm::kDissemination;
  }
  return Algorithm::kAuto;
}

Algorithm resolve_algorithm(Collective c, Algorithm requested, int64_t nbytes, int group_size) {
  if (requested == Algorithm::kAuto) return choose_algorithm(c, nbytes, group_size);
  bool ok = false;
  switch (c) {
    case Collective::kAllReduce: ok = requested == Algorithm::kRing || requested == Algorithm::kRecursiveDoubling; break;
    case Collective::kAllGather:
    case Collective::kReduceScatter: ok = requested == Algorithm::kRing; break;
    case Collective::kBroadcast: ok = requested == Algorithm::kBinomialTree; break;
    case Collective::kAllToAll: ok = requested == Algorithm::kPairwise; break;
    case Collective::kBarrier: ok = requested == Algorithm::kDissemination; break;
  }
  SF_ENFORCE(ok, InvalidArgument, "{}: algorithm '{}' does not implement this collective", collective_name(c),
             algorithm_name(requested));
  return requested;
}

}  // namespace sf::comm
