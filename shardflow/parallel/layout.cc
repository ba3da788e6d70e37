#include <shardflow/parallel/layout.h>

#include <fmt/format.h>

#include <algorithm>

#include <shardflow/core/error.h>

namespace sf {

namespace {
constexpr const char* kNone = "None";

std::string quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const auto& n : names) q.push_back(fmt::format("'{}'", n));
  return fmt::format("{}", fmt::join(q, ", "));
}

// "layout('mp', ('sp', 'dp'))", as the user wrote the call.
std::string call_str(const std::vector<DimAxes>& dims) {
  std::vector<std::string> parts;
  for (const DimAxes& d : dims)
    parts.push_back(d.names().size() == 1 ? quoted(d.names()) : fmt::format("({})", quoted(d.names())));
  return fmt::format("layout({})", fmt::join(parts, ", "));
}
}  // namespace

Layout::Layout(std::vector<int64_t> device_matrix, std::vector<std::string> alias_name)
    : mesh_(std::move(device_matrix)), names_(std::move(alias_name)) {
  SF_ENFORCE(static_cast<int>(names_.size()) == mesh_.axes(), InvalidArgument,
             "{}: {} alias names for a device matrix of {} axes", str(), names_.size(), mesh_.axes());
  for (size_t i = 0; i < names_.size(); ++i) {
    SF_ENFORCE(!names_[i].empty() && names_[i] != kNone, InvalidArgument,
               "{}: axis {} may not be named '{}' (\"None\" means not split)", str(), i, names_[i]);
    SF_ENFORCE(std::find(names_.begin(), names_.begin() + i, names_[i]) == names_.begin() + i, InvalidArgument,
               "{}: alias name '{}' is given twice", str(), names_[i]);
  }
}

int Layout::axis(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  SF_ENFORCE(it != names_.end(), InvalidArgument, "{}: unknown axis name '{}' (the axes are {})", str(), name,
             quoted(names_));
  return static_cast<int>(it - names_.begin());
}

TensorLayout Layout::apply(const std::vector<DimAxes>& dims) const {
  const std::string spec = call_str(dims);
  SF_ENFORCE(!dims.empty() && dims.size() <= 8, InvalidArgument, "{} on {}: a tensor has 1 to 8 dims, got {}", spec,
             str(), dims.size());
  TensorLayout::TensorMap map(dims.size());
  std::vector<std::string> used;
  for (size_t d = 0; d < dims.size(); ++d) {
    const auto& names = dims[d].names();
    SF_ENFORCE(!names.empty(), InvalidArgument, "{} on {}: dim {} names no axis (write \"None\")", spec, str(), d);
    if (names.size() == 1 && names[0] == kNone) continue;
    for (const std::string& name : names) {
      SF_ENFORCE(name != kNone, InvalidArgument, "{} on {}: \"None\" cannot be combined with axes in dim {}", spec,
                 str(), d);
      SF_ENFORCE(std::find(used.begin(), used.end(), name) == used.end(), InvalidArgument,
                 "{} on {}: axis '{}' is used twice in one tensor", spec, str(), name);
      SF_ENFORCE(std::find(names_.begin(), names_.end(), name) != names_.end(), InvalidArgument,
                 "{} on {}: unknown axis name '{}' (the axes are {})", spec, str(), name, quoted(names_));
      used.push_back(name);
      map[d].push_back(axis(name));
    }
  }
  return TensorLayout(mesh_, std::move(map), {}, names_, spec);
}

std::string Layout::str() const { return fmt::format("Layout({}, ({}))", mesh_.str(), quoted(names_)); }

}  // namespace sf
