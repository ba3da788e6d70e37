#include <shardflow/ops/attrs.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <shardflow/core/error.h>

namespace sf {

namespace {
template <class T>
const T* typed(const std::map<std::string, AttrValue>& m, const std::string& key, const char* want) {
  auto it = m.find(key);
  if (it == m.end()) return nullptr;
  const T* p = std::get_if<T>(&it->second);
  SF_ENFORCE(p != nullptr, InvalidArgument, "attribute '{}' is not of type {}", key, want);
  return p;
}
}  // namespace

int64_t Attrs::get_int(const std::string& key, int64_t def) const {
  const auto* p = typed<int64_t>(values_, key, "int");
  return p ? *p : def;
}

double Attrs::get_float(const std::string& key, double def) const {
  auto it = values_.find(key);
  if (it != values_.end())
    if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  const auto* p = typed<double>(values_, key, "float");
  return p ? *p : def;
}

std::string Attrs::get_str(const std::string& key, const std::string& def) const {
  const auto* p = typed<std::string>(values_, key, "string");
  return p ? *p : def;
}

std::vector<int64_t> Attrs::get_ints(const std::string& key, const std::vector<int64_t>& def) const {
  const auto* p = typed<std::vector<int64_t>>(values_, key, "int list");
  return p ? *p : def;
}

std::string Attrs::str() const {
  if (values_.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [k, v] : values_) {
    std::string s = std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>)
            return fmt::format("({})", fmt::join(x, ", "));
          else if constexpr (std::is_same_v<T, std::string>)
            return fmt::format("'{}'", x);
          else
            return fmt::format("{}", x);
        },
        v);
    parts.push_back(k + "=" + s);
  }
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

}  // namespace sf
