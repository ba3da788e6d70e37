// Control of OpenBLAS's own threading. Ops call cblas from many actor threads at once,
// which OpenBLAS 0.3.21 (pthread build) only supports with its thread count set to 1.
#pragma once

namespace sf {

void set_blas_threads(int n);
// OpenBLAS's build description, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell MAX_THREADS=64".
const char* blas_config();

}  // namespace sf
