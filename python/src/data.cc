// Datasets (mindspore.dataset): Fashion-MNIST / MNIST IDX files, in-memory columns (what a
// GeneratorDataset's rows become), map with the vision transforms, shuffle, batch, and
// iteration from Python.
#include <fmt/format.h>

#include <shardflow/comm/rank_context.h>
#include <shardflow/data/batch_iterator.h>
#include <shardflow/data/dataset.h>

#include "bindings.h"

namespace sf::python {

namespace {

// One epoch's walk, handed to Python: the batches are copies when the dataset is shuffled (its
// iterator refills one buffer every step), views of the columns otherwise.
struct PyBatchIterator {
  dataset::BatchIterator it;
  bool copy;
};

dataset::Transform to_transform(const py::handle& t) {
  if (py::isinstance<dataset::Rescale>(t)) return t.cast<dataset::Rescale>();
  if (py::isinstance<dataset::Normalize>(t)) return t.cast<dataset::Normalize>();
  if (py::isinstance<dataset::HWC2CHW>(t)) return t.cast<dataset::HWC2CHW>();
  if (py::isinstance<dataset::TypeCast>(t)) return t.cast<dataset::TypeCast>();
  throw InvalidArgument(fmt::format("map: {} is not a transform shardflow runs (Rescale, Normalize, HWC2CHW, TypeCast)",
                                    py::str(py::type::of(t).attr("__name__")).cast<std::string>()));
}

int reader() {
  comm::RankContext* r = comm::current_rank_or_null();
  return r ? r->rank() : dataset::Dataset::kNoReader;
}

}  // namespace

void bind_data(py::module_& m) {
  py::class_<dataset::Rescale>(m, "Rescale").def(py::init<float, float>(), py::arg("rescale"), py::arg("shift"));
  py::class_<dataset::Normalize>(m, "Normalize")
      .def(py::init<std::vector<float>, std::vector<float>>(), py::arg("mean"), py::arg("std"));
  py::class_<dataset::HWC2CHW>(m, "HWC2CHW").def(py::init<>());
  py::class_<dataset::TypeCast>(m, "TypeCast").def(py::init<DType>(), py::arg("data_type"));

  py::class_<PyBatchIterator>(m, "BatchIterator")
      .def("__iter__", [](PyBatchIterator& it) -> PyBatchIterator& { return it; })
      .def("__next__", [](PyBatchIterator& self) {
        const std::vector<Tensor>* batch = self.it.next();
        if (!batch) throw py::stop_iteration();
        py::tuple out(batch->size());
        for (size_t i = 0; i < batch->size(); ++i) out[i] = self.copy ? (*batch)[i].clone() : (*batch)[i];
        return out;
      })
      .def("__len__", [](const PyBatchIterator& self) { return self.it.num_batches(); });

  py::class_<dataset::Dataset>(m, "Dataset")
      .def_static("mnist", &dataset::Dataset::mnist, py::arg("dir"), py::arg("usage") = "train",
                  py::arg("num_shards") = 1, py::arg("shard_id") = 0, py::arg("num_classes") = 10)
      .def_static(
          "from_columns",
          [](std::vector<std::string> names, const py::list& columns, int num_shards, int shard_id) {
            std::vector<Tensor> cols;
            for (size_t i = 0; i < columns.size(); ++i) cols.push_back(to_tensor(columns[i], names.at(i)));
            return dataset::Dataset::from_columns(std::move(names), std::move(cols), num_shards, shard_id);
          },
          py::arg("names"), py::arg("columns"), py::arg("num_shards") = 1, py::arg("shard_id") = 0)
      .def(
          "map",
          [](const dataset::Dataset& d, const py::object& ops, const std::string& column) {
            std::vector<dataset::Transform> ts;
            if (py::isinstance<py::list>(ops) || py::isinstance<py::tuple>(ops)) {
              for (const py::handle& t : ops) ts.push_back(to_transform(t));
            } else {
              ts.push_back(to_transform(ops));
            }
            return d.map(ts, column);
          },
          py::arg("operations"), py::arg("input_columns"))
      .def("shuffle", &dataset::Dataset::shuffle, py::arg("seed"))
      .def("take", &dataset::Dataset::take, py::arg("count"))
      .def("batch", &dataset::Dataset::batch, py::arg("batch_size"), py::arg("drop_remainder") = false)
      .def("get_dataset_size", &dataset::Dataset::get_dataset_size)
      .def_property_readonly("num_rows", &dataset::Dataset::num_rows)
      .def_property_readonly("batch_size", &dataset::Dataset::batch_size)
      .def("get_col_names", &dataset::Dataset::column_names)
      .def("set_epoch", [](const dataset::Dataset& d, int64_t e) { d.set_epoch(e); })
      .def(
          "next_epoch",
          [](const dataset::Dataset& d) {
            return PyBatchIterator{d.next_epoch(reader()), d.shuffle_seed().has_value()};
          },
          "A walk over the calling rank's next epoch.");
}

}  // namespace sf::python
