// sf::Error and its kinds as Python exceptions. The hierarchy follows Python's conventions, so
// that `except ValueError` catches a bad strategy or shape as it would in MindSpore:
//   Error(RuntimeError) ─ IoError(Error, OSError), PeerLost(Error) with .rank
//   InvalidArgument(Error, ValueError) ─ ShapeError, NotFound(InvalidArgument, KeyError)
#include "bindings.h"

#include <shardflow/core/error.h>

namespace sf::python {

namespace {

// Made once, when the module is imported; the module keeps them alive.
PyObject* g_error = nullptr;
PyObject* g_invalid = nullptr;
PyObject* g_shape = nullptr;
PyObject* g_not_found = nullptr;
PyObject* g_io = nullptr;
PyObject* g_peer_lost = nullptr;

PyObject* new_exception(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  py::dict ns;
  ns["__doc__"] = doc;
  ns["__module__"] = "shardflow";
  py::object type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyType_Type))(name, bases, ns);
  m.attr(name) = type;
  return type.release().ptr();
}

}  // namespace

void bind_errors(py::module_& m) {
  auto base = [](PyObject* p) { return py::reinterpret_borrow<py::object>(p); };
  g_error = new_exception(m, "Error", py::make_tuple(base(PyExc_RuntimeError)), "An error raised by shardflow.");
  g_invalid = new_exception(m, "InvalidArgument", py::make_tuple(base(g_error), base(PyExc_ValueError)),
                            "Bad input: a strategy, shape, option or file that breaks a rule.");
  g_shape = new_exception(m, "ShapeError", py::make_tuple(base(g_invalid)), "Shapes that do not fit together.");
  g_not_found = new_exception(m, "NotFound", py::make_tuple(base(g_invalid), base(PyExc_KeyError)),
                              "A name (group, parameter, column, file) that does not exist.");
  g_io = new_exception(m, "IoError", py::make_tuple(base(g_error), base(PyExc_OSError)),
                       "A file or socket that could not be read or written.");
  g_peer_lost = new_exception(m, "PeerLost", py::make_tuple(base(g_error)),
                              "A rank of the job stopped answering; .rank is its world rank.");
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const PeerLost& e) {
      py::object exc = py::reinterpret_borrow<py::object>(g_peer_lost)(e.what());
      exc.attr("rank") = e.rank();
      PyErr_SetObject(g_peer_lost, exc.ptr());
    } catch (const ShapeError& e) {
      PyErr_SetString(g_shape, e.what());
    } catch (const NotFound& e) {
      PyErr_SetString(g_not_found, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(g_invalid, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(g_io, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace sf::python
