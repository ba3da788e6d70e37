// Tensor and DType. A Tensor made from a numpy array shares the array's memory, and asnumpy()
// (or numpy.asarray through the buffer protocol) shares the tensor's: no copy either way, and
// each side keeps the other's memory alive (docs/python.md, "Tensors and numpy").
#include <fmt/format.h>

#include <shardflow/core/brief.h>

#include "bindings.h"

namespace sf::python {

std::shared_ptr<py::object> hold(py::object obj) {
  return std::shared_ptr<py::object>(new py::object(std::move(obj)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    } else {
      (void)p->release();  // the interpreter is gone: nothing left to decrement
      delete p;
    }
  });
}

namespace {

Shape shape_of(const py::array& a) {
  Shape s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(static_cast<int64_t>(a.shape(i)));
  return s;
}

py::dtype numpy_dtype(DType t) { return t == DType::kF32 ? py::dtype::of<float>() : py::dtype::of<int32_t>(); }

DType parse_dtype(const py::handle& d) {
  if (py::isinstance<DType>(d)) return d.cast<DType>();
  const py::dtype nd = py::dtype::from_args(py::reinterpret_borrow<py::object>(d));
  if (nd.is(py::dtype::of<float>()) || nd.equal(py::dtype::of<float>())) return DType::kF32;
  if (nd.equal(py::dtype::of<int32_t>())) return DType::kI32;
  throw InvalidArgument(fmt::format("dtype {}: shardflow tensors are float32 or int32",
                                    py::str(d).cast<std::string>()));
}

}  // namespace

Tensor tensor_from_array(const py::array& a, const std::string& what) {
  const char kind = a.dtype().kind();
  const bool contiguous = (a.flags() & py::array::c_style) != 0;
  DType dtype;
  py::dtype want;
  if (a.dtype().equal(py::dtype::of<float>())) {
    dtype = DType::kF32;
  } else if (a.dtype().equal(py::dtype::of<int32_t>())) {
    dtype = DType::kI32;
  } else if (kind == 'f') {
    dtype = DType::kF32;
  } else if (kind == 'i' || kind == 'u' || kind == 'b') {
    dtype = DType::kI32;
  } else {
    throw InvalidArgument(fmt::format("{}: a numpy array of dtype {} cannot be a tensor (float or integer arrays only)",
                                      what, py::str(a.dtype()).cast<std::string>()));
  }
  py::array arr = a;
  if (!contiguous || !a.dtype().equal(numpy_dtype(dtype)))
    arr = py::module_::import("numpy").attr("ascontiguousarray")(a, numpy_dtype(dtype));
  void* data = const_cast<void*>(arr.data());
  return Tensor::borrow(shape_of(arr), dtype, data, hold(arr));
}

Tensor to_tensor(const py::handle& obj, const std::string& what) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (py::isinstance<py::array>(obj)) return tensor_from_array(py::reinterpret_borrow<py::array>(obj), what);
  py::array a = py::module_::import("numpy").attr("asarray")(obj);
  if (a.dtype().kind() == 'f') a = py::module_::import("numpy").attr("asarray")(obj, py::dtype::of<float>());
  return tensor_from_array(a, what);
}

py::array tensor_array(Tensor& t, const py::handle& base) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  return py::array(numpy_dtype(t.dtype()), shape, t.raw(), base);
}

void bind_tensor(py::module_& m) {
  py::enum_<DType>(m, "DType", "A tensor's element type: float32 or int32.")
      .value("float32", DType::kF32)
      .value("int32", DType::kI32);

  py::class_<Tensor>(m, "Tensor", py::buffer_protocol(),
                     "A tensor of float32 or int32 (MindSpore's Tensor). Made from a numpy array it shares "
                     "the array's memory; asnumpy() shares the tensor's.")
      .def(py::init([](const py::object& data, const py::object& dtype) {
             Tensor t = to_tensor(data, "Tensor");
             if (!dtype.is_none() && parse_dtype(dtype) != t.dtype()) {
               py::array converted = py::module_::import("numpy").attr("asarray")(
                   tensor_array(t, py::cast(t)), numpy_dtype(parse_dtype(dtype)));
               return tensor_from_array(converted, "Tensor");
             }
             return t;
           }),
           py::arg("input_data"), py::arg("dtype") = py::none())
      .def_buffer([](Tensor& t) -> py::buffer_info {
        const bool f = t.dtype() == DType::kF32;
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(shape.size());
        py::ssize_t stride = 4;
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= shape[i];
        }
        return py::buffer_info(t.raw(), 4, f ? py::format_descriptor<float>::format()
                                              : py::format_descriptor<int32_t>::format(),
                               static_cast<py::ssize_t>(shape.size()), shape, strides);
      })
      .def("asnumpy", [](py::object self) { return tensor_array(self.cast<Tensor&>(), self); },
           "A numpy array over the tensor's memory (no copy).")
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", &Tensor::rank)
      .def_property_readonly("size", &Tensor::numel)
      .def("item", [](const Tensor& t) -> py::object {
        SF_ENFORCE(t.numel() == 1, InvalidArgument, "Tensor.item(): the tensor has {} elements, not one", t.numel());
        if (t.dtype() == DType::kI32) return py::int_(t.i32()[0]);
        return py::float_(t.f32()[0]);
      })
      .def("_address", [](Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw()); },
           "Where the elements start (for the zero-copy tests).")
      .def("__len__", [](const Tensor& t) {
        SF_ENFORCE(t.rank() > 0, InvalidArgument, "len() of a 0-d tensor");
        return t.dim(0);
      })
      .def("__float__", [](const Tensor& t) {
        SF_ENFORCE(t.numel() == 1, InvalidArgument, "float() of a tensor of {} elements", t.numel());
        return static_cast<double>(t.item());
      })
      .def("__str__", [](py::object self) -> py::str {
        Tensor& t = self.cast<Tensor&>();
        // A 0-d tensor prints as MindSpore prints it: the shortest digits that read back as the
        // same float32 ("2.3026438"), as numpy prints a float32.
        if (t.rank() == 0 && t.dtype() == DType::kF32) return py::str(fmt::format("{}", t.item()));
        return py::str(tensor_array(t, self));
      })
      .def("__repr__", [](py::object self) {
        Tensor& t = self.cast<Tensor&>();
        return py::str("Tensor(shape={}, dtype={}, value=\n{})")
            .format(py::tuple(py::cast(t.shape())), dtype_name(t.dtype()) == "f32" ? "Float32" : "Int32",
                    tensor_array(t, self));
      });
}

}  // namespace sf::python
