#include <shardflow/comm/algorithm.h>

#include <shardflow/comm/native_collectives.h>
#include <shardflow/comm/transport.h>
#include <shardflow/core/error.h>

namespace sf::comm {

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kRecursiveDoubling: return "recursive_doubling";
    case Algorithm::kBinomialTree: return "binomial_tree";
    case Algorithm::kPairwise: return "pairwise";
    case Algorithm::kDissemination: return "dissemination";
    case Algorithm::kNative: return "native";
    case Algorithm::kByReference: return "by_reference";
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

TransportCaps transport_caps(Transport& transport, Collective c, int64_t count) {
  NativeCollectives* native = transport.native_collectives();
  const bool supported = c != Collective::kBarrier && native != nullptr && native->supports(c, count);
  return {.by_reference = transport.passes_by_reference(),
          .native = supported,
          .native_preferred = supported && native->prefers(c, count)};
}

namespace {
// The five data collectives, which have native and by-reference forms; Barrier has neither.
bool moves_data(Collective c) { return c != Collective::kBarrier; }
}  // namespace

Algorithm choose_algorithm(Collective c, int64_t nbytes, int group_size, TransportCaps caps) {
  if (moves_data(c) && caps.native && caps.native_preferred) return Algorithm::kNative;
  if (moves_data(c) && caps.by_reference && nbytes >= kByReferenceMinBytes) return Algorithm::kByReference;
  switch (c) {
    case Collective::kAllReduce:
      return nbytes <= small_all_reduce_bytes(group_size) ? Algorithm::kRecursiveDoubling : Algorithm::kRing;
    case Collective::kAllGather:
    case Collective::kReduceScatter: return Algorithm::kRing;
    case Collective::kBroadcast: return Algorithm::kBinomialTree;
    case Collective::kAllToAll: return Algorithm::kPairwise;
    case Collective::kBarrier: return Algorithm::kDissemination;
  }
  return Algorithm::kAuto;
}

Algorithm resolve_algorithm(Collective c, Algorithm requested, int64_t nbytes, int group_size, TransportCaps caps) {
  if (requested == Algorithm::kAuto) return choose_algorithm(c, nbytes, group_size, caps);
  SF_ENFORCE(requested != Algorithm::kNative || !moves_data(c) || caps.native, InvalidArgument,
             "{}: algorithm 'native' needs a transport with its own collectives for this call (mpi)",
             collective_name(c));
  SF_ENFORCE(requested != Algorithm::kByReference || !moves_data(c) || caps.by_reference, InvalidArgument,
             "{}: algorithm 'by_reference' needs a transport that passes tensors by reference (inproc)",
             collective_name(c));
  if (moves_data(c) && (requested == Algorithm::kNative || requested == Algorithm::kByReference)) return requested;
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

int64_t Transport::segment_bytes() const { return kSegmentBytes; }

}  // namespace sf::comm
