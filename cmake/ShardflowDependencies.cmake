# Finds every Debian-packaged dependency once, for all layers (see docs/dependencies.md).
find_package(Threads REQUIRED)
find_package(CAF 0.17 REQUIRED COMPONENTS core)
find_package(msgpack 4.1 REQUIRED CONFIG)        # target msgpackc-cxx (Debian's msgpack-c 4.x name)
find_package(fmt REQUIRED CONFIG)
find_package(nlohmann_json REQUIRED CONFIG)
find_package(CLI11 REQUIRED CONFIG)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
# pkg-config pins OpenBLAS's own cblas.h, not the update-alternatives link.
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET GLOBAL openblas)
if(SHARDFLOW_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SHARDFLOW_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(SHARDFLOW_PYTHON)
  # Debian's interpreter (python3-numpy, python3-pytest and pybind11-dev are its packages), not
  # whichever python3 is first on PATH.
  if(NOT Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  # The doc test's runner (FindPython3) too; it also makes this the pages' `python3`
  # (tests/doc/doc_test.py --python), whatever python3 is first on PATH (pyenv's, without numpy).
  if(NOT Python3_EXECUTABLE)
    set(Python3_EXECUTABLE ${Python_EXECUTABLE})
  endif()
  set(PYBIND11_FINDPYTHON ON)
  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.6 REQUIRED CONFIG)
  # Where `cmake --install` puts the package: Debian's dist-packages under the prefix.
  set(SHARDFLOW_PYTHON_INSTALL_DIR
      "lib/python3/dist-packages" CACHE STRING "Install folder of the Python package")
endif()
