#include <shardflow/parallel/device_matrix.h>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

int64_t device_product(const std::vector<int64_t>& dims, std::string_view what) {
  SF_ENFORCE(dims.size() <= kMaxDeviceAxes, InvalidArgument, "{} {}: has {} dims, more than {}", what,
             brief_ints(dims), dims.size(), kMaxDeviceAxes);
  int64_t n = 1;
  for (int64_t d : dims) {
    SF_ENFORCE(d >= 1, InvalidArgument, "{} {}: every dim must be at least 1", what, brief_ints(dims));
    SF_ENFORCE(d <= kMaxDevices && n * d <= kMaxDevices, InvalidArgument, "{} {}: spans more than {} devices", what,
               brief_ints(dims), kMaxDevices);
    n *= d;  // both factors are at most 2^24: no overflow
  }
  return n;
}

DeviceMatrix::DeviceMatrix(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  device_product(dims_, "device matrix");
}

int64_t DeviceMatrix::device_count() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;  // bounded by the constructor
  return n;
}

int64_t DeviceMatrix::size_of(const std::vector<int>& axes) const {
  int64_t n = 1;
  for (int a : axes) n *= dims_.at(a);
  return n;
}

std::vector<int64_t> DeviceMatrix::coords(int64_t rank) const {
  SF_ENFORCE(rank >= 0 && rank < device_count(), InvalidArgument, "device matrix {}: rank {} is out of range [0, {})",
             str(), rank, device_count());
  std::vector<int64_t> c(dims_.size());
  for (int a = axes() - 1; a >= 0; --a) {
    c[a] = rank % dims_[a];
    rank /= dims_[a];
  }
  return c;
}

int64_t DeviceMatrix::rank_of(const std::vector<int64_t>& coords) const {
  SF_ENFORCE(coords.size() == dims_.size(), InvalidArgument, "device matrix {}: {} coordinates for {} axes", str(),
             coords.size(), dims_.size());
  int64_t rank = 0;
  for (int a = 0; a < axes(); ++a) {
    SF_ENFORCE(coords[a] >= 0 && coords[a] < dims_[a], InvalidArgument,
               "device matrix {}: coordinate {} is out of range on axis {}", str(), coords[a], a);
    rank = rank * dims_[a] + coords[a];
  }
  return rank;
}

int64_t DeviceMatrix::index_on(int64_t rank, const std::vector<int>& axes) const {
  const std::vector<int64_t> c = coords(rank);
  int64_t index = 0;
  for (int a : axes) index = index * dims_.at(a) + c[a];
  return index;
}

std::vector<int> DeviceMatrix::group(int64_t rank, const std::vector<int>& axes) const {
  std::vector<bool> along(dims_.size(), false);
  for (int a : axes) along.at(a) = true;
  const std::vector<int64_t> c = coords(rank);
  std::vector<int> ranks;
  // Ascending rank order is row-major order, so walking all ranks keeps the list sorted.
  for (int64_t r = 0; r < device_count(); ++r) {
    const std::vector<int64_t> o = coords(r);
    bool same = true;
    for (size_t a = 0; a < dims_.size() && same; ++a) same = along[a] || o[a] == c[a];
    if (same) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

std::vector<std::vector<int>> DeviceMatrix::groups(const std::vector<int>& axes) const {
  std::vector<std::vector<int>> out;
  std::vector<bool> seen(device_count(), false);
  for (int64_t r = 0; r < device_count(); ++r) {
    if (seen[r]) continue;
    out.push_back(group(r, axes));
    for (int m : out.back()) seen[m] = true;
  }
  return out;
}

DeviceMatrix DeviceMatrix::fit_to(int64_t device_count, std::string_view what) const {
  const int64_t n = this->device_count();
  if (n == device_count) return *this;
  SF_ENFORCE(device_count % n == 0, InvalidArgument,
             "{}: device matrix {} has {} devices, which neither equals nor divides the {} devices of the job", what,
             str(), n, device_count);
  std::vector<int64_t> dims = dims_;
  dims.push_back(device_count / n);
  return DeviceMatrix(std::move(dims));
}

std::string DeviceMatrix::str() const { return fmt::format("({})", fmt::join(dims_, ",")); }

}  // namespace sf
