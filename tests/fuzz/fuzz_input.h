// Helpers the fuzz targets share: turning one fuzz input into what a parser takes (a file on
// disk, a list of strings). Each target defines LLVMFuzzerTestOneInput; built with
// SHARDFLOW_FUZZ it runs under libFuzzer, otherwise under replay_main.cc over its corpus.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sf::fuzz {

// A file only this process uses, /tmp/sf-fuzz-<target>-<pid>[suffix]: parsers that read a path
// get each input written there. Call once per target and keep the path. Removed when the process exits normally (a crash leaves it,
// next to the crash input it belongs to).
inline std::vector<std::string>& scratch_paths() {
  static auto* paths = new std::vector<std::string>;  // never destroyed: atexit handlers use it
  return *paths;
}

inline std::string scratch_path(const char* target, const char* suffix = "") {
  static const bool cleanup = [] {
    std::atexit([] {
      for (const auto& p : scratch_paths()) std::remove(p.c_str());
    });
    return true;
  }();
  (void)cleanup;
  std::string p = std::string("/tmp/sf-fuzz-") + target + "-" + std::to_string(::getpid()) + suffix;
  scratch_paths().push_back(p);
  return p;
}

// Writes `data` to `path`, replacing it; aborts if it cannot (the target could not test anything).
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

// The input cut at every `sep` (an empty input gives no pieces): argv from "-n\0004\0p".
inline std::vector<std::string> split(const uint8_t* data, size_t size, char sep) {
  std::vector<std::string> out;
  if (size == 0) return out;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// A check the parser's own contract promises (a round trip, a bound): a broken one is a
// finding, reported like a crash.
#define SF_FUZZ_CHECK(cond)                                                          \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

}  // namespace sf::fuzz
