// png_check: tells whether a PNG screenshot shows a picture rather than a blank page. Reads
// an 8-bit, non-interlaced PNG (grey, RGB, palette, grey+alpha or RGBA: what Chromium writes)
// with zlib only, undoes the row filters, and counts the distinct colours.
//
//     png_check FILE [--min-colours N] [--colour RRGGBB]...
//
// Prints "FILE: W x H, N distinct colours" and exits 0 when there are at least N distinct
// colours (default 2) and every --colour occurs in some pixel; 1 otherwise, saying why; 2
// when the file is not a PNG this reader understands.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "png_check: %s: %s\n", file.c_str(), why.c_str());
  std::exit(2);
}

uint32_t be32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

int paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: png_check FILE [--min-colours N] [--colour RRGGBB]...\n");
    return 2;
  }
  const std::string file = argv[1];
  size_t min_colours = 2;
  std::vector<uint32_t> wanted;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--min-colours") {
      min_colours = std::stoul(argv[i + 1]);
    } else if (flag == "--colour") {
      wanted.push_back(static_cast<uint32_t>(std::stoul(argv[i + 1], nullptr, 16)) << 8 | 0xff);
    } else {
      bad(file, "unknown option " + flag);
    }
  }

  std::ifstream in(file, std::ios::binary);
  if (!in) bad(file, "cannot open");
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 8 || !std::equal(kSignature, kSignature + 8, bytes.begin())) bad(file, "not a PNG");

  // Chunks: length, type, data, CRC. Keep IHDR, PLTE, tRNS and every IDAT.
  uint32_t width = 0, height = 0;
  int depth = 0, colour_type = -1, interlace = 0;
  std::vector<unsigned char> idat, palette, alpha;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t len = be32(&bytes[at]);
    const std::string type(bytes.begin() + at + 4, bytes.begin() + at + 8);
    if (at + 12 + len > bytes.size()) bad(file, "truncated chunk " + type);
    const unsigned char* data = &bytes[at + 8];
    if (type == "IHDR") {
      width = be32(data);
      height = be32(data + 4);
      depth = data[8];
      colour_type = data[9];
      interlace = data[12];
    } else if (type == "PLTE") {
      palette.assign(data, data + len);
    } else if (type == "tRNS") {
      alpha.assign(data, data + len);
    } else if (type == "IDAT") {
      idat.insert(idat.end(), data, data + len);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + len;
  }
  int channels = 0;
  switch (colour_type) {
    case 0:
      channels = 1;
      break;
    case 2:
      channels = 3;
      break;
    case 3:
      channels = 1;
      break;
    case 4:
      channels = 2;
      break;
    case 6:
      channels = 4;
      break;
    default:
      bad(file, "no IHDR or unknown colour type");
  }
  if (depth != 8 || interlace != 0) bad(file, "only 8-bit, non-interlaced PNGs are read here");
  if (width == 0 || height == 0) bad(file, "empty image");

  const size_t stride = size_t(width) * channels;
  std::vector<unsigned char> raw((stride + 1) * height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, idat.data(), idat.size()) != Z_OK || raw_size != raw.size()) {
    bad(file, "image data does not inflate to " + std::to_string(raw.size()) + " bytes");
  }

  // Undo each row's filter (PNG spec, section 9) in place, then collect the colours.
  std::vector<unsigned char> prev(stride, 0), row(stride);
  std::set<uint32_t> colours;
  for (uint32_t y = 0; y < height; ++y) {
    const unsigned char filter = raw[y * (stride + 1)];
    const unsigned char* src = &raw[y * (stride + 1) + 1];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= size_t(channels) ? row[i - channels] : 0;
      const int b = prev[i];
      const int c = i >= size_t(channels) ? prev[i - channels] : 0;
      int v = src[i];
      switch (filter) {
        case 0:
          break;
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4:
          v += paeth(a, b, c);
          break;
        default:
          bad(file, "bad filter type on row " + std::to_string(y));
      }
      row[i] = static_cast<unsigned char>(v);
    }
    for (uint32_t x = 0; x < width; ++x) {
      const unsigned char* px = &row[size_t(x) * channels];
      uint32_t r, g, b, al = 0xff;
      if (colour_type == 3) {
        if (size_t(px[0]) * 3 + 2 >= palette.size()) bad(file, "palette index out of range");
        r = palette[px[0] * 3], g = palette[px[0] * 3 + 1], b = palette[px[0] * 3 + 2];
        if (px[0] < alpha.size()) al = alpha[px[0]];
      } else if (channels <= 2) {
        r = g = b = px[0];
        if (channels == 2) al = px[1];
      } else {
        r = px[0], g = px[1], b = px[2];
        if (channels == 4) al = px[3];
      }
      colours.insert(r << 24 | g << 16 | b << 8 | al);
    }
    prev.swap(row);
  }

  std::printf("%s: %u x %u, %zu distinct colours\n", file.c_str(), width, height, colours.size());
  int status = 0;
  if (colours.size() < min_colours) {
    std::printf("png_check: %s: %zu distinct colour(s), expected at least %zu: the page looks blank\n", file.c_str(),
                colours.size(), min_colours);
    status = 1;
  }
  for (uint32_t c : wanted) {
    if (!colours.count(c)) {
      std::printf("png_check: %s: no pixel has colour #%06x\n", file.c_str(), c >> 8);
      status = 1;
    }
  }
  return status;
}
