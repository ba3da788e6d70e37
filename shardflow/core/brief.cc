#include <shardflow/core/brief.h>

#include <fmt/format.h>

#include <algorithm>

namespace sf {
namespace {

template <typename Int>
std::string ints(const std::vector<Int>& values, size_t keep, const char* sep) {
  std::string out = "(";
  const size_t shown = std::min(values.size(), keep);
  for (size_t i = 0; i < shown; ++i) out += fmt::format("{}{}", i ? sep : "", values[i]);
  if (shown < values.size()) out += fmt::format("{} ... {} more", shown ? "," : "", values.size() - shown);
  return out + ")";
}

// Length of the well-formed UTF-8 sequence starting at text[i], or 0 if there is none.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  size_t n = 0;
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b >= 0xE0 && b <= 0xEF) n = 3;
  else if (b >= 0xF0 && b <= 0xF4) n = 4;
  else return 0;
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  // Overlong forms, surrogates and code points above U+10FFFF.
  if ((b == 0xE0 && byte(i + 1) < 0xA0) || (b == 0xED && byte(i + 1) > 0x9F) ||
      (b == 0xF0 && byte(i + 1) < 0x90) || (b == 0xF4 && byte(i + 1) > 0x8F))
    return 0;
  return n;
}

// The escaped rendering of the character at text[i] and how many bytes it took.
std::pair<std::string, size_t> render(std::string_view text, size_t i) {
  const unsigned char b = static_cast<unsigned char>(text[i]);
  if (b == '\n') return {"\\n", 1};
  if (b == '\r') return {"\\r", 1};
  if (b == '\t') return {"\\t", 1};
  if (b < 0x20 || b == 0x7F) return {fmt::format("\\x{:02x}", b), 1};
  if (b < 0x80) return {std::string(1, static_cast<char>(b)), 1};
  const size_t n = utf8_length(text, i);
  if (n == 0) return {fmt::format("\\x{:02x}", b), 1};
  return {std::string(text.substr(i, n)), n};
}

}  // namespace

std::string brief_ints(const std::vector<int64_t>& values, size_t keep) { return ints(values, keep, ","); }
std::string brief_ints(const std::vector<int>& values, size_t keep) { return ints(values, keep, ","); }

std::string brief_list(const std::vector<int>& values, size_t keep) {
  std::string out = ints(values, keep, ", ");
  return out.substr(1, out.size() - 2);
}

std::string brief_shape(const std::vector<int64_t>& shape, size_t keep) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return ints(shape, keep, ", ");
}

std::string brief_text(std::string_view text, size_t max) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    auto [piece, used] = render(text, i);
    if (out.size() + piece.size() > max) break;
    out += piece;
    i += used;
  }
  if (i < text.size()) out += fmt::format("... ({} more bytes)", text.size() - i);
  return out;
}

std::string brief_names(const std::vector<std::string>& names, size_t keep, size_t max_each) {
  std::string out;
  const size_t shown = std::min(names.size(), keep);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + brief_text(names[i], max_each);
  if (shown < names.size()) out += fmt::format("{}... {} more", shown ? ", " : "", names.size() - shown);
  return out;
}

}  // namespace sf
