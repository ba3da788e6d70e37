// The compiled half of the `shardflow` Python package; python/shardflow/ gives it MindSpore's
// names and module layout (docs/python.md).
#include "bindings.h"

PYBIND11_MODULE(_shardflow, m) {
  m.doc() = "shardflow's C++ runtime: tensors, tracing, cells, training, datasets, communication";
  sf::python::bind_errors(m);
  sf::python::bind_tensor(m);
  sf::python::bind_trace(m);
  sf::python::bind_cells(m);
  sf::python::bind_train(m);
  sf::python::bind_data(m);
  sf::python::bind_comm(m);
  sf::python::bind_context(m);
}
