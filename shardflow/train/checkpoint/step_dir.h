/// @file
/// The names in a checkpoint directory DIR (docs/checkpoint_format.md, version 2): one
/// DIR/step_<n>/ per saved step, committed once its manifest.json exists, and DIR/latest, a
/// small file holding "step_<n>" of the newest committed step, replaced atomically after each
/// commit. Resolving what a user names (DIR, or DIR/step_<n>) to a committed step directory,
/// and pruning old steps after a commit (keep K).
///
/// Threading: pure functions over the file system; one saver per DIR at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sf::ckpt {

/// "step_<n>".
std::string step_dir_name(int64_t step);
/// n for a name "step_<n>" (decimal digits, no sign), else nullopt.
std::optional<int64_t> parse_step_dir_name(const std::string& name);
/// Whether step directory `step_dir` holds a committed manifest.
bool is_committed(const std::string& step_dir);

/// The steps in DIR, ascending: those committed and those incomplete (no manifest).
struct StepListing {
  std::vector<int64_t> committed;   ///< with a manifest
  std::vector<int64_t> incomplete;  ///< a save that did not commit
};
/// The step directories in `dir` (none if `dir` does not exist).
StepListing list_steps(const std::string& dir);

/// Points DIR/latest at step `step` (atomic replace).
void write_latest(const std::string& dir, int64_t step);

/// The committed step directory `path` names: `path` itself when it is a step directory
/// (holds manifest.json or is named step_<n>), else the step DIR/latest names. Throws IoError:
/// "checkpoint 'run/step_5' is incomplete: it has no manifest.json (a save that did not
/// commit)", "'run' holds no committed checkpoint (no 'latest'; incomplete: step_5)", or a
/// missing path.
std::string resolve_step_dir(const std::string& path);

/// Removes the committed steps of `dir` older than its `keep` newest, and the incomplete ones
/// older than the newest committed step (they can never commit: their save was abandoned).
/// `keep` >= 1. Returns the steps removed.
std::vector<int64_t> prune_steps(const std::string& dir, int keep);

}  // namespace sf::ckpt
