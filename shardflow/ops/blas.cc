#include <shardflow/ops/blas.h>

#include <cblas.h>

namespace sf {

void set_blas_threads(int n) { openblas_set_num_threads(n); }
const char* blas_config() { return openblas_get_config(); }

}  // namespace sf
