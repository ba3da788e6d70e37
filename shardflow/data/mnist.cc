// Dataset::mnist: MNIST-like IDX files -> the "image" and "label" columns of one shard.
#include <sys/stat.h>

#include <shardflow/core/error.h>
#include <shardflow/data/dataset.h>
#include <shardflow/data/idx_file.h>
#include <shardflow/data/sharding.h>

namespace sf::dataset {

namespace {

constexpr const char* kMnist = "MnistDataset";

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The existing raw or .gz file for `base`; IoError naming both candidates if neither exists.
std::string require_file(const std::string& dir, const std::string& base) {
  std::string path = find_idx_file(dir, base);
  SF_ENFORCE(!path.empty(), IoError, "cannot open '{0}/{1}' or '{0}/{1}.gz': No such file or directory", dir, base);
  return path;
}

// The two files of `usage` in `dir`, their labels read and checked against the images'
// header and num_classes; the images' data is not read.
struct CheckedFiles {
  std::string images_path, labels_path;
  IdxArray labels;
};

CheckedFiles check_files(const std::string& dir, const std::string& usage, int num_classes) {
  SF_ENFORCE(usage == "train" || usage == "test", InvalidArgument,
             "{}: usage must be \"train\" or \"test\", got \"{}\"", kMnist, usage);
  SF_ENFORCE(num_classes >= 1 && num_classes <= 256, InvalidArgument,
             "{}: num_classes must be in 1..256 (labels are bytes), got {}", kMnist, num_classes);
  const std::string prefix = usage == "train" ? "train" : "t10k";
  const std::string images_base = prefix + "-images-idx3-ubyte";
  const std::string labels_base = prefix + "-labels-idx1-ubyte";
  SF_ENFORCE(is_directory(dir), IoError,
             "{}: dataset directory '{}' does not exist or is not a directory (looked for {}[.gz] and {}[.gz])", kMnist,
             dir, images_base, labels_base);

  CheckedFiles f;
  f.images_path = require_file(dir, images_base);
  f.labels_path = require_file(dir, labels_base);
  const IdxArray images = read_idx_header(f.images_path, kIdxImagesMagic, "images");
  f.labels = read_idx(f.labels_path, kIdxLabelsMagic, "labels");
  SF_ENFORCE(images.count() == f.labels.count(), IoError, "'{}' holds {} images but '{}' holds {} labels",
             f.images_path, images.count(), f.labels_path, f.labels.count());
  // Every label, not only this shard's, so that all ranks refuse the same file alike. A label
  // out of range would otherwise fail deep inside the loss op, naming neither file nor sample.
  for (size_t i = 0; i < f.labels.bytes.size(); ++i)
    SF_ENFORCE(f.labels.bytes[i] < num_classes, IoError,
               "'{}': label {} of sample {} is not below the class count {}", f.labels_path, f.labels.bytes[i], i,
               num_classes);
  return f;
}

}  // namespace

void Dataset::check_mnist(const std::string& dir, const std::string& usage, int num_classes) {
  check_files(dir, usage, num_classes);
}

Dataset Dataset::mnist(const std::string& dir, const std::string& usage, int num_shards, int shard_id,
                       int num_classes) {
  check_shard_args(kMnist, num_shards, shard_id);
  const CheckedFiles f = check_files(dir, usage, num_classes);
  const IdxArray images = read_idx(f.images_path, kIdxImagesMagic, "images");
  const IdxArray& labels = f.labels;
  // The header was checked above; the file may have changed since.
  SF_ENFORCE(images.count() == labels.count(), IoError, "'{}' holds {} images but '{}' holds {} labels",
             f.images_path, images.count(), f.labels_path, labels.count());

  // Convert only this shard's rows, straight from bytes: no full-size f32 copy is ever made.
  const int64_t height = images.dims[1], width = images.dims[2], pixels = height * width;
  const std::vector<int64_t> index = shard_indices(images.count(), num_shards, shard_id);
  const auto rows = static_cast<int64_t>(index.size());
  Tensor image({rows, height, width, 1}, DType::kF32);
  Tensor label({rows}, DType::kI32);
  float* x = image.f32();
  int32_t* y = label.i32();
  for (int64_t j = 0; j < rows; ++j) {
    const uint8_t* src = images.bytes.data() + index[j] * pixels;
    for (int64_t p = 0; p < pixels; ++p) x[j * pixels + p] = static_cast<float>(src[p]);
    y[j] = labels.bytes[index[j]];
  }
  return Dataset({"image", "label"}, {std::move(image), std::move(label)}).sharded_as(num_shards, shard_id);
}

}  // namespace sf::dataset
