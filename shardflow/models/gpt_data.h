/// @file
/// gpt_windows: a fortune corpus's next-character windows in the rows a Gpt (models/gpt.h) takes,
/// shared by the example, the benchmarks and the tests so that all of them feed the same rows.
///
/// Row k of a split: `data` (seq + 1) i32, its column 0 the sample's dropout seed (k, the window's
/// index, so a sample draws the same mask on any rank, layout or micro-batch) and then the
/// window's tokens; `labels` (seq) i32, the next token of each position. Windows do not overlap:
/// row k starts at token k * seq of the split.
///
/// Threading: the Dataset reads the corpus's ids, which must outlive it.
#pragma once

#include <cstdint>

#include <shardflow/data/dataset.h>
#include <shardflow/data/text_corpus.h>

namespace sf::models {

/// The first `rows` windows of `seq` tokens of `split` (every window when rows is 0). Throws
/// InvalidArgument, naming the split and the numbers, when the split holds no window or fewer
/// than `rows`.
dataset::Dataset gpt_windows(const dataset::TextCorpus& corpus, dataset::TextSplit split, int64_t seq,
                             int64_t rows = 0);

}  // namespace sf::models
