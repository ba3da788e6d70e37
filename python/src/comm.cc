// mindspore.communication: init, ranks and groups, and the collectives as ops. A collective
// called inside a construct adds its op to the graph (it runs in the actor runtime with the
// step); called on concrete tensors it runs at once, with the GIL released.
#include <fmt/format.h>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/comm.h>
#include <shardflow/ops/collective_builder.h>

#include "trace.h"

namespace sf::python {

namespace {

comm::ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return comm::ReduceOp::kSum;
  if (name == "prod") return comm::ReduceOp::kProd;
  if (name == "max") return comm::ReduceOp::kMax;
  if (name == "min") return comm::ReduceOp::kMin;
  throw InvalidArgument(fmt::format("reduce op '{}': sum, prod, max or min", name));
}

comm::Group group_of(const std::string& name) { return comm::current_rank().group(name); }

}  // namespace

void bind_comm(py::module_& m) {
  m.def(
      "init",
      [](std::vector<std::string> argv) {
        std::vector<char*> ptrs;
        for (std::string& a : argv) ptrs.push_back(a.data());
        ptrs.push_back(nullptr);
        int argc = static_cast<int>(argv.size());
        {
          py::gil_scoped_release release;
          comm::init(argc, ptrs.data());
        }
        std::vector<std::string> rest;
        for (int i = 0; i < argc; ++i) rest.emplace_back(ptrs[i]);
        return rest;
      },
      py::arg("argv"), "Starts the job (comm/bootstrap/init.h) and returns argv without the comm layer's arguments.");
  m.def("initialized", &comm::initialized);
  m.def(
      "run_ranks",
      [](const py::function& fn) {
        std::shared_ptr<py::object> f = hold(fn);
        py::gil_scoped_release release;
        comm::run_ranks([&] {
          py::gil_scoped_acquire gil;
          (*f)();
        });
      },
      "Runs fn once per rank of this process, each on a thread bound to its rank (--devices N).");
  m.def("release", [] {
    py::gil_scoped_release release;
    comm::release();
  });
  m.def("process_ranks", [] { return comm::initialized() ? comm::job().local_ranks : 0; },
        "How many ranks this process holds (--devices N gives N).");
  m.def("get_rank", [](const std::string& g) { return comm::get_rank(g); }, py::arg("group") = "world");
  m.def("get_group_size", [](const std::string& g) { return comm::get_group_size(g); }, py::arg("group") = "world");
  m.def("get_local_rank", &comm::get_local_rank);
  m.def("has_rank", [] { return comm::current_rank_or_null() != nullptr; });
  m.def("create_group", [](const std::string& name, std::vector<int> ranks) { comm::create_group(name, ranks); });
  m.def("destroy_group", &comm::destroy_group);
  m.def("get_world_rank_from_group_rank", &comm::get_world_rank_from_group_rank);
  m.def("get_group_rank_from_world_rank", &comm::get_group_rank_from_world_rank);

  // Traced collectives: a node of the graph being built.
  m.def(
      "traced_collective",
      [](const std::string& kind, const py::object& x, const std::string& group, const std::string& op,
         int64_t root, std::vector<int64_t> split) {
        GraphBuilder& b = current_builder(kind);
        const Value v = to_value(x, kind);
        CollectiveBuilder c(b, {group, comm::get_group_size(group)});
        if (kind == "AllReduce") return make_symbol(c.all_reduce(v, op));
        if (kind == "AllGather") return make_symbol(c.all_gather(v));
        if (kind == "ReduceScatter") return make_symbol(c.reduce_scatter(v, op));
        if (kind == "Broadcast") return make_symbol(c.broadcast(v, root));
        if (kind == "AlltoAll") {
          SF_ENFORCE(split.size() == 3, InvalidArgument, "AlltoAll: split_count, split_dim, concat_dim");
          return make_symbol(c.all_to_all(v, split[0], split[1], split[2]));
        }
        throw InvalidArgument(fmt::format("collective '{}' is not traced", kind));
      },
      py::arg("kind"), py::arg("x"), py::arg("group") = "world", py::arg("op") = "sum", py::arg("root") = 0,
      py::arg("split") = std::vector<int64_t>{});

  // Eager collectives on concrete tensors.
  m.def(
      "all_reduce",
      [](const py::object& x, const std::string& op, const std::string& group) {
        const Tensor t = to_tensor(x, "AllReduce input");
        comm::AllReduceOptions o;
        o.group = group_of(group);
        o.op = reduce_op(op);
        py::gil_scoped_release release;
        return comm::all_reduce(t, o);
      },
      py::arg("x"), py::arg("op") = "sum", py::arg("group") = "world");
  m.def(
      "all_gather",
      [](const py::object& x, const std::string& group) {
        const Tensor t = to_tensor(x, "AllGather input");
        comm::AllGatherOptions o;
        o.group = group_of(group);
        py::gil_scoped_release release;
        return comm::all_gather(t, o);
      },
      py::arg("x"), py::arg("group") = "world");
  m.def(
      "broadcast",
      [](const py::object& x, int root, const std::string& group) {
        const Tensor t = to_tensor(x, "Broadcast input");
        comm::BroadcastOptions o;
        o.group = group_of(group);
        o.root = root;
        py::gil_scoped_release release;
        return comm::broadcast(t, o);
      },
      py::arg("x"), py::arg("root") = 0, py::arg("group") = "world");
  m.def(
      "barrier",
      [](const std::string& group) {
        comm::BarrierOptions o;
        o.group = group_of(group);
        py::gil_scoped_release release;
        comm::barrier(o);
      },
      py::arg("group") = "world");
}

}  // namespace sf::python
