// sfckpt: inspects, converts and exports distributed checkpoints (docs/checkpoint_format.md,
// section "sfckpt").
//
//     sfckpt inspect run/ckpt --verify             # tensors, layouts, blocks; every crc32
//     sfckpt convert run/ckpt one/ --devices 1     # every tensor whole, for 1 device or DP
//     sfckpt convert run/ckpt four/ --devices 4 --strategy-file s.json   # the file's layouts
//     sfckpt export run/ckpt --npz weights.npz     # numpy.load("weights.npz")["fc1.weight"]
//
// Exit status: 0; 1 for a bad checkpoint (or a failed --verify); 2 for bad arguments. Errors
// are one line naming the file and the rule.
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <shardflow/core/error.h>
#include "tools/sfckpt/convert.h"
#include "tools/sfckpt/export_npz.h"
#include "tools/sfckpt/inspect.h"
#include "tools/sfckpt/usage_error.h"

int main(int argc, char** argv) {
  CLI::App app{"sfckpt: inspect, convert and export shardflow checkpoints (format version 2)"};
  app.require_subcommand(1);

  std::string dir;
  bool verify = false;
  auto* inspect = app.add_subcommand("inspect", "print a checkpoint's step, job, tensors, layouts and blocks");
  inspect->add_option("DIR", dir, "DIR (the step DIR/latest names) or DIR/step_<n>")->required();
  inspect->add_flag("--verify", verify, "read every block and check its crc32");

  std::string src, dst, strategy_file;
  int devices = 0;
  auto* convert = app.add_subcommand(
      "convert",
      "write SRC's step to DST for N ranks: every tensor whole (for 1 device or data parallel), or with "
      "--strategy-file each parameter under the layout its op's strategy gives it on N ranks");
  convert->add_option("SRC", src, "DIR or DIR/step_<n>")->required();
  convert->add_option("DST", dst, "checkpoint directory to write DST/step_<n> into")->required();
  convert->add_option("--devices", devices, "ranks of the job that will load DST")->required();
  convert->add_option("--strategy-file", strategy_file,
                      "a strategy file whose \"parameters\" section names the op and input reading each parameter "
                      "(docs/checkpoint_format.md, sfckpt)");

  std::string npz;
  auto* exporter = app.add_subcommand("export", "write every tensor, gathered whole, to a NumPy .npz");
  exporter->add_option("DIR", dir, "DIR or DIR/step_<n>")->required();
  exporter->add_option("--npz", npz, "the .npz file to write")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "sfckpt: error: {} (sfckpt --help)\n", e.what());
    return 2;
  }
  try {
    if (inspect->parsed()) return sf::sfckpt::inspect(dir, verify, std::cout);
    if (convert->parsed()) {
      const sf::sfckpt::ConvertReport r = sf::sfckpt::convert(src, dst, devices, strategy_file);
      if (strategy_file.empty()) {
        std::cout << fmt::format("converted '{}' to '{}' for {} device(s), every tensor whole\n", src, dst, devices);
        return 0;
      }
      std::cout << fmt::format(
          "converted '{}' to '{}' for {} device(s) by strategy file '{}': {} tensor(s) placed, {} whole\n", src, dst,
          devices, strategy_file, r.placed, r.whole.size());
      for (const std::string& w : r.whole) std::cout << "  whole: " << w << "\n";
      return 0;
    }
    const int n = sf::sfckpt::export_npz(dir, npz);
    std::cout << fmt::format("exported {} tensors to '{}'\n", n, npz);
    return 0;
  } catch (const sf::sfckpt::UsageError& e) {
    fmt::print(stderr, "sfckpt: error: {}\n", e.what());
    return 2;
  } catch (const sf::Error& e) {
    fmt::print(stderr, "sfckpt: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sfckpt: error: {}\n", e.what());
    return 1;
  }
}
