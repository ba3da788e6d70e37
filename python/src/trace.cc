#include "trace.h"

#include <fmt/format.h>

#include <atomic>

#include <shardflow/core/brief.h>

namespace sf::python {

namespace {

struct Frame {
  GraphBuilder* builder;
  uint64_t id;
  nn::Cell* cell;
};

// Per thread: C++ may build a graph on the thread that called it or on a rank's own thread.
thread_local std::vector<Frame> t_frames;
std::atomic<uint64_t> g_next_trace{1};

Frame& top(const std::string& what) {
  SF_ENFORCE(!t_frames.empty(), InvalidArgument,
             "{}: called outside a traced construct (ops on tensors of a network run inside a Cell's construct "
             "or a function given to value_and_grad)",
             what);
  return t_frames.back();
}

AttrValue to_attr(const std::string& key, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return int64_t{v.cast<bool>()};
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) return v.cast<std::vector<int64_t>>();
  throw InvalidArgument(fmt::format("attribute '{}': {} is not an int, float, str or tuple of ints", key,
                                    py::str(py::type::of(v)).cast<std::string>()));
}

}  // namespace

TraceScope::TraceScope(GraphBuilder& b, nn::Cell* cell) {
  const uint64_t id = !t_frames.empty() && t_frames.back().builder == &b ? t_frames.back().id : g_next_trace++;
  nn::Cell* inner = cell ? cell : (t_frames.empty() ? nullptr : t_frames.back().cell);
  t_frames.push_back({&b, id, inner});
}

TraceScope::~TraceScope() { t_frames.pop_back(); }

GraphBuilder& current_builder(const std::string& what) { return *top(what).builder; }

uint64_t current_trace() { return t_frames.empty() ? 0 : t_frames.back().id; }

py::object make_symbol(Value v) { return py::cast(Symbol{current_trace(), v}); }

Value to_value(const py::handle& obj, const std::string& what) {
  Frame& f = top(what);
  if (py::isinstance<Symbol>(obj)) {
    const Symbol& s = obj.cast<const Symbol&>();
    SF_ENFORCE(s.trace == f.id, InvalidArgument,
               "{}: a traced tensor of an earlier trace was kept and used again (a construct must not keep its "
               "tensors between calls)",
               what);
    return s.value;
  }
  if (py::isinstance<Parameter>(obj)) {
    Parameter& p = obj.cast<Parameter&>();
    SF_ENFORCE(f.cell != nullptr, InvalidArgument, "{}: parameter '{}' read outside a Cell's construct", what,
               p.name());
    return f.cell->param(*f.builder, p);
  }
  if (py::isinstance<py::bool_>(obj) || py::isinstance<py::int_>(obj) || py::isinstance<py::float_>(obj))
    return f.builder->fill({}, obj.cast<float>());
  throw InvalidArgument(fmt::format("{}: a {} cannot be an input of a traced op (tensors of the construct, "
                                    "Parameters and numbers can)",
                                    what, py::str(py::type::of(obj).attr("__name__")).cast<std::string>()));
}

Value call_traced(const py::object& fn, GraphBuilder& b, const std::vector<Value>& inputs, const std::string& what,
                  nn::Cell* cell) {
  py::gil_scoped_acquire gil;
  TraceScope scope(b, cell);
  py::tuple args(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) args[i] = make_symbol(inputs[i]);
  return result_value(fn(*args), what);
}

Attrs to_attrs(const py::dict& attrs) {
  Attrs a;
  for (const auto& [k, v] : attrs) a.set(k.cast<std::string>(), to_attr(k.cast<std::string>(), v));
  return a;
}

Value result_value(const py::object& out, const std::string& what) {
  if (py::isinstance<py::tuple>(out) && py::len(out) > 0) return to_value(out[py::int_(0)], what);
  SF_ENFORCE(py::isinstance<Symbol>(out), InvalidArgument, "{} returned {}, not a tensor of the construct", what,
             py::str(py::type::of(out).attr("__name__")).cast<std::string>());
  return to_value(out, what);
}

void bind_trace(py::module_& m) {
  py::class_<Symbol>(m, "Symbol", "A traced tensor: a node of the graph a construct is building.")
      .def_property_readonly("shape",
                             [](const Symbol& s) {
                               return py::tuple(py::cast(current_builder("Symbol.shape").shape(s.value)));
                             })
      .def_property_readonly("dtype", [](const Symbol& s) { return current_builder("Symbol.dtype").dtype(s.value); })
      .def_property_readonly("ndim",
                             [](const Symbol& s) { return current_builder("Symbol.ndim").shape(s.value).size(); })
      .def_property_readonly("_node", [](const Symbol& s) { return s.value.id; });

  m.def(
      "op",
      [](const std::string& op, const py::sequence& inputs, const py::dict& attrs, const std::string& scope) {
        std::vector<Value> in;
        for (const py::handle& x : inputs) in.push_back(to_value(x, op));
        Attrs a = to_attrs(attrs);
        GraphBuilder& b = current_builder(op);
        if (!scope.empty()) b.push_scope(scope);
        const Value y = b.op(op, std::move(in), std::move(a));
        if (!scope.empty()) b.pop_scope();
        return make_symbol(y);
      },
      py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("scope") = "",
      "Adds op `op` on `inputs` (Symbols, Parameters, numbers) to the graph being traced.");
  m.def("in_trace", [] { return !t_frames.empty(); }, "Whether the calling thread is tracing a construct.");
  m.def(
      "call_cell",
      [](nn::Cell& cell, const py::object& x) {
        GraphBuilder& b = current_builder("Cell call");
        const Value in = to_value(x, "Cell call");
        TraceScope scope(b, nullptr);
        return make_symbol(cell(b, in));
      },
      "Calls a cell of one input on a traced tensor.");
  m.def(
      "call_scoped",
      [](nn::Cell& cell, const py::function& body) {
        GraphBuilder& b = current_builder("Cell call");
        TraceScope scope(b, &cell);
        py::object out;
        cell.call_scoped(b, [&] { out = body(); });
        return out;
      },
      "Runs body() as the construct of `cell`: in its scope and pipeline stage.");
}

}  // namespace sf::python
