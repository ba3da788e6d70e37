// Whole text files: written atomically (a temporary file beside the target, then rename), so
// a reader sees the old file or the new one, never half of one; read whole. Used for the IR
// dump and strategy files, which a user may open while a job is still writing them.
//
// Threading: independent calls on different paths are safe.
#pragma once

#include <string>

namespace sf {

// Creates the parent directories, then writes `text` to `path`. Throws IoError naming the path.
void write_text_file(const std::string& path, const std::string& text);
// The file's contents. Throws IoError naming the path if it is missing or unreadable.
std::string read_text_file(const std::string& path);

}  // namespace sf
