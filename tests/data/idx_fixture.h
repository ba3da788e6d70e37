// Test helpers for the data layer: a self-deleting temporary directory and an IDX writer
// (raw or gzip) for building small MNIST-like files with known contents.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace sf::dataset::fixture {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sf_data_test_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The bytes of an IDX file: big-endian magic, dims, then `data` (u8 elements).
inline std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                                      const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Writes bytes to path, gzip-compressed if gz.
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("gzopen failed: " + path);
    if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return;
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("fopen failed: " + path);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// n images of h x w where pixel p of image i is (i * 16 + p) % 256, and label i is i % 10.
inline std::vector<uint8_t> image_data(uint32_t n, uint32_t h, uint32_t w) {
  std::vector<uint8_t> data(static_cast<size_t>(n) * h * w);
  for (size_t i = 0; i < n; ++i)
    for (size_t p = 0; p < size_t{h} * w; ++p) data[i * h * w + p] = static_cast<uint8_t>((i * 16 + p) % 256);
  return data;
}
inline std::vector<uint8_t> label_data(uint32_t n) {
  std::vector<uint8_t> data(n);
  for (uint32_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i % 10);
  return data;
}

// Writes <prefix>-images-idx3-ubyte and <prefix>-labels-idx1-ubyte (".gz" added if gz)
// holding n images of h x w and n labels, as above.
inline void write_mnist(const std::string& dir, const std::string& prefix, uint32_t n, uint32_t h, uint32_t w,
                        bool gz) {
  const std::string ext = gz ? ".gz" : "";
  write_file(dir + "/" + prefix + "-images-idx3-ubyte" + ext, idx_bytes(0x803, {n, h, w}, image_data(n, h, w)), gz);
  write_file(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, idx_bytes(0x801, {n}, label_data(n)), gz);
}

}  // namespace sf::dataset::fixture
