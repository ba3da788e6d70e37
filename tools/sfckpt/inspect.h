// `sfckpt inspect`: what a committed checkpoint step holds — step, saving job, every tensor
// with its shape, dtype, layout and the blocks each rank file holds — the steps of its
// directory, and optionally a check of every block's checksum.
#pragma once

#include <iosfwd>
#include <string>

namespace sf::sfckpt {

/// Prints checkpoint `path` (DIR or DIR/step_<n>) to `out`. With `verify`, reads every block
/// and prints "verify: OK ..." or "verify: FAILED: <one line>". Returns the exit status: 0, or
/// 1 when verification failed. Throws sf::Error for a checkpoint that cannot be opened.
int inspect(const std::string& path, bool verify, std::ostream& out);

}  // namespace sf::sfckpt
