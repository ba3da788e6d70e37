// CharVocab: bytes <-> sorted int32 ids.
#include <shardflow/data/char_vocab.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>

namespace sf::dataset {

namespace {

// "0x41 ('A')" for a printable ASCII byte, "0x0a" otherwise: the message names the byte
// without putting a control character or half a UTF-8 sequence into it.
std::string describe_byte(unsigned char b) {
  if (b >= 0x20 && b < 0x7F) return fmt::format("0x{:02x} ('{}')", b, static_cast<char>(b));
  return fmt::format("0x{:02x}", b);
}

}  // namespace

CharVocab::CharVocab() { ids_.fill(-1); }

CharVocab CharVocab::of(const std::vector<std::string_view>& texts) {
  std::array<bool, 256> seen{};
  for (std::string_view text : texts)
    for (char c : text) seen[static_cast<unsigned char>(c)] = true;
  CharVocab v;
  for (int b = 0; b < 256; ++b) {
    if (!seen[b]) continue;
    v.ids_[b] = static_cast<int16_t>(v.symbols_.size());
    v.symbols_ += static_cast<char>(b);
  }
  return v;
}

int32_t CharVocab::id(unsigned char byte) const {
  SF_ENFORCE(contains(byte), InvalidArgument, "CharVocab: byte {} is not in the vocabulary of {} symbols",
             describe_byte(byte), size());
  return ids_[byte];
}

unsigned char CharVocab::symbol(int32_t id) const {
  SF_ENFORCE(id >= 0 && id < size(), InvalidArgument, "CharVocab: id {} is outside the vocabulary [0, {})", id,
             size());
  return static_cast<unsigned char>(symbols_[static_cast<size_t>(id)]);
}

std::vector<int32_t> CharVocab::encode(std::string_view text) const {
  std::vector<int32_t> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    SF_ENFORCE(ids_[b] >= 0, InvalidArgument,
               "CharVocab::encode: byte {} at offset {} of {} is not in the vocabulary of {} symbols",
               describe_byte(b), i, text.size(), size());
    out[i] = ids_[b];
  }
  return out;
}

std::string CharVocab::decode(std::span<const int32_t> ids) const {
  std::string out(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    SF_ENFORCE(id >= 0 && id < size(), InvalidArgument,
               "CharVocab::decode: id {} at position {} of {} is outside the vocabulary [0, {})", id, i, ids.size(),
               size());
    out[i] = symbols_[static_cast<size_t>(id)];
  }
  return out;
}

}  // namespace sf::dataset
