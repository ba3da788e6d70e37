#include <shardflow/comm/text_tensor.h>

#include <vector>

namespace sf::comm {

Tensor text_tensor(std::string_view s) {
  std::vector<int32_t> v(s.begin(), s.end());
  return Tensor::from_vector({static_cast<int64_t>(v.size())}, v);
}

std::string tensor_text(const Tensor& t) {
  std::string s;
  if (t.dtype() != DType::kI32 || t.shape().size() != 1) return s;
  s.reserve(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) s.push_back(static_cast<char>(t.i32()[i]));
  return s;
}

}  // namespace sf::comm
