// TextCorpus and CharVocab: cookie splitting, the train/validation split, the byte vocabulary,
// next-character windows as a Dataset, the errors, and Debian's fortunes corpus when installed.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/data/char_vocab.h>
#include <shardflow/data/text_corpus.h>
#include "tests/data/idx_fixture.h"

namespace sf::dataset {
namespace {

using fixture::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

// "c0\n%\nc1\n%\n..." : n cookies named by their index.
std::string numbered_cookies(int first, int n) {
  std::string text;
  for (int i = first; i < first + n; ++i) text += fmt::format("c{}\n%\n", i);
  return text;
}

std::vector<int32_t> column_row(const Tensor& t, int64_t row) {
  const int64_t seq = t.dim(1);
  return std::vector<int32_t>(t.i32() + row * seq, t.i32() + (row + 1) * seq);
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

// An error is one line, short, and names what it is about.
void expect_one_line(const std::string& msg) {
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_LE(msg.size(), kMaxErrorChars) << msg;
}

// ---- cookie splitting -------------------------------------------------------------------

TEST(SplitCookies, CutsOnLinesThatAreExactlyPercent) {
  EXPECT_THAT(split_cookies("one\ntwo\n%\nthree\n%\n"), ElementsAre("one\ntwo", "three"));
  // "%" inside a line, "%%", " %" and "% " are text, not separators.
  EXPECT_THAT(split_cookies("50% off\n%%\n %\n% \n%\nnext\n"), ElementsAre("50% off\n%%\n %\n% ", "next"));
}

TEST(SplitCookies, DropsEmptyAndWhitespaceOnlyCookies) {
  EXPECT_THAT(split_cookies("%\n%\n\n%\n  \t\n\n%\nx\n%\n%\n"), ElementsAre("x"));
  EXPECT_TRUE(split_cookies("").empty());
  EXPECT_TRUE(split_cookies("%\n%\n%").empty());
}

TEST(SplitCookies, KeepsTrailingTextWithoutAFinalPercent) {
  EXPECT_THAT(split_cookies("a\n%\nb\nc"), ElementsAre("a", "b\nc"));
  EXPECT_THAT(split_cookies("a\n%\nb\nc\n"), ElementsAre("a", "b\nc"));
  EXPECT_THAT(split_cookies("only text, no newline"), ElementsAre("only text, no newline"));
}

TEST(SplitCookies, KeepsInnerNewlinesBlankLinesAndTabs) {
  EXPECT_THAT(split_cookies("%\n\nfirst\n\n\tsecond\n\n%\n"), ElementsAre("\nfirst\n\n\tsecond\n"));
}

// ---- the files of a directory -----------------------------------------------------------

TEST(FortuneFiles, ReadsPlainFilesInByteOrderAndSkipsIndexesAliasesAndDirectories) {
  TempDir dir;
  write_text(dir.file("b"), "b0\n%\n");
  write_text(dir.file("a"), "a0\n%\n");
  write_text(dir.file("Z"), "Z0\n%\n");  // uppercase sorts first in byte order
  write_text(dir.file("a.dat"), std::string("\0\0\0\2", 4));
  write_text(dir.file(".hidden"), "h\n%\n");
  std::filesystem::create_symlink("a", dir.file("a.u8"));
  std::filesystem::create_symlink("b", dir.file("b-link"));
  std::filesystem::create_directory(dir.file("off"));
  write_text(dir.file("off/rude"), "r\n%\n");
  EXPECT_THAT(fortune_files(dir.path()), ElementsAre(dir.file("Z"), dir.file("a"), dir.file("b")));

  const TextCorpus corpus = TextCorpus::read(dir.path());
  EXPECT_EQ(corpus.files(), fortune_files(dir.path()));
  EXPECT_THAT(corpus.cookies(TextSplit::kTrain), ElementsAre("Z0", "a0", "b0"));
  EXPECT_TRUE(corpus.cookies(TextSplit::kValidation).empty());
}

// ---- the split --------------------------------------------------------------------------

TEST(TextCorpusSplit, EveryTenthCookieIsValidationAcrossFilesInOrder) {
  TempDir dir;
  write_text(dir.file("1-first"), numbered_cookies(0, 12));
  const std::string second = numbered_cookies(12, 13);
  write_text(dir.file("2-second"), second.substr(0, second.size() - 2));  // no final "%": trailing text
  const TextCorpus corpus = TextCorpus::read(dir.path());
  EXPECT_EQ(corpus.num_cookies(), 25);
  EXPECT_THAT(corpus.cookies(TextSplit::kValidation), ElementsAre("c9", "c19"));
  const std::vector<std::string>& train = corpus.cookies(TextSplit::kTrain);
  ASSERT_EQ(train.size(), 23u);
  EXPECT_EQ(train.front(), "c0");
  EXPECT_EQ(train[9], "c10");  // c9 went to validation
  EXPECT_EQ(train.back(), "c24");
}

TEST(TextCorpusSplit, IsDeterministicDisjointAndCoversEveryCookie) {
  TempDir dir;
  write_text(dir.file("f"), numbered_cookies(0, 57));
  const TextCorpus a = TextCorpus::read(dir.path(), 4), b = TextCorpus::read(dir.path(), 4);
  for (TextSplit s : {TextSplit::kTrain, TextSplit::kValidation}) {
    EXPECT_EQ(a.cookies(s), b.cookies(s)) << split_name(s);
    EXPECT_EQ(a.text(s), b.text(s)) << split_name(s);
  }
  const std::vector<std::string>& train = a.cookies(TextSplit::kTrain);
  const std::vector<std::string>& valid = a.cookies(TextSplit::kValidation);
  EXPECT_EQ(valid.size(), 14u);  // cookies 3, 7, ..., 55
  std::set<std::string> all(train.begin(), train.end());
  for (const std::string& c : valid) EXPECT_TRUE(all.insert(c).second) << c << " is in both splits";
  EXPECT_EQ(all.size(), 57u);
  EXPECT_EQ(a.validation_every(), 4);
}

TEST(TextCorpusSplit, TheTextOfASplitIsItsCookiesEachEndedByAPercentLine) {
  const TextCorpus corpus = TextCorpus::from_cookies({"a\nb", "  ", "c", "d"}, 3);
  EXPECT_EQ(corpus.num_cookies(), 3);  // the whitespace-only cookie is dropped first
  EXPECT_EQ(corpus.text(TextSplit::kTrain), "a\nb\n%\nc\n%\n");
  EXPECT_EQ(corpus.text(TextSplit::kValidation), "d\n%\n");
  EXPECT_TRUE(corpus.files().empty());
}

// ---- the vocabulary ---------------------------------------------------------------------

TEST(CharVocab, IsTheSortedBytesAndRoundTrips) {
  const CharVocab v = CharVocab::of({"hello", "\xc3\xa9!"});
  EXPECT_EQ(v.symbols(), "!ehlo\xa9\xc3");  // ascending unsigned byte order
  EXPECT_EQ(v.size(), 7);
  EXPECT_EQ(v.id('!'), 0);
  EXPECT_EQ(v.id(0xc3), 6);
  EXPECT_EQ(v.symbol(1), 'e');
  const std::vector<int32_t> ids = v.encode("hello\xc3\xa9");
  EXPECT_THAT(ids, ElementsAre(2, 1, 3, 3, 4, 6, 5));
  EXPECT_EQ(v.decode(ids), "hello\xc3\xa9");
}

TEST(CharVocab, CoversBothSplitsAndRoundTripsTheirTexts) {
  // 'Z' and the tab occur only in the validation cookie (the 2nd of 2).
  const TextCorpus corpus = TextCorpus::from_cookies({"abc", "Z\tz"}, 2);
  ASSERT_EQ(corpus.text(TextSplit::kValidation), "Z\tz\n%\n");
  EXPECT_EQ(corpus.vocab().symbols(), "\t\n%Zabcz");
  for (TextSplit s : {TextSplit::kTrain, TextSplit::kValidation}) {
    const std::span<const int32_t> ids = corpus.ids(s);
    EXPECT_EQ(ids.size(), corpus.text(s).size());
    EXPECT_EQ(corpus.decode(ids), corpus.text(s)) << split_name(s);
    EXPECT_EQ(corpus.encode(corpus.text(s)), std::vector<int32_t>(ids.begin(), ids.end()));
    for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < corpus.vocab().size());
  }
  // The same cookies give the same ids in another order of reading the vocabulary's texts.
  EXPECT_EQ(CharVocab::of({corpus.text(TextSplit::kValidation), corpus.text(TextSplit::kTrain)}).symbols(),
            corpus.vocab().symbols());
}

TEST(CharVocab, RefusesUnknownBytesAndIdsInOneLine) {
  const CharVocab v = CharVocab::of({"ab"});
  const std::string enc = error_of<InvalidArgument>([&] { v.encode("abq"); });
  EXPECT_THAT(enc, AllOf(HasSubstr("0x71 ('q')"), HasSubstr("offset 2"), HasSubstr("2 symbols")));
  const std::string ctl = error_of<InvalidArgument>([&] { v.encode("\x1b"); });
  EXPECT_THAT(ctl, HasSubstr("0x1b"));
  expect_one_line(ctl);
  const std::vector<int32_t> bad = {0, 1, 7};
  const std::string dec = error_of<InvalidArgument>([&] { v.decode(bad); });
  EXPECT_THAT(dec, AllOf(HasSubstr("id 7"), HasSubstr("position 2"), HasSubstr("[0, 2)")));
  EXPECT_THAT(error_of<InvalidArgument>([&] { v.symbol(-1); }), HasSubstr("id -1"));
  EXPECT_THAT(error_of<InvalidArgument>([&] { v.id('z'); }), HasSubstr("0x7a ('z')"));
  EXPECT_EQ(CharVocab().size(), 0);
  EXPECT_FALSE(CharVocab().contains('a'));
}

// ---- windows ----------------------------------------------------------------------------

TEST(TextWindows, TargetsAreTheTokensShiftedByOne) {
  const TextCorpus corpus = TextCorpus::from_cookies({"the quick brown fox", "jumps over the lazy dog"}, 10);
  const std::span<const int32_t> ids = corpus.ids(TextSplit::kTrain);
  ASSERT_EQ(ids.size(), 19u + 3 + 23 + 3);
  const int64_t seq = 8;
  const Dataset ds = corpus.windows(TextSplit::kTrain, seq);
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"tokens", "targets"}));
  EXPECT_EQ(ds.num_rows(), (48 - 1) / seq);  // 5 windows: the 6th would need token 48
  EXPECT_EQ(corpus.num_windows(TextSplit::kTrain, seq), ds.num_rows());
  const Tensor& tokens = ds.column("tokens");
  const Tensor& targets = ds.column("targets");
  EXPECT_EQ(tokens.dtype(), DType::kI32);
  EXPECT_EQ(tokens.shape(), (Shape{5, seq}));
  EXPECT_EQ(targets.shape(), (Shape{5, seq}));
  for (int64_t k = 0; k < ds.num_rows(); ++k) {
    const std::vector<int32_t> tok = column_row(tokens, k), tgt = column_row(targets, k);
    EXPECT_EQ(tok, std::vector<int32_t>(ids.begin() + k * seq, ids.begin() + (k + 1) * seq)) << "row " << k;
    EXPECT_EQ(std::vector<int32_t>(tok.begin() + 1, tok.end()), std::vector<int32_t>(tgt.begin(), tgt.end() - 1));
    EXPECT_EQ(tgt.back(), ids[(k + 1) * seq]);
  }
  EXPECT_EQ(corpus.decode(column_row(tokens, 0)), "the quic");
  EXPECT_EQ(corpus.decode(column_row(targets, 0)), "he quick");
}

TEST(TextWindows, StrideAndOffsetPlaceTheWindows) {
  std::vector<int32_t> ids(20);
  for (int i = 0; i < 20; ++i) ids[i] = i;
  const Dataset ds = token_windows(ids, 4, 3, 2);  // starts 2, 5, 8, 11, 14 (14 + 4 = 18 < 20)
  ASSERT_EQ(ds.num_rows(), 5);
  EXPECT_EQ(count_windows(20, 4, 3, 2), 5);
  EXPECT_THAT(column_row(ds.column("tokens"), 4), ElementsAre(14, 15, 16, 17));
  EXPECT_THAT(column_row(ds.column("targets"), 4), ElementsAre(15, 16, 17, 18));
  EXPECT_EQ(token_windows(ids, 19).num_rows(), 1);  // exactly seq + 1 tokens
  EXPECT_EQ(token_windows(ids, 1, 1).num_rows(), 19);
  EXPECT_EQ(count_windows(20, 19, 1, 1), 0);
}

TEST(TextWindows, BatchTakeAndShuffleWorkWithTheBatchIterator) {
  std::vector<int32_t> ids(101);
  for (int i = 0; i < 101; ++i) ids[i] = i % 7;
  const Dataset ds = token_windows(ids, 10);  // 10 windows
  ASSERT_EQ(ds.num_rows(), 10);

  BatchIterator it = ds.batch(4).iterator();
  EXPECT_EQ(it.num_batches(), 2);  // the short last batch is dropped
  int batches = 0;
  while (const std::vector<Tensor>* b = it.next()) {
    ASSERT_EQ(b->size(), 2u);
    EXPECT_EQ((*b)[0].shape(), (Shape{4, 10}));
    EXPECT_EQ((*b)[1].shape(), (Shape{4, 10}));
    EXPECT_EQ((*b)[0].dtype(), DType::kI32);
    ++batches;
  }
  EXPECT_EQ(batches, 2);

  BatchIterator kept = ds.take(5).batch(2, false).iterator();
  EXPECT_EQ(kept.num_batches(), 3);
  kept.skip(2);
  const std::vector<Tensor>* last = kept.next();
  ASSERT_NE(last, nullptr);
  EXPECT_EQ((*last)[0].shape(), (Shape{1, 10}));
  EXPECT_THAT(column_row((*last)[0], 0), ElementsAre(5, 6, 0, 1, 2, 3, 4, 5, 6, 0));  // window 4: ids 40..49 % 7

  // Shuffled rows: the same windows, each still paired with its own targets, in an order that
  // depends on (seed, epoch) only.
  const Dataset shuffled = ds.shuffle(11).batch(5);
  auto first_tokens = [&](int64_t epoch) {
    BatchIterator e = shuffled.iterator(epoch);
    std::vector<int32_t> firsts;
    while (const std::vector<Tensor>* b = e.next())
      for (int64_t r = 0; r < 5; ++r) {
        const std::vector<int32_t> tok = column_row((*b)[0], r), tgt = column_row((*b)[1], r);
        EXPECT_EQ(std::vector<int32_t>(tok.begin() + 1, tok.end()), std::vector<int32_t>(tgt.begin(), tgt.end() - 1));
        firsts.push_back(tok[0]);
      }
    return firsts;
  };
  EXPECT_EQ(first_tokens(3), first_tokens(3));
  std::vector<int32_t> sorted = first_tokens(3);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> expect;
  for (int k = 0; k < 10; ++k) expect.push_back((k * 10) % 7);
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(sorted, expect);
}

TEST(TextWindows, ShardsInterleaveSoParallelBatchesAreTheOneDeviceBatch) {
  std::vector<int32_t> ids(81);
  for (int i = 0; i < 81; ++i) ids[i] = i;
  const Dataset whole = token_windows(ids, 4);  // 20 windows
  ASSERT_EQ(whole.num_rows(), 20);
  const int n = 2, b = 3;
  BatchIterator one = whole.batch(n * b).iterator();
  std::vector<BatchIterator> ranks;
  for (int k = 0; k < n; ++k) {
    const Dataset shard = token_windows(ids, 4, 0, 0, n, k);
    EXPECT_EQ(shard.num_rows(), 10);
    EXPECT_EQ(shard.num_shards(), n);
    EXPECT_EQ(shard.shard_id(), k);
    ranks.push_back(shard.batch(b).iterator());
  }
  while (const std::vector<Tensor>* global = one.next()) {
    std::vector<const std::vector<Tensor>*> local;
    for (BatchIterator& r : ranks) local.push_back(r.next());
    for (int k = 0; k < n; ++k) {
      ASSERT_NE(local[k], nullptr);
      for (int r = 0; r < b; ++r)  // rank k's row r is global row r * n + k
        EXPECT_EQ(column_row((*local[k])[0], r), column_row((*global)[0], r * n + k));
    }
  }
}

// ---- the real corpus --------------------------------------------------------------------

TEST(TextCorpusFortunes, DebiansCorpusLoadsAndReportsItsCounts) {
  if (!std::filesystem::is_directory(kFortunesDir))
    GTEST_SKIP() << kFortunesDir << " is missing: install Debian's fortunes package (scripts/bootstrap.sh)";
  const TextCorpus corpus = TextCorpus::read();
  const int64_t train = static_cast<int64_t>(corpus.cookies(TextSplit::kTrain).size());
  const int64_t valid = static_cast<int64_t>(corpus.cookies(TextSplit::kValidation).size());
  const int64_t seq = 128;
  const Dataset windows = corpus.windows(TextSplit::kTrain, seq);
  const Dataset held_out = corpus.windows(TextSplit::kValidation, seq);
  std::cout << fmt::format(
      "fortunes: {} files, {} cookies ({} train, {} validation), {} + {} bytes, vocabulary {} symbols, "
      "{} train and {} validation windows of {}\n",
      corpus.files().size(), corpus.num_cookies(), train, valid, corpus.text(TextSplit::kTrain).size(),
      corpus.text(TextSplit::kValidation).size(), corpus.vocab().size(), windows.num_rows(), held_out.num_rows(), seq);
  RecordProperty("cookies", static_cast<int>(corpus.num_cookies()));
  RecordProperty("vocab", corpus.vocab().size());

  EXPECT_GE(corpus.files().size(), 10u);  // fortunes-min alone has 1; fortunes has dozens
  for (const std::string& f : corpus.files())
    EXPECT_THAT(f, AllOf(Not(HasSubstr(".dat")), Not(HasSubstr(".u8")))) << f;
  EXPECT_TRUE(std::is_sorted(corpus.files().begin(), corpus.files().end()));
  EXPECT_GT(corpus.num_cookies(), 1000);
  EXPECT_EQ(valid, corpus.num_cookies() / 10);
  EXPECT_EQ(train + valid, corpus.num_cookies());
  EXPECT_GT(corpus.vocab().size(), 60);  // letters, digits, punctuation at least
  EXPECT_LE(corpus.vocab().size(), 256);
  EXPECT_TRUE(corpus.vocab().contains('%') && corpus.vocab().contains('\n'));
  EXPECT_EQ(corpus.decode(corpus.ids(TextSplit::kValidation)), corpus.text(TextSplit::kValidation));
  EXPECT_GT(windows.num_rows(), 1000);
  EXPECT_GT(held_out.num_rows(), 100);
  BatchIterator it = windows.shuffle(1).batch(32).iterator();
  const std::vector<Tensor>* batch = it.next();
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ((*batch)[0].shape(), (Shape{32, seq}));
}

// ---- errors -----------------------------------------------------------------------------

TEST(TextCorpusErrors, AMissingDirectorySaysToInstallFortunes) {
  const std::string missing = "/nonexistent/sf_fortunes_dir";
  const std::string msg = error_of<IoError>([&] { TextCorpus::read(missing); });
  EXPECT_THAT(msg, AllOf(HasSubstr(missing), HasSubstr("does not exist"), HasSubstr("fortunes` package")));
  expect_one_line(msg);
  TempDir dir;
  write_text(dir.file("plain"), "x\n");
  EXPECT_THAT(error_of<IoError>([&] { TextCorpus::read(dir.file("plain")); }), HasSubstr("not a directory"));
}

TEST(TextCorpusErrors, ADirectoryWithoutFortuneFilesOrCookiesIsRefused) {
  TempDir dir;
  std::string msg = error_of<IoError>([&] { TextCorpus::read(dir.path()); });
  EXPECT_THAT(msg, AllOf(HasSubstr(dir.path()), HasSubstr("no fortune files"), HasSubstr("fortunes` package")));
  expect_one_line(msg);
  write_text(dir.file("cookie.dat"), std::string("\0\0\0\2", 4));  // an index alone is not a fortune file
  std::filesystem::create_directory(dir.file("off"));
  write_text(dir.file("off/rude"), "r\n%\n");
  EXPECT_THAT(error_of<IoError>([&] { TextCorpus::read(dir.path()); }), HasSubstr("no fortune files"));
  write_text(dir.file("blank"), "%\n\n%\n");
  msg = error_of<IoError>([&] { TextCorpus::read(dir.path()); });
  EXPECT_THAT(msg, AllOf(HasSubstr("1 fortune files"), HasSubstr("no cookies")));
}

TEST(TextCorpusErrors, ABinaryFileIsRefusedWithoutDumpingIt) {
  TempDir dir;
  std::string binary = "text\n" + std::string(3, '\0') + std::string(100000, 'x');
  write_text(dir.file("strange"), binary);
  const std::string msg = error_of<IoError>([&] { TextCorpus::read(dir.path()); });
  EXPECT_THAT(msg, AllOf(HasSubstr(dir.file("strange")), HasSubstr("NUL byte at offset 5")));
  expect_one_line(msg);
  EXPECT_THAT(msg, Not(HasSubstr("xxxxxxxx")));
}

TEST(TextCorpusErrors, BadSeqStrideOffsetAndTooShortSplitsNameTheNumbers) {
  const TextCorpus corpus = TextCorpus::from_cookies({"abcdefgh", "ij"}, 2);  // validation "ij\n%\n": 5 ids
  std::string msg = error_of<InvalidArgument>([&] { corpus.windows(TextSplit::kTrain, 0); });
  EXPECT_THAT(msg, AllOf(HasSubstr("train"), HasSubstr("seq must be >= 1, got 0")));
  expect_one_line(msg);
  EXPECT_THAT(error_of<InvalidArgument>([&] { corpus.windows(TextSplit::kTrain, 4, -1); }), HasSubstr("got -1"));
  EXPECT_THAT(error_of<InvalidArgument>([&] { corpus.windows(TextSplit::kTrain, 4, 0, -3); }), HasSubstr("got -3"));
  msg = error_of<InvalidArgument>([&] { corpus.windows(TextSplit::kValidation, 5); });
  EXPECT_THAT(msg, AllOf(HasSubstr("validation"), HasSubstr("5 tokens"), HasSubstr("seq 5"), HasSubstr("offset 0")));
  expect_one_line(msg);
  EXPECT_EQ(corpus.windows(TextSplit::kValidation, 4).num_rows(), 1);
  EXPECT_THAT(error_of<InvalidArgument>([&] { corpus.windows(TextSplit::kTrain, 2, 1, 10); }),
              AllOf(HasSubstr("11 tokens"), HasSubstr("offset 10")));
  EXPECT_THAT(error_of<InvalidArgument>([&] { corpus.windows(TextSplit::kTrain, 2, 1, 0, 2, 2); }),
              HasSubstr("shard"));
  EXPECT_THAT(error_of<InvalidArgument>([&] { corpus.num_windows(TextSplit::kTrain, -4); }), HasSubstr("got -4"));
}

TEST(TextCorpusErrors, AnEmptySplitOrBadValidationEveryIsInvalid) {
  const TextCorpus one = TextCorpus::from_cookies({"lonely"});  // no validation cookie at all
  EXPECT_TRUE(one.text(TextSplit::kValidation).empty());
  EXPECT_THAT(error_of<InvalidArgument>([&] { one.windows(TextSplit::kValidation, 1); }),
              AllOf(HasSubstr("validation"), HasSubstr("0 tokens")));
  EXPECT_THAT(error_of<InvalidArgument>([&] { TextCorpus::from_cookies({"a", "b"}, 1); }),
              AllOf(HasSubstr("validation_every must be >= 2"), HasSubstr("got 1")));
  EXPECT_THAT(error_of<InvalidArgument>([&] { TextCorpus::from_cookies({"", " \n"}); }), HasSubstr("2 cookies"));
  EXPECT_THAT(error_of<InvalidArgument>([&] { TextCorpus::read(kFortunesDir, 0); }), HasSubstr("got 0"));
}

TEST(TextCorpusErrors, WindowsThatWouldNotFitInMemoryAreRefused) {
  std::vector<int32_t> ids(1 << 17);
  // 2^16 overlapping windows of 2^16 tokens: 2^32 elements (16 GiB) a column, refused before allocating.
  const std::string msg = error_of<InvalidArgument>([&] { token_windows(ids, 65536, 1); });
  EXPECT_THAT(msg, AllOf(HasSubstr("seq 65536"), HasSubstr("larger stride")));
  expect_one_line(msg);
}

}  // namespace
}  // namespace sf::dataset
