#include <shardflow/ops/kernels/register.h>

namespace sf {

void register_builtin_ops(OpRegistry& r) {
  register_source_ops(r);
  register_matmul_ops(r);
  register_bias_add_ops(r);
  register_elementwise_ops(r);
  register_relu_ops(r);
  register_reshape_ops(r);
  register_slice_ops(r);
  register_concat_ops(r);
  register_reduce_ops(r);
  register_loss_ops(r);
  register_sharded_cross_entropy_ops(r);
  register_gradient_descent_ops(r);
  register_equal_ops(r);
  register_real_div_ops(r);
  register_collective_ops(r);
  register_neighbor_exchange_ops(r);
  register_send_receive_ops(r);
  register_conv2d_ops(r);
  register_batch_norm_ops(r);
  register_pool_ops(r);
  register_gelu_ops(r);
  register_layer_norm_ops(r);
  register_softmax_ops(r);
  register_transpose_ops(r);
  register_batch_matmul_ops(r);
  register_linear_ops(r);
  register_embedding_ops(r);
  register_dropout_ops(r);
}

}  // namespace sf
