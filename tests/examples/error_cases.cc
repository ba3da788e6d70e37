// A user program for each kind of bad input the foundation must refuse: it prints the
// library's one-line error and exits 1. ctest runs every case and checks the message, the
// exit code, and that nothing crashed or hung.
//   error_cases CASE [DIR]
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <zlib.h>

#include <shardflow/shardflow.h>

namespace {

using namespace sf;

// An IDX images file with the given magic and a payload cut to `keep` of its 4 images.
void write_idx(const std::string& path, uint32_t magic, size_t keep_bytes) {
  std::ofstream f(path, std::ios::binary);
  auto be32 = [&](uint32_t v) {
    const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    f.write(b, 4);
  };
  be32(magic);
  be32(4);
  be32(28);
  be32(28);
  std::string pixels(keep_bytes, '\x10');
  f.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
}

void train_briefly(const dataset::Dataset& ds, const std::string& optimizer = "sgd") {
  nn::Mlp net(4, {8}, 3);
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), nn::make_optimizer(optimizer, net.trainable_params(), 0.1f));
  model.train(1, ds.batch(4), {});
}

dataset::Dataset toy(DType label_dtype) {
  return dataset::Dataset::generator(
      [label_dtype](int64_t i) {
        Tensor label({}, label_dtype);
        label.fill(static_cast<float>(i % 3));
        return std::vector<Tensor>{Tensor::full({4}, 0.5f), label};
      },
      8, {"x", "y"});
}

void run(const std::string& which, const std::string& dir) {
  if (which == "dataset_missing") {
    dataset::Dataset::mnist(dir + "/no_such_dir");
  } else if (which == "idx_truncated" || which == "idx_bad_magic") {
    std::filesystem::create_directories(dir);
    write_idx(dir + "/train-images-idx3-ubyte", which == "idx_truncated" ? 0x803 : 0x804,
              which == "idx_truncated" ? 1000 : 4 * 28 * 28);
    std::ofstream(dir + "/train-labels-idx1-ubyte", std::ios::binary).write("\0\0\x08\x01\0\0\0\x04\1\2\3\4", 12);
    dataset::Dataset::mnist(dir);
  } else if (which == "label_dtype") {
    train_briefly(toy(DType::kF32));
  } else if (which == "matmul_inner") {
    Graph g;
    GraphBuilder b(g);
    b.push_scope("fc1");
    b.matmul(b.input("x", {32, 784}), b.parameter("w", {512, 10}));
  } else if (which == "unknown_optimizer") {
    train_briefly(toy(DType::kI32), "adamw");
  } else {
    throw std::invalid_argument("unknown case " + which);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  try {
    run(argv[1], argc > 2 ? argv[2] : ".");
  } catch (const sf::Error& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  std::cerr << "no error for case " << argv[1] << std::endl;
  return 3;
}
