// `sfckpt convert`: offline resharding of a committed checkpoint step to a job of N ranks,
// every tensor held whole (replicated) on every rank — what a 1-device or data parallel run
// loads. Strategy files name ops, not tensors, so per-tensor layouts from one are not
// supported; the command line refuses --strategy-file.
#pragma once

#include <string>

namespace sf::sfckpt {

/// Writes the step `src` names (DIR or DIR/step_<n>) to DST/step_<n>/ as a version-2
/// checkpoint saved by `devices` virtual ranks, each tensor whole. Throws UsageError for a bad
/// `devices` or a DST that already holds that step, sf::Error for a bad source.
void convert(const std::string& src, const std::string& dst, int devices);

}  // namespace sf::sfckpt
