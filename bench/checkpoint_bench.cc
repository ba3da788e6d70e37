// Distributed checkpoint I/O against the disk's sequential speed, in one run on one directory:
//
//   save   a synthetic training state of --mb MiB (--tensors f32 matrices, rows split over
//          --ranks virtual ranks) saved with save_checkpoint_dir (every rank writes and fsyncs
//          its file, rank 0 commits the manifest), against a dd-like write of as many bytes:
//          one file written in 4 MiB chunks, then fsync (dd bs=4M conv=fsync). Goal: >= 0.8x
//          of its throughput.
//   load   the last saved step read back on --load-ranks ranks (one thread each, its own
//          CheckpointReader) under a row split over that many ranks — a count coprime to the
//          saving one, so blocks are cut and resharded — against a sequential read of the dd
//          file in 4 MiB chunks (dd of=/dev/null bs=4M). Caches are not dropped: both read the
//          page cache, the files having just been written, so the comparison is fair but
//          measures the read path, not the device.
//          Then each load rank's bytes read against its shard bytes (goal <= 1.1x).
//   async  AsyncCheckpointWriter (train/checkpoint/async_save.h) on the same ranks and state:
//          rank 0's blocking time in save() (phase 1's agreement, then one copy of each block it
//          writes into staging buffers reused across saves) against a plain memcpy of the same
//          local blocks into buffers reused likewise, every rank copying at once as in the save
//          (goal <= 1.2x). Then a "training step" — one fixed OpenBLAS sgemm of --step-n, on one
//          BLAS thread — timed while a save of the whole state by one rank is written in the
//          background, against the same step with no save (goal within 10%). On a machine of few
//          cores (2 here) the writer thread competes with the step for CPU (its copy into the
//          page cache and its CRC32s) and for memory bandwidth: that is what the ratio measures.
//
// Every figure is the median of --repeat runs (saves and writes alternate, then loads and
// reads alternate). --dir names where the run's fresh directory is made (default /tmp); it is
// removed at the end.
//
//   ./build/bench/checkpoint_bench [--mb 256] [--ranks 4] [--load-ranks 3] [--repeat 3] [--step-n 512] [--dir DIR]

#include <fcntl.h>
#include <unistd.h>

#include <cblas.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fmt/format.h>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/barrier.h>
#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/cli_checks.h>
#include <shardflow/core/error.h>
#include <shardflow/train/checkpoint/async_save.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kChunk = 4 * kMiB;  // dd's bs=4M
constexpr int64_t kCols = 1024;       // 4 KiB rows

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mib_per_s(int64_t bytes, double seconds) { return static_cast<double>(bytes) / kMiB / seconds; }

// The synthetic state: `tensors` matrices of (rows, kCols) f32, rows a multiple of both rank
// counts so that both layouts tile them evenly.
struct State {
  int tensors = 0;
  int64_t rows = 0;
  int64_t bytes() const { return tensors * rows * kCols * 4; }
};

std::string tensor_name(int i) { return fmt::format("layer{}.weight", i); }

sf::TensorLayout row_split(int ranks) { return sf::TensorLayout(sf::DeviceMatrix({ranks}), {{0}, {}}); }

// Rank `rank`'s row block of tensor `t`: distinct non-zero values (a file of zeros could be
// stored sparse by some file systems).
sf::Tensor block_of(const State& s, int t, int rank, int ranks) {
  const int64_t rows = s.rows / ranks;
  sf::Tensor b = sf::Tensor::empty({rows, kCols}, sf::DType::kF32);
  const int64_t first = (t * s.rows + rank * rows) * kCols;
  float* p = b.f32();
  for (int64_t i = 0; i < b.numel(); ++i) p[i] = static_cast<float>((first + i) % 8191) + 0.5f;
  return b;
}

void check_io(bool ok, const std::string& what) {
  if (!ok) throw sf::IoError(fmt::format("{}: {}", what, std::strerror(errno)));
}

// dd if=/dev/zero of=F bs=4M conv=fsync, in process, from a buffer of non-zero bytes.
double time_dd_write(const std::string& path, int64_t bytes) {
  std::vector<char> chunk(static_cast<size_t>(kChunk));
  std::iota(chunk.begin(), chunk.end(), char{1});
  fs::remove(path);
  const auto t0 = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  check_io(fd >= 0, "open " + path);
  for (int64_t done = 0; done < bytes;) {
    const auto n = static_cast<size_t>(std::min(kChunk, bytes - done));
    const ssize_t w = ::write(fd, chunk.data(), n);
    check_io(w > 0, "write " + path);
    done += w;
  }
  check_io(::fsync(fd) == 0, "fsync " + path);
  ::close(fd);
  return seconds_since(t0);
}

// dd if=F of=/dev/null bs=4M: every byte copied into one reused 4 MiB buffer.
double time_dd_read(const std::string& path, int64_t bytes) {
  std::vector<char> chunk(static_cast<size_t>(kChunk));
  const auto t0 = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  check_io(fd >= 0, "open " + path);
  int64_t done = 0;
  for (ssize_t r; (r = ::read(fd, chunk.data(), chunk.size())) > 0;) done += r;
  ::close(fd);
  if (done != bytes) throw sf::IoError(fmt::format("read {}: {} bytes, expected {}", path, done, bytes));
  return seconds_since(t0);
}

// One save of step `step` on the job's ranks; rank 0's time from a barrier to the collective's end.
double time_save(const std::string& dir, const State& s, int64_t step) {
  const int ranks = sf::comm::job().size;
  double seconds = 0;
  sf::comm::run_ranks([&] {
    const int rank = sf::comm::get_rank();
    std::vector<sf::ckpt::ShardedTensor> mine;
    for (int t = 0; t < s.tensors; ++t)
      mine.push_back({tensor_name(t), block_of(s, t, rank, ranks), {s.rows, kCols}, row_split(ranks), rank});
    sf::comm::barrier({});
    const auto t0 = Clock::now();
    sf::ckpt::save_checkpoint_dir(dir, mine, {.step = step, .parallel_mode = "semi_auto_parallel"});
    if (rank == 0) seconds = seconds_since(t0);  // the save ends with an AllGather of the outcome
  });
  return seconds;
}

// Rank `rank`'s blocks of the state, as saved under row_split(ranks).
std::vector<sf::ckpt::ShardedTensor> rank_blocks(const State& s, int rank, int ranks) {
  std::vector<sf::ckpt::ShardedTensor> mine;
  for (int t = 0; t < s.tensors; ++t)
    mine.push_back({tensor_name(t), block_of(s, t, rank, ranks), {s.rows, kCols}, row_split(ranks), rank});
  return mine;
}

struct Blocking {
  std::vector<double> save, copy;  // per run, rank 0's seconds
};

// `repeat` asynchronous saves (steps first, first + 1, ...; keep 1) after one untimed warm-up
// that allocates the staging buffers, each against a memcpy of the same blocks; rank 0's time
// from a barrier to save()'s return, or to the end of its copy.
Blocking time_async_blocking(const std::string& dir, const State& s, int64_t first, int repeat) {
  const int ranks = sf::comm::job().size;
  Blocking out;
  sf::comm::run_ranks([&] {
    const int rank = sf::comm::get_rank();
    const std::vector<sf::ckpt::ShardedTensor> mine = rank_blocks(s, rank, ranks);
    std::vector<sf::Tensor> dst;
    for (const sf::ckpt::ShardedTensor& t : mine) dst.push_back(sf::Tensor::zeros(t.local.shape()));  // touched
    sf::ckpt::AsyncCheckpointWriter writer;
    writer.save(dir, mine, {.step = first, .keep = 1});
    writer.wait();
    for (int k = 1; k <= repeat; ++k) {
      sf::comm::barrier({});
      auto t0 = Clock::now();
      for (size_t i = 0; i < mine.size(); ++i) std::memcpy(dst[i].raw(), mine[i].local.raw(), mine[i].local.nbytes());
      if (rank == 0) out.copy.push_back(seconds_since(t0));
      sf::comm::barrier({});
      t0 = Clock::now();
      writer.save(dir, mine, {.step = first + k, .keep = 1});
      if (rank == 0) out.save.push_back(seconds_since(t0));
      writer.wait();
    }
  });
  return out;
}

// The stand-in training step: C = A B, (n x n) f32, on one BLAS thread.
struct Step {
  explicit Step(int n) : n(n), a(sf::Tensor::full({n, n}, 0.5f)), b(sf::Tensor::full({n, n}, 0.25f)),
                         c(sf::Tensor::zeros({n, n})) {}
  double run() {
    const auto t0 = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);
    return seconds_since(t0);
  }
  int n;
  sf::Tensor a, b, c;
};

struct StepTimes {
  std::vector<double> without, during;  // every step's seconds
};

// On this thread (no rank: the save is one rank's, of the whole state): per run, steps while a
// save is written in the background, then as many steps with no save.
StepTimes time_steps_during_save(const std::string& dir, const State& s, int64_t first, int repeat, int n) {
  std::vector<sf::ckpt::ShardedTensor> whole;
  for (int t = 0; t < s.tensors; ++t)
    whole.push_back(sf::ckpt::ShardedTensor::whole(tensor_name(t), block_of(s, t, 0, 1)));
  Step step(n);
  StepTimes out;
  sf::ckpt::AsyncCheckpointWriter writer;
  writer.save(dir, whole, {.step = first, .keep = 1});  // warm-up: the staging buffers
  writer.wait();
  for (int k = 1; k <= repeat; ++k) {
    writer.save(dir, whole, {.step = first + k, .keep = 1});
    const size_t before = out.during.size();
    while (!writer.written()) out.during.push_back(step.run());
    writer.wait();
    for (size_t i = before; i < out.during.size(); ++i) out.without.push_back(step.run());  // as many, alone
  }
  return out;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

struct LoadResult {
  double seconds = 0;
  std::vector<int64_t> read, shard;  // per load rank: bytes read from rank files, its blocks' bytes
};

// Every load rank, one thread each, reads its row block of every tensor; wall time of them all.
LoadResult time_load(const std::string& dir, const State& s, int ranks) {
  LoadResult r;
  r.read.assign(static_cast<size_t>(ranks), 0);
  r.shard.assign(static_cast<size_t>(ranks), 0);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      try {
        sf::ckpt::CheckpointReader reader(dir);
        for (int t = 0; t < s.tensors; ++t)
          r.shard[static_cast<size_t>(rank)] +=
              static_cast<int64_t>(reader.read(tensor_name(t), row_split(ranks), rank).nbytes());
        r.read[static_cast<size_t>(rank)] = reader.bytes_read();
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  r.seconds = seconds_since(t0);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return r;
}

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / kMiB); }

}  // namespace

int main(int argc, char** argv) {
  std::string run_dir;
  int code = 0;
  try {
    int mb = 256, ranks = 4, load_ranks = 3, repeat = 3, tensors = 16, step_n = 512;
    std::string parent = "/tmp";
    CLI::App app{"Distributed checkpoint save and load against dd's sequential write and read"};
    app.add_option("--mb", mb, "size of the training state in MiB")->check(sf::cli::kPositive);
    app.add_option("--ranks", ranks, "virtual ranks that save")->check(sf::cli::kPositive);
    app.add_option("--load-ranks", load_ranks, "ranks that load (resharded)")->check(sf::cli::kPositive);
    app.add_option("--tensors", tensors, "f32 matrices the state is made of")->check(sf::cli::kPositive);
    app.add_option("--repeat", repeat, "runs of each measurement; the median is printed")->check(sf::cli::kPositive);
    app.add_option("--step-n", step_n, "the stand-in step's sgemm size (n x n x n)")->check(sf::cli::kPositive);
    app.add_option("--dir", parent, "where the run's fresh directory is made (removed at the end)")
        ->check(CLI::ExistingDirectory);
    CLI11_PARSE(app, argc, argv);

    // Rows: as many as --mb allows, a multiple of both rank counts.
    const int64_t unit = std::lcm(int64_t{ranks}, int64_t{load_ranks});
    const State s{tensors, int64_t{mb} * kMiB / tensors / (kCols * 4) / unit * unit};
    if (s.rows == 0)
      throw sf::InvalidArgument(fmt::format("--mb {}: too small for {} tensors of rows of {} KiB in multiples of {}",
                                            mb, tensors, kCols * 4 / 1024, unit));

    std::string pattern = (fs::path(parent) / "sf_checkpoint_bench.XXXXXX").string();
    check_io(::mkdtemp(pattern.data()) != nullptr, "mkdtemp " + pattern);
    run_dir = pattern;
    const std::string ckpt_dir = run_dir + "/ckpt", dd_file = run_dir + "/dd.bin";

    sf::comm::JobSpec spec;
    spec.source = sf::comm::JobSpec::Source::kDevices;
    spec.backend = "inproc";
    spec.size = ranks;
    spec.local_ranks = ranks;
    sf::comm::init(spec);

    fmt::print("checkpoint of {} ({} f32 tensors of {}x{}) in {}, median of {} runs, {} cores\n", mib(s.bytes()),
               s.tensors, s.rows, kCols, run_dir, repeat, std::thread::hardware_concurrency());
    std::vector<double> save_t, write_t, load_t, read_t;
    for (int k = 1; k <= repeat; ++k) {
      fs::remove_all(fmt::format("{}/step_{}", ckpt_dir, k - 1));  // the previous step's files, untimed
      save_t.push_back(time_save(ckpt_dir, s, k));
      write_t.push_back(time_dd_write(dd_file, s.bytes()));
    }
    const Blocking blocking = time_async_blocking(run_dir + "/async", s, 0, repeat);
    sf::comm::release();
    openblas_set_num_threads(1);
    const StepTimes steps = time_steps_during_save(run_dir + "/async1", s, 0, repeat, step_n);
    LoadResult last;
    for (int k = 0; k < repeat; ++k) {
      last = time_load(ckpt_dir, s, load_ranks);
      load_t.push_back(last.seconds);
      read_t.push_back(time_dd_read(dd_file, s.bytes()));
    }

    const double save = median(save_t), write = median(write_t), load = median(load_t), read = median(read_t);
    const auto line = [&](const std::string& what, double seconds, const std::string& extra) {
      fmt::print("{:<44} {:>9.3f} s {:>9.0f} MiB/s  {}\n", what, seconds, mib_per_s(s.bytes(), seconds), extra);
    };
    line(fmt::format("save_checkpoint_dir, {} ranks (fsync)", ranks), save,
         fmt::format("{:.2f}x of dd write (goal >= 0.80x)", write / save));
    line("dd write bs=4M conv=fsync", write, "");
    line(fmt::format("CheckpointReader, {} -> {} ranks (page cache)", ranks, load_ranks), load,
         fmt::format("{:.2f}x of dd read", read / load));
    line("dd read bs=4M (page cache)", read, "");
    const double blocked = median(blocking.save), copied = median(blocking.copy);
    fmt::print("{:<44} {:>9.2f} ms {:>10}  {:.2f}x of memcpy (goal <= 1.20x)\n",
               fmt::format("AsyncCheckpointWriter::save blocks, {} ranks", ranks), blocked * 1e3, "", blocked / copied);
    fmt::print("{:<44} {:>9.2f} ms\n", fmt::format("memcpy of rank 0's blocks ({})", mib(s.bytes() / ranks)),
               copied * 1e3);
    const double during = mean(steps.during), without = mean(steps.without);
    fmt::print("{:<44} {:>9.2f} ms {:>10}  {:.2f}x of a step without (goal <= 1.10x), {} steps\n",
               fmt::format("step (sgemm {}^3) while 1 rank writes {}", step_n, mib(s.bytes())), during * 1e3, "",
               during / without, steps.during.size());
    fmt::print("{:<44} {:>9.2f} ms {:>10}  {} steps\n", "step without a save", without * 1e3, "",
               steps.without.size());
    for (int r = 0; r < load_ranks; ++r) {
      const int64_t got = last.read[static_cast<size_t>(r)], want = last.shard[static_cast<size_t>(r)];
      fmt::print("load rank {:<34} {:>11} read {:>11} shard  {:.3f}x (goal <= 1.10x)\n", r, mib(got), mib(want),
                 static_cast<double>(got) / static_cast<double>(want));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    code = 1;
  }
  if (!run_dir.empty()) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
  }
  return code;
}
