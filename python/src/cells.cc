// Cells, primitives, parameters and layouts. A Python subclass of shardflow.nn.Cell is backed by
// a PyCell: its construct() calls the Python construct with Symbols while the graph is built
// (trace.h), so the network is traced once per input shape and then runs in the actor runtime.
#include <fmt/format.h>

#include <shardflow/parallel/layout.h>
#include <shardflow/train/conv_layers.h>
#include <shardflow/train/layers.h>

#include "trace.h"

namespace sf::python {

namespace {

// The C++ side of a Python Cell subclass.
class PyCell : public nn::Cell {
 public:
  explicit PyCell(const py::object& owner) : owner_(hold(py::weakref(owner))) {}

  Value construct(GraphBuilder& b, Value x) override {
    py::gil_scoped_acquire gil;
    py::object self = (*owner_)();
    SF_ENFORCE(!self.is_none(), InvalidArgument, "cell '{}': its Python object is gone", scope_name());
    const std::string what =
        fmt::format("{}.construct", py::str(py::type::of(self).attr("__name__")).cast<std::string>());
    return call_traced(self.attr("construct"), b, {x}, what, this);
  }

  void add_cell(const std::string& name, const nn::CellPtr& cell) { register_cell(name, cell); }
  Parameter add_parameter(const std::string& name, const Parameter& p) { return register_parameter(name, p); }
  Primitive& add_primitive(const std::string& name, const std::string& op, const py::dict& attrs) {
    return register_primitive(name, op, to_attrs(attrs));
  }

 private:
  std::shared_ptr<py::object> owner_;  // a weakref: the Python object owns this cell, not the reverse
};

std::vector<TensorStrategy> to_strategies(const py::handle& obj, const std::string& what) {
  std::vector<TensorStrategy> out;
  if (obj.is_none()) return out;
  SF_ENFORCE(py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj), InvalidArgument,
             "{}: a strategy is a tuple with one entry per input, each a tuple of ints or a Layout of the tensor",
             what);
  for (const py::handle& t : obj) {
    if (py::isinstance<TensorLayout>(t)) {
      out.emplace_back(t.cast<TensorLayout>());
      continue;
    }
    SF_ENFORCE(py::isinstance<py::tuple>(t) || py::isinstance<py::list>(t), InvalidArgument,
               "{}: strategy entry {} is not a tuple of ints or a Layout", what,
               py::repr(t).cast<std::string>().substr(0, 80));
    Strategy s;
    for (const py::handle& d : t) {
      SF_ENFORCE(py::isinstance<py::int_>(d) && !py::isinstance<py::bool_>(d), InvalidArgument,
                 "{}: strategy entry {} holds {}, not an int", what, py::repr(t).cast<std::string>().substr(0, 80),
                 py::repr(d).cast<std::string>().substr(0, 40));
      s.push_back(d.cast<int64_t>());
    }
    out.emplace_back(std::move(s));
  }
  return out;
}

DimAxes to_dim_axes(const py::handle& h) {
  if (py::isinstance<py::str>(h)) return DimAxes(h.cast<std::string>());
  return DimAxes(h.cast<std::vector<std::string>>());
}

}  // namespace

ParameterList to_parameters(const py::handle& params, const std::string& what) {
  ParameterList out;
  for (const py::handle& p : params) {
    SF_ENFORCE(py::isinstance<Parameter>(p), InvalidArgument, "{}: {} is not a Parameter", what,
               py::str(py::type::of(p).attr("__name__")).cast<std::string>());
    out.push_back(p.cast<Parameter>());
  }
  return out;
}

void bind_cells(py::module_& m) {
  py::class_<Parameter>(m, "Parameter", py::dynamic_attr(), "A trainable tensor of a cell (MindSpore's Parameter).")
      .def(py::init([](std::vector<int64_t> shape, const std::string& init, bool requires_grad) {
             return Parameter(Shape(shape.begin(), shape.end()), init, requires_grad);
           }),
           py::arg("shape"), py::arg("init"), py::arg("requires_grad") = true)
      .def_property_readonly("name", [](const Parameter& p) { return p.name(); })
      .def_property_readonly("shape", [](const Parameter& p) { return py::tuple(py::cast(p.shape())); })
      .def_property_readonly("requires_grad", &Parameter::requires_grad)
      .def_property_readonly("initialized", &Parameter::initialized)
      .def_property_readonly("init_name", &Parameter::init)
      .def("_value", [](Parameter& p) { return p.value(); }, "The tensor (shares the parameter's memory).")
      .def("add_pipeline_stage", &Parameter::add_pipeline_stage)
      .def("__eq__", [](const Parameter& a, const Parameter& b) { return a == b; })
      .def("__hash__", [](const Parameter& p) { return std::hash<const void*>()(&p.value()); });

  py::class_<nn::Cell, std::shared_ptr<nn::Cell>>(m, "CellBase", "The C++ side of a cell.")
      .def("get_parameters", &nn::Cell::get_parameters)
      .def("trainable_params", &nn::Cell::trainable_params)
      .def("untrainable_params", &nn::Cell::untrainable_params)
      .def("set_train", &nn::Cell::set_train, py::arg("mode") = true)
      .def_property_readonly("training", &nn::Cell::training)
      .def_property("pipeline_stage", &nn::Cell::pipeline_stage, &nn::Cell::set_pipeline_stage)
      .def("infer_param_pipeline_stage", &nn::Cell::infer_param_pipeline_stage)
      .def_property_readonly("scope_name", &nn::Cell::scope_name)
      .def("strategies", [](const nn::Cell& c) {
        std::map<std::string, std::string> out;
        for (const auto& [node, s] : c.strategies()) out[node] = s.str();
        return out;
      });

  py::class_<PyCell, nn::Cell, std::shared_ptr<PyCell>>(m, "PyCell")
      .def(py::init<const py::object&>())
      .def("add_cell", &PyCell::add_cell)
      .def("add_parameter", &PyCell::add_parameter)
      .def("add_primitive", &PyCell::add_primitive, py::return_value_policy::reference_internal);

  py::class_<nn::Dense, nn::Cell, std::shared_ptr<nn::Dense>>(m, "Dense")
      .def(py::init<int64_t, int64_t, const std::string&, const std::string&, bool>(), py::arg("in_channels"),
           py::arg("out_channels"), py::arg("weight_init") = "dense_weight", py::arg("bias_init") = "dense_bias",
           py::arg("has_bias") = true)
      .def_property_readonly("weight", [](nn::Dense& d) { return d.weight(); })
      .def_property_readonly("bias", [](nn::Dense& d) { return d.bias(); });
  py::class_<nn::ReLU, nn::Cell, std::shared_ptr<nn::ReLU>>(m, "ReLU").def(py::init<>());
  py::class_<nn::Flatten, nn::Cell, std::shared_ptr<nn::Flatten>>(m, "Flatten").def(py::init<>());
  py::class_<nn::SequentialCell, nn::Cell, std::shared_ptr<nn::SequentialCell>>(m, "SequentialCell")
      .def(py::init<const std::vector<nn::CellPtr>&>());
  py::class_<nn::Conv2d, nn::Cell, std::shared_ptr<nn::Conv2d>>(m, "Conv2d")
      .def(py::init<int64_t, int64_t, int64_t, int64_t, int64_t, bool, const std::string&, const std::string&>(),
           py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
           py::arg("pad") = 0, py::arg("has_bias") = false, py::arg("weight_init") = "he_normal",
           py::arg("bias_init") = "zeros")
      .def("shard", [](nn::Conv2d& c, const py::object& in, const py::object& out) {
        c.shard(to_strategies(in, "Conv2d.shard in_strategy"), to_strategies(out, "Conv2d.shard out_strategy"));
      });
  py::class_<nn::BatchNorm2d, nn::Cell, std::shared_ptr<nn::BatchNorm2d>>(m, "BatchNorm2d")
      .def(py::init<int64_t, float, float>(), py::arg("num_features"), py::arg("eps") = 1e-5f,
           py::arg("momentum") = 0.9f);
  py::class_<nn::MaxPool2d, nn::Cell, std::shared_ptr<nn::MaxPool2d>>(m, "MaxPool2d")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("kernel_size"), py::arg("stride") = 1, py::arg("pad") = 0);
  py::class_<nn::AvgPool2d, nn::Cell, std::shared_ptr<nn::AvgPool2d>>(m, "AvgPool2d")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("kernel_size"), py::arg("stride") = 1, py::arg("pad") = 0);

  py::class_<Primitive>(m, "Primitive", "An op of a cell that shard() can split (MindSpore's Primitive).")
      .def("shard",
           [](Primitive& p, const py::object& in, const py::object& out) {
             const std::string what = fmt::format("{}.shard", p.instance_name());
             p.shard(to_strategies(in, what + " in_strategy"), to_strategies(out, what + " out_strategy"));
           })
      .def(
          "__call__",
          [](Primitive& p, const py::args& inputs, const py::kwargs& attrs) {
            GraphBuilder& b = current_builder(p.instance_name());
            std::vector<Value> in;
            for (const py::handle& x : inputs) in.push_back(to_value(x, p.instance_name()));
            const Attrs a = to_attrs(attrs);
            return make_symbol(p(b, std::move(in), a));
          })
      .def_property_readonly("instance_name", &Primitive::instance_name);

  py::class_<TensorLayout>(m, "TensorLayout", "One tensor's layout over a device matrix (what Layout(...) returns).")
      .def("__repr__", [](const TensorLayout& l) { return l.spec(); });
  py::class_<Layout>(m, "Layout", "A device matrix with a name per axis (MindSpore's Layout).")
      .def(py::init([](std::vector<int64_t> device_matrix, std::vector<std::string> alias_name) {
             return Layout(std::move(device_matrix), std::move(alias_name));
           }),
           py::arg("device_matrix"), py::arg("alias_name"))
      .def("__call__",
           [](const Layout& l, const py::args& dims) {
             std::vector<DimAxes> axes;
             for (const py::handle& d : dims) axes.push_back(to_dim_axes(d));
             return l.apply(axes);
           })
      .def("__repr__", &Layout::str);
  m.def("to_strategies", [](const py::object& s) {
    std::vector<std::string> out;
    for (const TensorStrategy& t : to_strategies(s, "strategy")) out.push_back(t.str());
    return out;
  });
}

}  // namespace sf::python
