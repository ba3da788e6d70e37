"""mindspore.nn: cells, layers, losses, optimizers and wrappers."""
from .cell import Cell
from .layer import AvgPool2d, BatchNorm2d, Conv2d, Dense, Flatten, MaxPool2d, ReLU, SequentialCell
from .loss import CrossEntropyLoss, LossBase, MSELoss, SoftmaxCrossEntropyWithLogits
from .optim import SGD, Adam, AdamWeightDecay, Momentum, Optimizer
from .wrap import DistributedGradReducer, PipelineCell, WithLossCell
