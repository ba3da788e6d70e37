/// @file
/// The Python module `shardflow._shardflow`: what each bind_* function adds to it, and the
/// helpers they share. The pure-Python package (python/shardflow/) gives these MindSpore's
/// names and module layout; docs/python.md describes both.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/train/parameter.h>

namespace sf::python {

namespace py = pybind11;

/// Exception types: sf::Error and its kinds as Python exceptions (ValueError for bad input, a
/// PeerLost with .rank).
void bind_errors(py::module_& m);
/// Tensor (zero-copy with numpy both ways), DType.
void bind_tensor(py::module_& m);
/// Tracing: Symbol (a traced tensor), the generic op call, cell calls.
void bind_trace(py::module_& m);
/// Cells: the trampoline for Python subclasses, the built-in layers, Primitive, Parameter, Layout.
void bind_cells(py::module_& m);
/// Losses, optimizers, the gradient reducer, value_and_grad, Model and callbacks.
void bind_train(py::module_& m);
/// Datasets and their transforms.
void bind_data(py::module_& m);
/// The communication layer: init, ranks and groups, the eager collectives.
void bind_comm(py::module_& m);
/// The parallel context, the seed, logging.
void bind_context(py::module_& m);

/// A Python object held from C++ code that may run, copy or drop it on any thread: the last
/// reference is dropped with the GIL held (and not at all once the interpreter is gone).
std::shared_ptr<py::object> hold(py::object obj);

/// A tensor over a numpy array's memory when it is C-contiguous float32 or int32 (no copy; the
/// array is kept alive), else over a converted copy (float64 -> float32, other integers and bool
/// -> int32). Throws InvalidArgument naming `what` for other dtypes.
Tensor tensor_from_array(const py::array& a, const std::string& what);
/// A Tensor from a numpy array, a Tensor, or a Python number / nested list (converted by numpy).
Tensor to_tensor(const py::handle& obj, const std::string& what);
/// A numpy array over the tensor's memory, kept alive by `base` (the Python Tensor).
py::array tensor_array(Tensor& t, const py::handle& base);

/// The parameters of a Python list of Parameter objects.
ParameterList to_parameters(const py::handle& params, const std::string& what);

}  // namespace sf::python
