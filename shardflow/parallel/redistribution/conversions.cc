#include <shardflow/parallel/redistribution/conversion.h>

namespace sf {

const std::vector<Conversion>& conversions() {
  static const std::vector<Conversion> kAll{kPartialToReplicated, kPartialToSplit,    kSplitToReplicated,
                                            kSplitToSplit,        kReplicatedToSplit, kReplicatedToPartial};
  return kAll;
}

const Conversion& conversion(StepKind kind) { return conversions().at(static_cast<size_t>(kind)); }

}  // namespace sf
