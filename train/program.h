// Program: a graph built for one input signature (shapes and dtypes), with its actor
// runtime, cached so that every step with the same batch shape reuses the same actors and
// buffers. A final short batch or an eval batch of another size gets its own program.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "ops/builder.h"
#include "train/parameter.h"

namespace sf {

struct ExecOptions {
  int threads = 1;    // actor worker threads
  bool trace = false; // record actor events (Program::runtime().write_trace)
};

struct Program {
  Graph graph;
  std::vector<int> inputs;   // Input node ids, in call order
  std::vector<int> fetches;  // filled by the builder
  std::unique_ptr<Runtime> runtime;

  // True if the inputs have the shapes and dtypes this program was built for.
  bool accepts(const std::vector<Tensor>& inputs) const;
  // (input node, tensor) pairs for the runtime.
  void feeds(const std::vector<Tensor>& inputs, Runtime::Feeds& out) const;
};

// Adds the program's ops for the given inputs and sets program.fetches.
using ProgramBuilder = std::function<void(GraphBuilder& b, const std::vector<Value>& inputs, Program& program)>;

class ProgramCache {
 public:
  ProgramCache(ProgramBuilder build, ParameterList params, ExecOptions opts)
      : build_(std::move(build)), params_(std::move(params)), opts_(opts) {}
  // The program for these inputs' signature, built and bound on first use.
  Program& get(const std::vector<Tensor>& inputs);
  // Runs the program for these inputs; returns its fetches (valid until the next run).
  const std::vector<Tensor>& run(const std::vector<Tensor>& inputs);
  // The most recently used program, or nullptr.
  Program* last() { return last_; }

 private:
  ProgramBuilder build_;
  ParameterList params_;
  ExecOptions opts_;
  std::map<std::string, std::unique_ptr<Program>> programs_;
  Program* last_ = nullptr;
  std::vector<std::pair<int, Tensor>> feeds_;
};

}  // namespace sf
