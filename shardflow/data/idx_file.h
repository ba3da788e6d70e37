// Reading IDX files, the format of MNIST and Fashion-MNIST, raw or gzip-compressed.
//
// An IDX file is a big-endian header (magic 0x000008TT with TT the element type and the low
// byte the number of dims, then one u32 size per dim) followed by the elements. We read only
// u8 elements (type 0x08), which is what MNIST-like sets use. zlib's gzread reads plain files
// as they are, so one code path serves both "x-ubyte" and "x-ubyte.gz".
//
// Limits (docs/limits.md): every dim is at least 1 and the elements number at most
// kMaxIdxElements (4 GiB of u8), checked before anything is allocated; a raw file must be
// exactly header + data bytes long, and a gzip file too short to hold the declared data is
// refused before reading it.
//
// Every failure is an IoError whose one-line message names the file and what is wrong, so a
// user with a wrong DATA_PATH sees which file to fix. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sf::dataset {

// Magic numbers of the two files of an MNIST-like set.
inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // u8, 3 dims (N, H, W)
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // u8, 1 dim (N)

inline constexpr uint64_t kMaxIdxElements = uint64_t{1} << 32;

// The decoded content of one IDX file: its dims (outermost first) and its elements.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // prod(dims) elements, row-major
  int64_t count() const { return dims.empty() ? 0 : dims[0]; }
};

// Reads `path` and checks that its magic is `expected_magic`; `what` ("images", "labels")
// only words the error message.
IdxArray read_idx(const std::string& path, uint32_t expected_magic, const std::string& what);

// Only the header of `path`, checked as read_idx checks it (the size against the file's
// included), without reading the data: `bytes` stays empty. For checking inputs up front.
IdxArray read_idx_header(const std::string& path, uint32_t expected_magic, const std::string& what);

// The path of `<dir>/<base>` or `<dir>/<base>.gz`, whichever exists (raw preferred, as it
// needs no decompression); empty if neither does.
std::string find_idx_file(const std::string& dir, const std::string& base);

}  // namespace sf::dataset
