/// @file
/// `sfckpt convert`: offline resharding of a committed checkpoint step to a job of N ranks
/// (MindSpore's transform_checkpoints). Without a strategy file every tensor is held whole on
/// every rank — what a 1-device or data parallel run loads. With one, each tensor the file
/// places (tools/sfckpt/strategy_placement.h) is saved under the layout the file's strategies
/// give it on N devices, so a job running those strategies reads only its own blocks; the
/// others stay whole, and the report names them.
#pragma once

#include <string>
#include <vector>

namespace sf::sfckpt {

/// What convert wrote.
struct ConvertReport {
  int placed = 0;                  ///< tensors saved under a strategy file's layouts
  std::vector<std::string> whole;  ///< with a strategy file, "<name> (<why>)" for each tensor left whole
};

/// Writes the step `src` names (DIR or DIR/step_<n>) to DST/step_<n>/ as a version-2
/// checkpoint saved by `devices` virtual ranks: each tensor whole, or, with `strategy_file`
/// (empty: none), under the layout that file gives it. The step, the manifest's state and,
/// where `devices` equals the saving job's size, each rank's state are kept. Throws UsageError
/// for a bad `devices`, a DST that already holds that step or a strategy file that does not
/// fit, sf::Error for a bad source — all before anything is written to DST.
ConvertReport convert(const std::string& src, const std::string& dst, int devices,
                      const std::string& strategy_file = "");

}  // namespace sf::sfckpt
