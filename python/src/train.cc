// Losses, optimizers, the gradient reducer, value_and_grad, Model, callbacks and checkpoints.
// Every call that trains or communicates releases the GIL; whatever calls back into Python
// (a construct being traced, a loss cell, a callback) takes it again on its own thread, so a
// training run started from any Python thread cannot deadlock against the caller.
#include <fmt/format.h>

#include <shardflow/train/checkpoint.h>
#include <shardflow/train/elastic_train.h>
#include <shardflow/train/load_param_into_net.h>
#include <shardflow/train/model.h>

#include "trace.h"

namespace sf::python {

namespace {

// A loss as a cell: registered under its attribute name, called with (logits, labels).
class LossCell : public nn::Cell {
 public:
  explicit LossCell(std::shared_ptr<nn::LossFn> fn) : fn_(std::move(fn)) {}
  Value construct(GraphBuilder&, Value) override {
    throw InvalidArgument("a loss cell takes two inputs, (logits, labels)");
  }
  const std::shared_ptr<nn::LossFn>& fn() const { return fn_; }

 private:
  std::shared_ptr<nn::LossFn> fn_;
};

// A Python loss cell (a Cell subclass whose construct takes the logits and the labels) as the
// LossFn a Model trains with.
class PyLossFn : public nn::LossFn {
 public:
  explicit PyLossFn(py::object cell) : cell_(hold(std::move(cell))) {}
  Value operator()(GraphBuilder& b, Value logits, Value labels) const override {
    return call_traced(*cell_, b, {logits, labels}, "the loss cell");
  }

 private:
  std::shared_ptr<py::object> cell_;
};

std::vector<Tensor> to_tensors(const py::handle& seq, const std::string& what) {
  std::vector<Tensor> out;
  size_t i = 0;
  for (const py::handle& t : seq) out.push_back(to_tensor(t, fmt::format("{} {}", what, i++)));
  return out;
}

// A LossBuilder that traces the Python function `fn` (value_and_grad's function, a network run
// forward).
LossBuilder traced(std::shared_ptr<py::object> fn, std::string what) {
  return [fn, what](GraphBuilder& b, const std::vector<Value>& in) { return call_traced(*fn, b, in, what); };
}

// A Python Callback: each event calls its _sf_event(name, fields) with the GIL held.
class PyCallback : public Callback {
 public:
  explicit PyCallback(py::object cb) : cb_(hold(std::move(cb))) {}
  void on_train_begin(const RunContext& c) override { call("on_train_begin", c); }
  void on_epoch_begin(const RunContext& c) override { call("on_train_epoch_begin", c); }
  void on_step_end(const RunContext& c) override { call("on_train_step_end", c); }
  void on_epoch_end(const RunContext& c) override { call("on_train_epoch_end", c); }
  void on_train_end(const RunContext& c) override { call("on_train_end", c); }

 private:
  void call(const char* event, const RunContext& c) const {
    py::gil_scoped_acquire gil;
    py::dict f;
    f["cur_epoch_num"] = c.epoch;
    f["cur_step_num"] = c.global_step;
    f["step_in_epoch"] = c.step_in_epoch;
    f["batch_num"] = c.steps_per_epoch;
    f["epoch_num"] = c.epochs;
    f["net_outputs"] = Tensor::scalar(c.loss);
    cb_->attr("_sf_event")(event, f);
  }
  std::shared_ptr<py::object> cb_;
};

// value_and_grad's result: a function of the inputs returning the loss and the gradients.
class PyGradFunction {
 public:
  // With the network the parameters came from (semi-auto parallel needs its strategies), or
  // without (refused in semi-auto parallel).
  PyGradFunction(const py::function& fn, ParameterList params, bool has_aux, const std::shared_ptr<nn::Cell>& net)
      : has_aux_(has_aux),
        net_(net),
        fn_(net ? value_and_grad(traced(hold(fn), kWhat), *net, std::move(params))
                : value_and_grad(traced(hold(fn), kWhat), std::move(params))) {}

  py::object call(const py::args& args) {
    const std::vector<Tensor> inputs = to_tensors(args, "input");
    float loss = 0;
    py::tuple grads;
    {
      const std::vector<Tensor>* g = nullptr;
      {
        py::gil_scoped_release release;
        auto r = fn_(inputs);
        loss = r.loss;
        g = &r.grads;
      }
      grads = py::tuple(py::cast(*g));
    }
    py::object value = py::cast(Tensor::scalar(loss));
    if (has_aux_) value = py::make_tuple(value, py::none());
    return py::make_tuple(value, grads);
  }

 private:
  static constexpr const char* kWhat = "the function given to value_and_grad";
  bool has_aux_;
  std::shared_ptr<nn::Cell> net_;  // kept alive while the function may trace it
  GradFunction fn_;
};

// A network run forward on concrete tensors (a Cell called outside a trace): `fn` is traced once
// per input shape and the graph's output fetched.
class PyForward {
 public:
  PyForward(const py::function& fn, ParameterList params) : fn_(traced(hold(fn), "the network"), std::move(params)) {}

  Tensor call(const py::args& args) {
    const std::vector<Tensor> inputs = to_tensors(args, "input");
    py::gil_scoped_release release;
    return fn_(inputs).clone();  // the fetched buffer is the runtime's, reused by the next call
  }

 private:
  ForwardFunction fn_;
};

std::vector<CallbackPtr> to_callbacks(const py::handle& cbs) {
  std::vector<CallbackPtr> out;
  if (cbs.is_none()) return out;
  for (const py::handle& c : cbs) {
    if (py::isinstance<Callback>(c)) out.push_back(c.cast<CallbackPtr>());
    else out.push_back(std::make_shared<PyCallback>(py::reinterpret_borrow<py::object>(c)));
  }
  return out;
}

}  // namespace

void bind_train(py::module_& m) {
  py::class_<nn::LossFn, std::shared_ptr<nn::LossFn>>(m, "LossFn");
  py::class_<nn::CrossEntropyLoss, nn::LossFn, std::shared_ptr<nn::CrossEntropyLoss>>(m, "CrossEntropyLoss")
      .def(py::init<>());
  py::class_<nn::MSELoss, nn::LossFn, std::shared_ptr<nn::MSELoss>>(m, "MSELoss").def(py::init<>());
  py::class_<PyLossFn, nn::LossFn, std::shared_ptr<PyLossFn>>(m, "PyLossFn").def(py::init<py::object>());
  py::class_<LossCell, nn::Cell, std::shared_ptr<LossCell>>(m, "LossCell")
      .def(py::init<std::shared_ptr<nn::LossFn>>())
      .def_property_readonly("fn", &LossCell::fn);
  m.def(
      "call_loss",
      [](LossCell& cell, const py::object& logits, const py::object& labels) {
        GraphBuilder& b = current_builder("loss");
        const Value l = to_value(logits, "loss logits"), y = to_value(labels, "loss labels");
        Value out;
        cell.call_scoped(b, [&] { out = (*cell.fn())(b, l, y); });
        return make_symbol(out);
      },
      "Calls a loss cell on traced logits and labels.");

  py::class_<nn::Optimizer, std::shared_ptr<nn::Optimizer>>(m, "Optimizer")
      .def_property_readonly("parameters", &nn::Optimizer::parameters)
      .def_property_readonly("learning_rate", &nn::Optimizer::learning_rate)
      .def_property_readonly("global_step", &nn::Optimizer::global_step)
      .def(
          "step",
          [](nn::Optimizer& o, const py::object& grads) {
            const std::vector<Tensor> g = to_tensors(grads, "gradient");
            py::gil_scoped_release release;
            o.step(g);
          },
          "Updates the parameters with `grads` (one per parameter, in order).");
  py::class_<nn::SGD, nn::Optimizer, std::shared_ptr<nn::SGD>>(m, "SGD")
      .def(py::init([](const py::object& params, float lr, float momentum, float weight_decay) {
             return std::make_shared<nn::SGD>(to_parameters(params, "SGD"), lr, momentum, weight_decay);
           }),
           py::arg("params"), py::arg("learning_rate"), py::arg("momentum") = 0.0f, py::arg("weight_decay") = 0.0f);
  py::class_<nn::Momentum, nn::SGD, std::shared_ptr<nn::Momentum>>(m, "Momentum")
      .def(py::init([](const py::object& params, float lr, float momentum) {
             return std::make_shared<nn::Momentum>(to_parameters(params, "Momentum"), lr, momentum);
           }),
           py::arg("params"), py::arg("learning_rate"), py::arg("momentum"));
  py::class_<nn::Adam, nn::Optimizer, std::shared_ptr<nn::Adam>>(m, "Adam")
      .def(py::init([](const py::object& params, float lr, float beta1, float beta2, float eps) {
             return std::make_shared<nn::Adam>(to_parameters(params, "Adam"), lr, beta1, beta2, eps);
           }),
           py::arg("params"), py::arg("learning_rate") = 1e-3f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
           py::arg("eps") = 1e-8f);
  py::class_<nn::AdamW, nn::Adam, std::shared_ptr<nn::AdamW>>(m, "AdamW")
      .def(py::init([](const py::object& params, float lr, float beta1, float beta2, float eps, float wd) {
             return std::make_shared<nn::AdamW>(to_parameters(params, "AdamWeightDecay"), lr, beta1, beta2, eps, wd);
           }),
           py::arg("params"), py::arg("learning_rate") = 1e-3f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
           py::arg("eps") = 1e-6f, py::arg("weight_decay") = 0.0f);

  py::class_<nn::DistributedGradReducer, std::shared_ptr<nn::DistributedGradReducer>>(m, "DistributedGradReducer")
      .def(py::init([](const py::object& params, std::optional<bool> mean, std::optional<int> degree) {
             return std::make_shared<nn::DistributedGradReducer>(to_parameters(params, "DistributedGradReducer"),
                                                                 mean, degree);
           }),
           py::arg("parameters"), py::arg("mean") = py::none(), py::arg("degree") = py::none())
      .def("__call__", [](nn::DistributedGradReducer& r, const py::object& grads) {
        const std::vector<Tensor> g = to_tensors(grads, "gradient");
        const std::vector<Tensor>* out = nullptr;
        {
          py::gil_scoped_release release;
          out = &r(g);
        }
        return py::tuple(py::cast(*out));
      });

  py::class_<PyGradFunction>(m, "GradFunction")
      .def(py::init([](const py::function& fn, const py::object& weights, bool has_aux,
                       const std::shared_ptr<nn::Cell>& net) {
             return std::make_unique<PyGradFunction>(fn, to_parameters(weights, "value_and_grad weights"), has_aux,
                                                     net);
           }),
           py::arg("fn"), py::arg("weights"), py::arg("has_aux") = false, py::arg("network") = nullptr)
      .def("__call__", &PyGradFunction::call);

  py::class_<PyForward>(m, "Forward")
      .def(py::init([](const py::function& fn, const py::object& params) {
             return std::make_unique<PyForward>(fn, to_parameters(params, "forward"));
           }),
           py::arg("fn"), py::arg("parameters"))
      .def("__call__", &PyForward::call);

  py::class_<Callback, std::shared_ptr<Callback>>(m, "CallbackBase");
  py::class_<LossMonitor, Callback, std::shared_ptr<LossMonitor>>(m, "LossMonitor")
      .def(py::init<int64_t>(), py::arg("per_print_times") = 1);
  py::class_<TimeMonitor, Callback, std::shared_ptr<TimeMonitor>>(m, "TimeMonitor").def(py::init<>());
  py::class_<ModelCheckpoint, Callback, std::shared_ptr<ModelCheckpoint>>(m, "ModelCheckpoint")
      .def(py::init<std::string, std::string, int64_t>(), py::arg("prefix") = "checkpoint",
           py::arg("directory") = ".", py::arg("save_steps") = 0)
      .def_property_readonly("saved", &ModelCheckpoint::saved);

  py::class_<nn::PipelineCell, std::shared_ptr<nn::PipelineCell>>(m, "PipelineCell")
      .def(py::init([](nn::Cell& net, const std::shared_ptr<nn::LossFn>& loss, int micro_size) {
             SF_ENFORCE(loss != nullptr, InvalidArgument, "PipelineCell: the WithLossCell has no loss");
             return std::make_shared<nn::PipelineCell>(nn::WithLossCell(net, loss), micro_size);
           }),
           py::arg("network"), py::arg("loss_fn"), py::arg("micro_size"), py::keep_alive<1, 2>())
      .def_property_readonly("micro_size", &nn::PipelineCell::micro_size);

  py::class_<Model>(m, "Model")
      .def(py::init([](nn::Cell& net, const std::shared_ptr<nn::LossFn>& loss,
                       const std::shared_ptr<nn::Optimizer>& opt) {
             if (!loss && !opt) return std::make_unique<Model>(net);
             SF_ENFORCE(loss && opt, InvalidArgument,
                        "Model: give both loss_fn and optimizer, or neither (evaluation)");
             return std::make_unique<Model>(net, loss, opt);
           }),
           py::arg("network"), py::arg("loss_fn"), py::arg("optimizer"), py::keep_alive<1, 2>())
      .def_static(
          "pipeline",
          [](nn::PipelineCell& net, const std::shared_ptr<nn::Optimizer>& opt) {
            SF_ENFORCE(opt != nullptr, InvalidArgument, "Model: a PipelineCell trains with an optimizer");
            return std::make_unique<Model>(net, opt);
          },
          py::arg("network"), py::arg("optimizer"), py::keep_alive<0, 1>())
      .def(
          "train",
          [](Model& model, int64_t epochs, const dataset::Dataset& data, const py::object& callbacks,
             int64_t initial_epoch) {
            const std::vector<CallbackPtr> cbs = to_callbacks(callbacks);
            py::gil_scoped_release release;
            model.train(epochs, data, cbs, initial_epoch);
          },
          py::arg("epoch"), py::arg("train_dataset"), py::arg("callbacks") = py::none(), py::arg("initial_epoch") = 0)
      .def(
          "eval_accuracy",
          [](Model& model, const dataset::Dataset& data) {
            py::gil_scoped_release release;
            return model.eval_accuracy(data);
          },
          py::arg("valid_dataset"));

  // train_elastic with a Python build function, which returns (the C++ Model, its batched
  // dataset, its callbacks, the Python object that owns them) for the world it is called in
  // (shardflow.train.train_elastic makes that tuple). Returns the last world's owner.
  m.def(
      "train_elastic",
      [](int64_t epochs, const py::function& build, const std::string& timeline_dir,
         const std::string& stop_checkpoint_dir) {
        ElasticOptions options;
        options.timeline_dir = timeline_dir;
        options.stop_checkpoint_dir = stop_checkpoint_dir;
        TrainingSetup done;
        {
          py::gil_scoped_release release;
          done = train_elastic(
              epochs,
              [&](uint32_t generation) {
                py::gil_scoped_acquire acquire;
                const py::tuple r = build(generation);
                SF_ENFORCE(r.size() == 4, InvalidArgument, "train_elastic: the build function's tuple is malformed");
                TrainingSetup s;
                std::shared_ptr<py::object> owner = hold(py::reinterpret_borrow<py::object>(r[3]));
                s.model = std::shared_ptr<Model>(owner, &r[0].cast<Model&>());  // lives as long as its owner
                s.train_set = r[1].cast<dataset::Dataset>();
                s.callbacks = to_callbacks(r[2]);
                s.keep = owner;
                return s;
              },
              options);
        }
        return *static_cast<py::object*>(done.keep.get());
      },
      py::arg("epochs"), py::arg("build"), py::arg("timeline_dir") = "",
      py::arg("stop_checkpoint_dir") = ElasticOptions{}.stop_checkpoint_dir);

  m.def(
      "save_checkpoint",
      [](nn::Cell& net, const std::string& path) {
        NamedTensors entries;
        for (Parameter& p : net.get_parameters()) entries.emplace_back(p.name(), p.value());
        py::gil_scoped_release release;
        save_checkpoint(entries, path);
      },
      py::arg("save_obj"), py::arg("ckpt_file_name"));
  m.def(
      "load_checkpoint",
      [](const std::string& path) {
        NamedTensors t;
        {
          py::gil_scoped_release release;
          t = load_checkpoint(path);
        }
        py::dict out;
        for (auto& [name, tensor] : t) out[py::str(name)] = tensor;
        return out;
      },
      py::arg("ckpt_file_name"));
  m.def(
      "load_param_into_net",
      [](nn::Cell& net, const py::dict& params, bool strict) {
        NamedTensors t;
        for (const auto& [k, v] : params) t.emplace_back(k.cast<std::string>(), to_tensor(v, k.cast<std::string>()));
        LoadReport r = load_param_into_net(net, t, strict);
        return py::make_tuple(r.param_not_load, r.ckpt_not_load);
      },
      py::arg("net"), py::arg("parameter_dict"), py::arg("strict_load") = false);
}

}  // namespace sf::python
