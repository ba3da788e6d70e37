// One registration function per kernel file; register_builtin_ops calls them all.
// Registration is explicit (not static initialisers) so that linking a static library
// cannot silently drop an op.
#pragma once

namespace sf {

class OpRegistry;

void register_builtin_ops(OpRegistry& r);

void register_source_ops(OpRegistry& r);       // Input, Parameter, Fill
void register_matmul_ops(OpRegistry& r);       // MatMul
void register_bias_add_ops(OpRegistry& r);     // BiasAdd, BiasAddGrad
void register_elementwise_ops(OpRegistry& r);  // Add, Sub, Mul, SumToShape
void register_relu_ops(OpRegistry& r);         // ReLU, ReluGrad
void register_reshape_ops(OpRegistry& r);      // Flatten, Reshape
void register_slice_ops(OpRegistry& r);        // StridedSlice, StridedSliceGrad
void register_concat_ops(OpRegistry& r);       // Concat
void register_reduce_ops(OpRegistry& r);       // ReduceSum, ReduceMean, BroadcastTo
void register_loss_ops(OpRegistry& r);         // SoftmaxCrossEntropy(+Grad), MSELoss(+Grad)
// CrossEntropyShardMax, CrossEntropyShardSums(+Grad), CrossEntropyFromSums(+Grad): a class block's part
void register_sharded_cross_entropy_ops(OpRegistry& r);
void register_gradient_descent_ops(OpRegistry& r);  // ApplyGradientDescent, MatMulGradientDescent
void register_equal_ops(OpRegistry& r);        // Equal
void register_real_div_ops(OpRegistry& r);     // RealDiv
// AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll (ops/collective_attrs.h)
void register_collective_ops(OpRegistry& r);
void register_neighbor_exchange_ops(OpRegistry& r);  // NeighborExchange, NeighborExchangeV2(+Grad)
void register_send_receive_ops(OpRegistry& r);       // Send, Receive
void register_conv2d_ops(OpRegistry& r);      // Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter
// BatchNorm, BatchNormGrad, BatchNormGammaGrad, BatchNormUpdateMoving
void register_batch_norm_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);        // MaxPool(+Grad), AvgPool(+Grad)
void register_gelu_ops(OpRegistry& r);        // GeLU, GeLUGrad
void register_layer_norm_ops(OpRegistry& r);  // LayerNorm, LayerNormGrad, LayerNormGammaGrad
void register_softmax_ops(OpRegistry& r);     // Softmax, SoftmaxGrad
void register_transpose_ops(OpRegistry& r);   // Transpose
void register_batch_matmul_ops(OpRegistry& r);  // BatchMatMul
void register_linear_ops(OpRegistry& r);  // Linear, LinearGradWeight
void register_embedding_ops(OpRegistry& r);  // EmbeddingLookup, EmbeddingLookupGrad
void register_dropout_ops(OpRegistry& r);    // Dropout, CausalMask

}  // namespace sf
