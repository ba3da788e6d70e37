// sfckpt's test fixture: makes a checkpoint on 4 virtual ranks with split layouts (`make DIR`),
// checks that a checkpoint holds exactly those tensors, bitwise (`check DIR [WORLD]`), that a
// converted checkpoint loads under its own layouts as the original does (`same SRC DST`), and,
// where numpy is missing, checks an .npz archive with a small zip reader (`npz FILE`).
// Exit status 0 when the check holds, 1 (with one line on stderr) when it does not.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/rng.h>
#include <shardflow/parallel/reshard.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>

namespace {

using namespace sf;

struct Fixture {
  std::string name;
  Shape shape;
  DType dtype;
  TensorLayout layout;
};

// Rows split over 4 ranks, a 2x2 grid, a bias replicated over 4, and a whole i32 scalar.
std::vector<Fixture> fixtures() {
  return {
      {"fc1.weight", {8, 6}, DType::kF32, TensorLayout(DeviceMatrix({4}), {{0}, {}})},
      {"emb", {4, 6}, DType::kF32, TensorLayout(DeviceMatrix({2, 2}), {{0}, {1}})},
      {"fc1.bias", {6}, DType::kF32, TensorLayout::replicated(DeviceMatrix({4}), 1)},
      {"global_step", {}, DType::kI32, TensorLayout::replicated(DeviceMatrix({1}), 0)},
  };
}

// Distinct seeded values per tensor and element.
Tensor value_of(const Fixture& f, uint64_t seed) {
  Tensor t = Tensor::empty(f.shape, f.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (f.dtype == DType::kF32) t.f32()[i] = normal_at(seed, 3, static_cast<uint64_t>(i));
    else t.i32()[i] = 30;
  }
  return t;
}

int make(const std::string& dir) {
  const std::vector<Fixture> fs = fixtures();
  std::vector<std::vector<Tensor>> blocks;
  for (size_t i = 0; i < fs.size(); ++i) {
    const Tensor global = value_of(fs[i], 100 + i);
    blocks.push_back(reshard({global}, fs[i].shape, TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(fs[i].shape.size())),
                             fs[i].layout));
  }
  comm::JobSpec spec;
  spec.source = comm::JobSpec::Source::kDevices;
  spec.size = 4;
  spec.local_ranks = 4;
  comm::init(spec);
  comm::run_ranks([&] {
    const int rank = comm::get_rank();
    std::vector<ckpt::ShardedTensor> mine;
    for (size_t i = 0; i < fs.size(); ++i) {
      const int layout_rank = fs[i].layout.mesh().device_count() == 1 ? 0 : rank;
      mine.push_back({fs[i].name, blocks[i][static_cast<size_t>(layout_rank)], fs[i].shape, fs[i].layout, layout_rank});
    }
    ckpt::save_checkpoint_dir(dir, mine,
                              {.step = 30, .parallel_mode = "semi_auto_parallel", .state = {{"epoch", 1}},
                               .rank_state = {{"rank", rank}}});
  });
  comm::release();
  return 0;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

int check(const std::string& dir, int world) {
  ckpt::CheckpointReader reader(dir);
  const std::vector<Fixture> fs = fixtures();
  if (reader.manifest().tensors.size() != fs.size()) throw Error(fmt::format("{} tensors", reader.manifest().tensors.size()));
  if (reader.manifest().world_size != world) throw Error(fmt::format("world size {}", reader.manifest().world_size));
  if (reader.state() != nlohmann::json{{"epoch", 1}}) throw Error("state " + reader.state().dump());
  for (size_t i = 0; i < fs.size(); ++i)
    if (!same_bits(reader.read_whole(fs[i].name), value_of(fs[i], 100 + i))) throw Error(fs[i].name + " differs");
  reader.verify_all();
  return 0;
}

// Every rank of `dst`'s layouts reads from `dst` bitwise what it reads from `src` under the same
// layout, and exactly its shard's bytes (its blocks only); step, state and, where the job's size
// is kept, each rank's state are those of `src` (null otherwise).
int same(const std::string& src, const std::string& dst) {
  ckpt::CheckpointReader a(src), b(dst);
  if (a.step() != b.step()) throw Error(fmt::format("step {} vs {}", a.step(), b.step()));
  if (a.state() != b.state()) throw Error("state " + b.state().dump());
  const int world = b.manifest().world_size;
  for (int r = 0; r < world; ++r) {
    const nlohmann::json want = world == a.manifest().world_size ? a.rank_state(r) : nlohmann::json();
    if (b.rank_state(r) != want) throw Error(fmt::format("rank {} state {}", r, b.rank_state(r).dump()));
  }
  if (b.manifest().tensors.size() != a.manifest().tensors.size()) throw Error("another number of tensors");
  for (const ckpt::TensorEntry& t : b.manifest().tensors) {
    for (int r = 0; r < t.layout.mesh().device_count(); ++r) {
      ckpt::CheckpointReader mine(dst);  // one per rank: its own byte count
      const Tensor got = mine.read(t.name, t.layout, r);
      if (!same_bits(got, a.read(t.name, t.layout, r)))
        throw Error(fmt::format("{}: rank {}'s block differs", t.name, r));
      if (mine.bytes_read() != static_cast<int64_t>(got.nbytes()))
        throw Error(
            fmt::format("{}: rank {} read {} bytes for a block of {}", t.name, r, mine.bytes_read(), got.nbytes()));
    }
  }
  return 0;
}

uint32_t u16(const std::string& s, size_t at) {
  return static_cast<uint8_t>(s.at(at)) | static_cast<uint32_t>(static_cast<uint8_t>(s.at(at + 1))) << 8;
}
uint32_t u32(const std::string& s, size_t at) { return u16(s, at) | u16(s, at + 2) << 16; }

// Walks the local headers: each member stored, its crc32 right, its .npy data the tensor's bytes.
int check_npz(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string z{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::vector<Fixture> fs = fixtures();
  size_t at = 0;
  for (size_t i = 0; i < fs.size(); ++i) {
    if (u32(z, at) != 0x04034b50 || u16(z, at + 8) != 0) throw Error(fmt::format("member {}: not a stored member", i));
    const uint32_t crc = u32(z, at + 14), size = u32(z, at + 18), name_len = u16(z, at + 26);
    const std::string name = z.substr(at + 30, name_len);
    const std::string data = z.substr(at + 30 + name_len + u16(z, at + 28), size);
    if (name != fs[i].name + ".npy") throw Error("member " + name);
    if (crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())) != crc)
      throw Error(name + ": crc32");
    if (data.compare(0, 6, "\x93NUMPY") != 0) throw Error(name + ": no .npy magic");
    const size_t header_end = 10 + u16(data, 8);
    if (header_end % 64 != 0 || data.at(header_end - 1) != '\n') throw Error(name + ": header not padded");
    const Tensor want = value_of(fs[i], 100 + i);
    if (data.substr(header_end) != std::string(static_cast<const char*>(want.raw()), want.nbytes()))
      throw Error(name + ": data differs");
    at += 30 + name_len + size;
  }
  if (u32(z, at) != 0x02014b50) throw Error("no central directory after the members");
  if (u32(z, z.size() - 22) != 0x06054b50 || u16(z, z.size() - 12) != fs.size())
    throw Error("end of central directory");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "make") return make(args[1]);
    if (args.size() == 3 && args[0] == "check") return check(args[1], std::stoi(args[2]));
    if (args.size() == 2 && args[0] == "npz") return check_npz(args[1]);
    if (args.size() == 3 && args[0] == "same") return same(args[1], args[2]);
  } catch (const std::exception& e) {
    std::cerr << "ckpt_fixture: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: ckpt_fixture make DIR | check DIR WORLD | same SRC DST | npz FILE\n";
  return 2;
}
