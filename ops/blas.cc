#include "ops/blas.h"

#include <cblas.h>

namespace sf {

void set_blas_threads(int n) { openblas_set_num_threads(n); }
int blas_threads() { return openblas_get_num_threads(); }
const char* blas_config() { return openblas_get_config(); }

}  // namespace sf
