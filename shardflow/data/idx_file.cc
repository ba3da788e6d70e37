#include <shardflow/data/idx_file.h>

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>
#include <utility>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::dataset {

namespace {

constexpr size_t kChunk = 1 << 20;       // read in 1 MiB steps so a lying header cannot
constexpr unsigned kGzBuffer = 1 << 17;  // make us allocate more than the file holds
// Deflate expands at most about 1032:1; a gzip file claiming more data than that is lying.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Owns one gzFile; closes it on every exit path, errors included.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      const char* why = errno ? std::strerror(errno) : "out of memory";
      SF_THROW(IoError, "cannot open '{}': {}", path, why);
    }
    gzbuffer(file_, kGzBuffer);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // True for a plain (not gzip) file; meaningful once a byte has been read.
  bool direct() { return gzdirect(file_) == 1; }

  // Reads up to n bytes into out; returns how many were read (less only at end of file).
  size_t read(void* out, size_t n) {
    size_t got = 0;
    auto* p = static_cast<char*>(out);
    while (got < n) {
      unsigned want = static_cast<unsigned>(std::min(n - got, kChunk));
      int r = gzread(file_, p + got, want);
      if (r < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        if (code == Z_ERRNO) msg = std::strerror(errno);
        SF_THROW(IoError, "cannot read '{}': {}", path_, msg);
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

uint32_t big_endian_u32(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  SF_ENFORCE(::stat(path.c_str(), &st) == 0, IoError, "cannot stat '{}': {}", path, std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Reads and checks the header of `in`: magic, dims, and the declared size against the file's.
// Returns the dims and the number of data bytes they declare.
std::pair<std::vector<int64_t>, uint64_t> read_header(GzReader& in, const std::string& path, uint32_t expected_magic,
                                                      const std::string& what) {
  unsigned char word[4];
  size_t got = in.read(word, 4);
  SF_ENFORCE(got == 4, IoError, "'{}' is truncated: expected a 4-byte IDX magic, got {} bytes", path, got);
  const uint32_t magic = big_endian_u32(word);
  SF_ENFORCE(magic == expected_magic, IoError, "'{}': bad IDX magic 0x{:08x} (expected 0x{:08x} for {})", path, magic,
             expected_magic, what);

  std::vector<int64_t> dims;
  const int ndims = static_cast<int>(magic & 0xff);
  uint64_t total = 1;
  for (int d = 0; d < ndims; ++d) {
    got = in.read(word, 4);
    SF_ENFORCE(got == 4, IoError, "'{}' is truncated: header declares {} dims but ends inside dim {}", path, ndims, d);
    const uint32_t size = big_endian_u32(word);
    dims.push_back(size);
    // A zero dim would make an empty set (0 images: an epoch of 0 steps) or 0-pixel images
    // that fail far away in a MatMul; refuse it here, where the file is known.
    SF_ENFORCE(size >= 1, IoError, "'{}': IDX dim {} of {} is 0 (dims {}); every dim must be at least 1", path, d,
               what, brief_ints(dims));
    // Refuse absurd sizes before multiplying, so the product cannot overflow.
    SF_ENFORCE(total <= kMaxIdxElements / size, IoError,
               "'{}': IDX header declares more than {} elements (dims so far {})", path, kMaxIdxElements,
               brief_ints(dims));
    total *= size;
  }

  // Check the declared size against the file before allocating: a raw file must hold exactly
  // header + data bytes; a gzip file cannot expand more than deflate's maximum ratio.
  const uint64_t header = 4 + 4 * uint64_t(ndims);
  const uint64_t on_disk = file_size(path);
  if (in.direct()) {
    const uint64_t data = on_disk >= header ? on_disk - header : 0;
    SF_ENFORCE(data >= total, IoError, "'{}' is truncated: expected {} bytes of data, got {}", path, total, data);
    SF_ENFORCE(data == total, IoError, "'{}' has bytes past the {} bytes of data its header declares", path, total);
  } else {
    SF_ENFORCE(total <= on_disk * kMaxDeflateRatio, IoError,
               "'{}' is truncated: expected {} bytes of data, but {} compressed bytes cannot hold them", path, total,
               on_disk);
  }
  return {std::move(dims), total};
}

}  // namespace

IdxArray read_idx_header(const std::string& path, uint32_t expected_magic, const std::string& what) {
  GzReader in(path);
  IdxArray out;
  out.dims = read_header(in, path, expected_magic, what).first;
  return out;
}

IdxArray read_idx(const std::string& path, uint32_t expected_magic, const std::string& what) {
  GzReader in(path);
  IdxArray out;
  uint64_t total = 0;
  std::tie(out.dims, total) = read_header(in, path, expected_magic, what);

  // Grow chunk by chunk: a truncated gzip file then costs only what it holds.
  size_t have = 0;
  while (have < total) {
    size_t step = static_cast<size_t>(std::min<uint64_t>(total - have, kChunk));
    out.bytes.resize(have + step);
    size_t r = in.read(out.bytes.data() + have, step);
    have += r;
    if (r < step) break;
  }
  SF_ENFORCE(have == total, IoError, "'{}' is truncated: expected {} bytes of data, got {}", path, total, have);
  unsigned char extra;
  SF_ENFORCE(in.read(&extra, 1) == 0, IoError, "'{}' has bytes past the {} bytes of data its header declares", path,
             total);
  return out;
}

std::string find_idx_file(const std::string& dir, const std::string& base) {
  const std::string raw = dir + "/" + base;
  if (is_file(raw)) return raw;
  if (is_file(raw + ".gz")) return raw + ".gz";
  return {};
}

}  // namespace sf::dataset
