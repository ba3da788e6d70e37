// Whole text files: written atomically (a temporary file beside the target, then rename), so
// a reader sees the old file or the new one, never half of one; read whole. Used for the IR
// dump and strategy files, which a user may open while a job is still writing them.
//
// Threading: independent calls on different paths are safe.
#pragma once

#include <cstddef>
#include <string>

namespace sf {

// Creates the parent directories, then writes `text` to `path`. Throws IoError naming the path.
void write_text_file(const std::string& path, const std::string& text);
// The file's contents. Throws IoError naming the path if it is missing, not a regular file,
// unreadable, or larger than `max_bytes` (checked before reading).
inline constexpr size_t kMaxTextFileBytes = size_t{256} << 20;
std::string read_text_file(const std::string& path, size_t max_bytes = kMaxTextFileBytes);

}  // namespace sf
