// Parameter: a named trainable tensor shared by the cell that owns it, the optimizer that
// updates it and the runtime that reads it (a handle: copies refer to the same tensor).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace sf {

class Parameter {
 public:
  Parameter() = default;
  // `init` names an initializer (train/initializer.h); values are generated when the
  // parameter gets its full name, because the name selects its random stream.
  Parameter(Shape shape, std::string init);

  bool defined() const { return data_ != nullptr; }
  const std::string& name() const { return data_->name; }
  const Shape& shape() const { return data_->value.shape(); }
  Tensor& value() { return data_->value; }
  const Tensor& value() const { return data_->value; }
  const std::string& init() const { return data_->init; }
  bool initialized() const { return data_->initialized; }

  // Sets the full name and, the first time, fills the value from (seed, name).
  void finalize(const std::string& full_name, uint64_t seed);
  bool operator==(const Parameter& o) const { return data_ == o.data_; }

 private:
  struct Data {
    std::string name;
    std::string init;
    Tensor value;
    bool initialized = false;
  };
  std::shared_ptr<Data> data_;
};

using ParameterList = std::vector<Parameter>;

// The global seed (MindSpore's set_seed): parameter initialisation and shuffles derive from it.
void set_seed(uint64_t seed);
uint64_t get_seed();

}  // namespace sf
