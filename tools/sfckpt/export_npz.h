// `sfckpt export --npz`: every tensor of a committed checkpoint step, gathered whole, as a
// NumPy .npz archive (numpy.load(FILE)[name]).
#pragma once

#include <string>

namespace sf::sfckpt {

/// Writes the tensors of checkpoint `path` (DIR or DIR/step_<n>) to `npz_file`; returns how
/// many. Throws sf::Error for a bad checkpoint or a file that cannot be written.
int export_npz(const std::string& path, const std::string& npz_file);

}  // namespace sf::sfckpt
