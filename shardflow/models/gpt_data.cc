#include <shardflow/models/gpt_data.h>

#include <algorithm>
#include <span>

#include <shardflow/core/error.h>

namespace sf::models {

dataset::Dataset gpt_windows(const dataset::TextCorpus& corpus, dataset::TextSplit split, int64_t seq, int64_t rows) {
  const char* name = split == dataset::TextSplit::kTrain ? "training" : "validation";
  const int64_t available = corpus.num_windows(split, seq);
  SF_ENFORCE(available > 0, InvalidArgument, "gpt: the {} text has no window of {} tokens", name, seq + 1);
  SF_ENFORCE(rows <= available, InvalidArgument, "gpt: the {} text holds {} windows of {} tokens, fewer than the {} "
             "asked for", name, available, seq + 1, rows);
  const std::span<const int32_t> ids = corpus.ids(split);
  return dataset::Dataset::generator(
      [ids, seq](int64_t k) {
        Tensor data({seq + 1}, DType::kI32), labels({seq}, DType::kI32);
        data.i32()[0] = static_cast<int32_t>(k);
        std::copy_n(ids.data() + k * seq, seq, data.i32() + 1);
        std::copy_n(ids.data() + k * seq + 1, seq, labels.i32());
        return std::vector<Tensor>{data, labels};
      },
      rows > 0 ? rows : available, {"data", "labels"});
}

}  // namespace sf::models
