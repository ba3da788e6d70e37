// TextCorpus: fortune files -> cookies -> train/validation texts -> byte ids -> windows.
#include <shardflow/data/text_corpus.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/data/sharding.h>

namespace sf::dataset {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCorpus = "TextCorpus";
// The most elements one windows column of a shard may hold (4 GiB of i32 per column). Windows
// copy their tokens, so overlapping ones multiply the text: stride 1 with a seq near the
// text's length would ask for terabytes, refused here with the numbers rather than by the OS.
constexpr int64_t kMaxWindowElements = int64_t{1} << 30;
// The advice every "nothing to read" error ends with: the usual cause is a machine that did
// not run scripts/bootstrap.sh.
constexpr const char* kInstallHint =
    "install Debian's `fortunes` package (apt-get install fortunes, or scripts/bootstrap.sh) or pass a directory of "
    "fortune files";

bool only_whitespace(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
                                                             c == '\f' || c == '\v'; });
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The whole file as bytes; IoError naming it if it cannot be read or is not plain text.
std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SF_ENFORCE(in.good(), IoError, "{}: cannot open '{}': {}", kCorpus, brief_text(path), std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SF_ENFORCE(!in.bad(), IoError, "{}: cannot read '{}'", kCorpus, brief_text(path));
  // A NUL byte means a binary file (an index under another name, say): its "cookies" would
  // be noise in the vocabulary, so it is refused rather than read.
  const size_t nul = bytes.find('\0');
  SF_ENFORCE(nul == std::string::npos, IoError,
             "{}: '{}' holds a NUL byte at offset {}: not a plain text fortune file (remove it from the directory)",
             kCorpus, brief_text(path), nul);
  return bytes;
}

void check_validation_every(int validation_every) {
  SF_ENFORCE(validation_every >= 2, InvalidArgument,
             "{}: validation_every must be >= 2 (every n-th cookie is validation), got {}", kCorpus, validation_every);
}

}  // namespace

std::vector<std::string> split_cookies(std::string_view text) {
  std::vector<std::string> out;
  std::string cookie;
  bool started = false;  // a line has been added to `cookie` (which may still be empty)
  auto flush = [&] {
    if (!only_whitespace(cookie)) out.push_back(std::move(cookie));
    cookie.clear();
    started = false;
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    const std::string_view line = text.substr(pos, end - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line == "%") {
      flush();
      continue;
    }
    // Lines are joined with the newlines between them; the one ending the cookie's last line
    // is left out, since kCookieEnd puts it back.
    if (started) cookie += '\n';
    cookie.append(line);
    started = true;
  }
  flush();
  return out;
}

std::vector<std::string> fortune_files(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  SF_ENFORCE(!ec, IoError, "{}: cannot list '{}': {}", kCorpus, brief_text(dir), ec.message());
  std::vector<std::string> names;
  for (const fs::directory_iterator end{}; it != end && !ec; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.' || ends_with(name, ".dat") || ends_with(name, ".u8")) continue;
    // symlink_status: a symlink is skipped, not followed (in Debian's packages every symlink
    // is a .u8 alias of a file beside it, which would be read twice), and so is a directory.
    std::error_code sec;
    const fs::file_status st = it->symlink_status(sec);
    if (!sec && fs::is_regular_file(st)) names.push_back(name);
  }
  SF_ENFORCE(!ec, IoError, "{}: cannot list '{}': {}", kCorpus, brief_text(dir), ec.message());
  std::sort(names.begin(), names.end());  // byte order: the same on every machine and locale
  std::vector<std::string> paths;
  paths.reserve(names.size());
  for (const std::string& name : names) paths.push_back((fs::path(dir) / name).string());
  return paths;
}

int64_t count_windows(int64_t length, int64_t seq, int64_t stride, int64_t offset) {
  SF_ENFORCE(seq >= 1, InvalidArgument, "windows: seq must be >= 1, got {}", seq);
  SF_ENFORCE(stride >= 1, InvalidArgument, "windows: stride must be >= 1, got {}", stride);
  SF_ENFORCE(offset >= 0, InvalidArgument, "windows: offset must be >= 0, got {}", offset);
  // A window needs seq tokens and one target past them; written without offset + seq + 1 so
  // that huge arguments cannot overflow.
  if (length - offset <= seq) return 0;
  return (length - offset - seq - 1) / stride + 1;
}

Dataset token_windows(std::span<const int32_t> ids, int64_t seq, int64_t stride, int64_t offset, int num_shards,
                      int shard_id, const std::string& what) {
  SF_ENFORCE(seq >= 1, InvalidArgument, "{}: seq must be >= 1, got {}", what, seq);
  SF_ENFORCE(stride >= 0, InvalidArgument, "{}: stride must be >= 1 (or 0 for seq), got {}", what, stride);
  SF_ENFORCE(offset >= 0, InvalidArgument, "{}: offset must be >= 0, got {}", what, offset);
  if (stride == 0) stride = seq;
  const auto length = static_cast<int64_t>(ids.size());
  const int64_t rows = count_windows(length, seq, stride, offset);
  SF_ENFORCE(rows >= 1, InvalidArgument,
             "{}: {} tokens are too few for one window of seq {} at offset {} (a window needs offset + seq + 1 tokens)",
             what, length, seq, offset);
  check_shard_args(what, num_shards, shard_id);
  const int64_t shard_rows = shard_size(rows, num_shards);
  SF_ENFORCE(shard_rows <= kMaxWindowElements / seq, InvalidArgument,
             "{}: {} windows of seq {} ({} in a shard) would copy {} x {} tokens into a column, over the limit of {} "
             "elements; use a larger stride (now {})",
             what, rows, seq, shard_rows, shard_rows, seq, kMaxWindowElements, stride);
  // Rows are made by Dataset::generator, which makes only this shard's rows (so a shard never
  // holds the whole set) and shards them as every other source does.
  const Dataset::RowFn row = [ids, seq, stride, offset](int64_t k) {
    const int32_t* start = ids.data() + offset + k * stride;
    Tensor tokens = Tensor::empty({seq}, DType::kI32);
    Tensor targets = Tensor::empty({seq}, DType::kI32);
    std::memcpy(tokens.i32(), start, static_cast<size_t>(seq) * sizeof(int32_t));
    std::memcpy(targets.i32(), start + 1, static_cast<size_t>(seq) * sizeof(int32_t));
    return std::vector<Tensor>{std::move(tokens), std::move(targets)};
  };
  return Dataset::generator(row, rows, {"tokens", "targets"}, num_shards, shard_id);
}

const char* split_name(TextSplit split) { return split == TextSplit::kTrain ? "train" : "validation"; }

TextCorpus::TextCorpus(std::vector<std::string> files, std::vector<std::string> cookies, int validation_every)
    : files_(std::move(files)), validation_every_(validation_every) {
  for (size_t i = 0; i < cookies.size(); ++i) {
    const bool validation = (i + 1) % static_cast<size_t>(validation_every) == 0;
    std::string& text = validation ? validation_text_ : train_text_;
    text += cookies[i];
    text += kCookieEnd;
    (validation ? validation_ : train_).push_back(std::move(cookies[i]));
  }
  // Both splits: a symbol seen only in validation still needs an id to be encoded.
  vocab_ = CharVocab::of({train_text_, validation_text_});
  train_ids_ = vocab_.encode(train_text_);
  validation_ids_ = vocab_.encode(validation_text_);
}

TextCorpus TextCorpus::read(const std::string& dir, int validation_every) {
  check_validation_every(validation_every);
  std::error_code ec;
  SF_ENFORCE(fs::is_directory(dir, ec), IoError, "{}: '{}' does not exist or is not a directory; {}", kCorpus,
             brief_text(dir), kInstallHint);
  std::vector<std::string> files = fortune_files(dir);
  SF_ENFORCE(!files.empty(), IoError,
             "{}: '{}' holds no fortune files (plain text files; .dat, .u8, symlinks and subdirectories are "
             "skipped); {}",
             kCorpus, brief_text(dir), kInstallHint);
  std::vector<std::string> cookies;
  for (const std::string& path : files) {
    std::vector<std::string> more = split_cookies(read_text_file(path));
    cookies.insert(cookies.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  SF_ENFORCE(!cookies.empty(), IoError, "{}: the {} fortune files of '{}' hold no cookies; {}", kCorpus, files.size(),
             brief_text(dir), kInstallHint);
  return TextCorpus(std::move(files), std::move(cookies), validation_every);
}

TextCorpus TextCorpus::from_cookies(const std::vector<std::string>& cookies, int validation_every) {
  check_validation_every(validation_every);
  std::vector<std::string> kept;
  for (const std::string& c : cookies)
    if (!only_whitespace(c)) kept.push_back(c);
  SF_ENFORCE(!kept.empty(), InvalidArgument, "{}::from_cookies: none of the {} cookies holds text", kCorpus,
             cookies.size());
  return TextCorpus({}, std::move(kept), validation_every);
}

const std::vector<std::string>& TextCorpus::cookies(TextSplit split) const {
  return split == TextSplit::kTrain ? train_ : validation_;
}

const std::string& TextCorpus::text(TextSplit split) const {
  return split == TextSplit::kTrain ? train_text_ : validation_text_;
}

std::span<const int32_t> TextCorpus::ids(TextSplit split) const {
  return split == TextSplit::kTrain ? train_ids_ : validation_ids_;
}

int64_t TextCorpus::num_windows(TextSplit split, int64_t seq, int64_t stride, int64_t offset) const {
  SF_ENFORCE(stride >= 0, InvalidArgument, "{} {} windows: stride must be >= 1 (or 0 for seq), got {}", kCorpus,
             split_name(split), stride);
  return count_windows(static_cast<int64_t>(ids(split).size()), seq, stride == 0 ? seq : stride, offset);
}

Dataset TextCorpus::windows(TextSplit split, int64_t seq, int64_t stride, int64_t offset, int num_shards,
                            int shard_id) const {
  return token_windows(ids(split), seq, stride, offset, num_shards, shard_id,
                       fmt::format("{} {} windows", kCorpus, split_name(split)));
}

}  // namespace sf::dataset
