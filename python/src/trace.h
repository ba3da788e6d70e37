/// @file
/// Tracing a Python construct into shardflow's graph. While C++ builds a graph it calls back
/// into Python (a Cell's construct, a function given to value_and_grad, a loss cell); the
/// TraceScope around that call makes the builder the calling thread's current one, and the
/// Python code sees Symbols: traced tensors whose ops add nodes to that graph. A Symbol kept
/// past its trace, or an op called with no trace, is refused with InvalidArgument.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/train/cell.h>

#include "bindings.h"

namespace sf::python {

/// A traced tensor: a node of the graph of trace `trace`.
struct Symbol {
  uint64_t trace = 0;  ///< the trace that made it
  Value value;         ///< its node
};

/// Makes `b` the calling thread's current builder for its lifetime; nested scopes over the same
/// builder share one trace. `cell` (may be null) is the cell whose construct runs inside.
class TraceScope {
 public:
  TraceScope(GraphBuilder& b, nn::Cell* cell);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};

/// The calling thread's current builder; InvalidArgument naming `what` when nothing is traced.
GraphBuilder& current_builder(const std::string& what);
/// The id of the calling thread's current trace (0 when none).
uint64_t current_trace();
/// A Symbol of the current trace.
py::object make_symbol(Value v);
/// The node of a traced value: a Symbol of the current trace, a Parameter (read through the
/// innermost cell being traced), or a Python number (a scalar constant).
Value to_value(const py::handle& obj, const std::string& what);
/// Calls `fn` with Symbols of `inputs` while `b` builds a graph (the GIL taken, a TraceScope
/// around the call, `cell` the one whose construct runs, may be null) and returns the node it
/// returned: how C++ code that builds a graph runs a Python construct, loss or function.
Value call_traced(const py::object& fn, GraphBuilder& b, const std::vector<Value>& inputs, const std::string& what,
                  nn::Cell* cell = nullptr);
/// Op attributes from a dict of ints, floats, bools, strings and tuples of ints.
Attrs to_attrs(const py::dict& attrs);
/// The node a construct returned: a Symbol, or the first Symbol of a tuple.
Value result_value(const py::object& out, const std::string& what);

}  // namespace sf::python
