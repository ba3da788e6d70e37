/// @file
/// Attributes of a graph node: a small ordered map from name to int, float, string or int list.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace sf {

/// One attribute value: an int, a float, a string or a list of ints.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

/// A node's attributes by name, e.g.\ {{"axis", 1}}.
class Attrs {
 public:
  Attrs() = default;  ///< no attributes
  /// The attributes listed, e.g.\ {{"transpose_b", 1}}.
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}

  /// Sets (or replaces) `key`; returns *this to chain calls.
  Attrs& set(const std::string& key, AttrValue v) {
    values_[key] = std::move(v);
    return *this;
  }
  /// Whether `key` is set.
  bool has(const std::string& key) const { return values_.count(key) != 0; }

  ///@{
  /// Typed getters; a missing key gives the default, a key of another type throws InvalidArgument.
  int64_t get_int(const std::string& key, int64_t def = 0) const;
  bool get_bool(const std::string& key, bool def = false) const { return get_int(key, def) != 0; }
  double get_float(const std::string& key, double def = 0.0) const;
  std::string get_str(const std::string& key, const std::string& def = "") const;
  std::vector<int64_t> get_ints(const std::string& key, const std::vector<int64_t>& def = {}) const;
  ///@}

  /// Every attribute, by name.
  const std::map<std::string, AttrValue>& values() const { return values_; }
  /// "{axis=1, transpose_b=1}", "" when empty.
  std::string str() const;

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace sf
