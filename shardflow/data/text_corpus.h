/// @file
/// TextCorpus: real text for a character-level language model, read from fortune files (Debian's
/// `fortunes` package), split into train and validation cookies and cut into next-character
/// windows as a Dataset. docs/text_data.md has the rules with an example.
///
/// @code
///   TextCorpus corpus = TextCorpus::read();  // /usr/share/games/fortunes
///   Dataset train = corpus.windows(TextSplit::kTrain, 128).shuffle(seed).batch(32);
///   Dataset valid = corpus.windows(TextSplit::kValidation, 128).batch(32);
///   // each batch: tokens (32, 128) i32 and targets (32, 128) i32, targets[t] = tokens[t + 1]
///   std::string text = corpus.vocab().decode(ids);
/// @endcode
///
/// What is read: the plain text files of a directory, in ascending byte order of their names;
/// strfile's .dat indexes, the .u8 aliases, symlinks, hidden files and subdirectories (such as
/// off/, the offensive fortunes) are skipped. Each file is cut into cookies on lines that are
/// exactly "%"; a cookie keeps its inner newlines but not the newline that ends its last line,
/// and a cookie that is empty or only whitespace is dropped.
///
/// The split: cookie i of that order (0-based, over all files) is validation if
/// (i + 1) % validation_every == 0, so every 10th cookie by default, else train. It depends on
/// the files alone, so every run and rank makes the same split, and the two never share a cookie.
///
/// The text of a split: its cookies in order, each followed by kCookieEnd ("\n%\n"), which is a
/// fortune file again. The separator is text rather than a dedicated end-of-cookie id, so the
/// vocabulary stays the bytes (char_vocab.h), a decoded window reads as the files do, and the
/// model learns where a cookie ends by predicting the "%" line.
///
/// Windows: row k of windows(split, seq, stride, offset) starts at s = offset + k * stride of
/// the split's ids; tokens = ids[s, s + seq), targets = ids[s + 1, s + seq + 1). They depend on
/// (corpus, split, seq, stride, offset) only, and shards interleave them as sharding.h says, so
/// n ranks with batch b see the rows of the 1-device batch n * b.
///
/// Threading: a TextCorpus is immutable after construction; every member may be called from
/// many threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/data/char_vocab.h>
#include <shardflow/data/dataset.h>

namespace sf::dataset {

/// Where Debian's `fortunes` package (and fortunes-min) installs its fortune files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// The cookies of one fortune file's text: the pieces between lines that are exactly "%" (a
/// last piece needs no "%" after it), each without the newline that ends its last line; empty
/// and whitespace-only pieces are dropped.
std::vector<std::string> split_cookies(std::string_view text);

/// The fortune files of `dir` as full paths, in ascending byte order of their names: regular
/// files whose names neither start with "." nor end in ".dat" or ".u8" (see the file comment).
/// IoError if `dir` cannot be listed. Empty if it holds no such file.
std::vector<std::string> fortune_files(const std::string& dir);

/// The number of windows of `seq` tokens (and one target more) starting at offset, offset +
/// stride, ... inside `length` tokens: 0 if length < offset + seq + 1. InvalidArgument unless
/// seq >= 1, stride >= 1 and offset >= 0.
int64_t count_windows(int64_t length, int64_t seq, int64_t stride, int64_t offset);

/// Next-token windows over `ids` as a Dataset with the columns "tokens" and "targets", both
/// (rows, seq) i32, row k starting at offset + k * stride (stride 0 means seq: windows that
/// do not overlap). Sharded as sharding.h says. InvalidArgument, naming `what` and the numbers,
/// if seq < 1, stride < 0, offset < 0, or `ids` is too short for one window.
Dataset token_windows(std::span<const int32_t> ids, int64_t seq, int64_t stride = 0, int64_t offset = 0,
                      int num_shards = 1, int shard_id = 0, const std::string& what = "token_windows");

/// One of the two parts of a TextCorpus.
enum class TextSplit {
  kTrain,       ///< every cookie that is not validation
  kValidation,  ///< every validation_every-th cookie, for the held-out loss
};

/// "train" or "validation".
const char* split_name(TextSplit split);

/// Fortune cookies split into train and validation, their byte vocabulary and their windows.
class TextCorpus {
 public:
  /// What follows every cookie in the text of a split.
  static constexpr std::string_view kCookieEnd = "\n%\n";
  /// Cookie i is validation if (i + 1) % validation_every == 0.
  static constexpr int kDefaultValidationEvery = 10;

  /// The fortune files of `dir` (fortune_files()). IoError naming `dir` if it is not a
  /// directory, holds no fortune file, or its files hold no cookie, saying to install Debian's
  /// `fortunes` package; IoError naming the file if one cannot be read or holds a NUL byte (not
  /// plain text). InvalidArgument unless validation_every >= 2.
  static TextCorpus read(const std::string& dir = kFortunesDir, int validation_every = kDefaultValidationEvery);
  /// A corpus of the given cookies, in this order, split as read() splits (cookies that are
  /// empty or only whitespace dropped first). InvalidArgument if none is left or unless
  /// validation_every >= 2.
  static TextCorpus from_cookies(const std::vector<std::string>& cookies,
                                 int validation_every = kDefaultValidationEvery);

  /// The files read, in reading order (empty for from_cookies()).
  const std::vector<std::string>& files() const { return files_; }
  /// Cookies in both splits.
  int64_t num_cookies() const { return static_cast<int64_t>(train_.size() + validation_.size()); }
  /// The validation_every the split was made with.
  int validation_every() const { return validation_every_; }
  /// The cookies of `split`, in reading order.
  const std::vector<std::string>& cookies(TextSplit split) const;
  /// The text of `split`: its cookies in order, each followed by kCookieEnd.
  const std::string& text(TextSplit split) const;
  /// The ids of text(split).
  std::span<const int32_t> ids(TextSplit split) const;

  /// The bytes of both splits' texts, sorted (char_vocab.h).
  const CharVocab& vocab() const { return vocab_; }
  /// vocab().encode(text).
  std::vector<int32_t> encode(std::string_view text) const { return vocab_.encode(text); }
  /// vocab().decode(ids).
  std::string decode(std::span<const int32_t> ids) const { return vocab_.decode(ids); }

  /// The number of rows windows(split, seq, stride, offset) has (before sharding).
  int64_t num_windows(TextSplit split, int64_t seq, int64_t stride = 0, int64_t offset = 0) const;
  /// token_windows() over ids(split): columns "tokens" and "targets", (rows, seq) i32, the
  /// targets the tokens shifted by one. InvalidArgument naming the split and the numbers if
  /// seq < 1, stride < 0, offset < 0 or the split is too short for one window.
  Dataset windows(TextSplit split, int64_t seq, int64_t stride = 0, int64_t offset = 0, int num_shards = 1,
                  int shard_id = 0) const;

 private:
  TextCorpus(std::vector<std::string> files, std::vector<std::string> cookies, int validation_every);

  std::vector<std::string> files_;
  int validation_every_ = kDefaultValidationEvery;
  std::vector<std::string> train_, validation_;
  std::string train_text_, validation_text_;
  CharVocab vocab_;
  std::vector<int32_t> train_ids_, validation_ids_;
};

}  // namespace sf::dataset
