// label_at: the class label of one row of a loss's labels, refused unless it names a real class
// [0, classes): past that it would index outside the row, or name a padding column of a padded
// vocabulary, and the loss would be that of no class. Shared by the whole-row loss (loss.cc) and
// the class-block losses (sharded_cross_entropy.cc).
#pragma once

#include <cstdint>

#include <shardflow/core/error.h>
#include <shardflow/ops/graph.h>

namespace sf {

inline int32_t label_at(const Node& n, const int32_t* labels, int64_t r, int64_t classes) {
  const int32_t l = labels[r];
  SF_ENFORCE(l >= 0 && l < classes, InvalidArgument, "{}: label {} of row {} is out of range [0, {})", node_label(n),
             l, r, classes);
  return l;
}

}  // namespace sf
