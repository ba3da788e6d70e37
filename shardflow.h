// The whole shardflow library API in one include.
#pragma once

#include "actors/runtime.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/serialize.h"
#include "core/tensor.h"
#include "data/dataset.h"
#include "ops/autodiff.h"
#include "ops/builder.h"
#include "ops/printer.h"
#include "train/callback.h"
#include "train/checkpoint.h"
#include "train/layers.h"
#include "train/losses.h"
#include "train/model.h"
#include "train/optimizer.h"
#include "train/value_and_grad.h"
