/// @file
/// CharVocab: the symbols of a character-level language model and their int32 ids.
///
/// The symbols are bytes, not Unicode code points. Fortune files are not all UTF-8 (Debian's
/// fortunes package holds a few double-encoded characters, and other fortune packages are
/// Latin-1): a byte vocabulary reads every file without a decoding step that could fail, holds
/// at most 256 symbols, and decode(encode(text)) == text for every text, valid UTF-8 or not.
/// The price is that a non-ASCII character is two to four tokens, which in an almost all-ASCII
/// corpus (99.99% of the fortunes' bytes) changes next to nothing.
///
/// Ids are the symbols' ranks in ascending byte order (0x00 to 0xFF), so the same set of bytes
/// gives the same ids on every run and machine, whatever order the text was read in.
///
/// Threading: immutable after construction; every member may be called from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sf::dataset {

/// A sorted byte vocabulary: id i is the i-th smallest byte that occurs in the texts it was made from.
class CharVocab {
 public:
  /// No symbols.
  CharVocab();
  /// Every byte that occurs in any of `texts`, in ascending byte order.
  static CharVocab of(const std::vector<std::string_view>& texts);

  /// Number of symbols (ids are 0 .. size() - 1).
  int32_t size() const { return static_cast<int32_t>(symbols_.size()); }
  /// The symbols in id order: symbols()[id] is the byte of `id`.
  const std::string& symbols() const { return symbols_; }
  /// True if `byte` has an id.
  bool contains(unsigned char byte) const { return ids_[byte] >= 0; }
  /// The id of `byte`; InvalidArgument naming the byte if it has none.
  int32_t id(unsigned char byte) const;
  /// The byte of `id`; InvalidArgument naming the id if it is outside [0, size()).
  unsigned char symbol(int32_t id) const;

  /// The id of every byte of `text`, in order; InvalidArgument naming the first byte without
  /// an id and its offset.
  std::vector<int32_t> encode(std::string_view text) const;
  /// The bytes of `ids`, in order; InvalidArgument naming the first id outside [0, size())
  /// and its position.
  std::string decode(std::span<const int32_t> ids) const;

 private:
  std::string symbols_;             ///< id -> byte, ascending
  std::array<int16_t, 256> ids_{};  ///< byte -> id, -1 if absent
};

}  // namespace sf::dataset
