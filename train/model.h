// Model: MindSpore's high-level training API. train() runs epochs over a batched dataset
// (column 0 = data, column 1 = label) on the actor runtime and calls the callbacks; eval()
// reports accuracy. As MindSpore's TrainOneStepCell, a plain SGD step is compiled into the
// training graph (train/sgd_in_graph.h); other optimizers step on the gradients it fetches.
//
//   sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
//   model.train(1, train_set, {std::make_shared<sf::LossMonitor>(100)});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "train/callback.h"
#include "train/cell.h"
#include "train/losses.h"
#include "train/optimizer.h"
#include "train/value_and_grad.h"

namespace sf {

class Model {
 public:
  // `net` must outlive the model.
  Model(nn::Cell& net, std::shared_ptr<nn::LossFn> loss, std::shared_ptr<nn::Optimizer> optimizer,
        ExecOptions opts = {});
  template <class Loss, class Opt,
            class = std::enable_if_t<std::is_base_of_v<nn::LossFn, Loss> && std::is_base_of_v<nn::Optimizer, Opt>>>
  Model(nn::Cell& net, Loss loss, Opt optimizer, ExecOptions opts = {})
      : Model(net, std::make_shared<Loss>(std::move(loss)), std::make_shared<Opt>(std::move(optimizer)), opts) {}

  void train(int64_t epochs, const dataset::Dataset& train_set, const std::vector<CallbackPtr>& callbacks = {});
  // Fraction of rows whose argmax of the network output equals the label.
  double eval_accuracy(const dataset::Dataset& eval_set);

  nn::Optimizer& optimizer() { return *optimizer_; }
  // The training program of the last step (its graph is the IR to print, its runtime the trace).
  Program* train_program() { return train_step_.last(); }

 private:
  nn::Cell& net_;
  std::shared_ptr<nn::LossFn> loss_;
  std::shared_ptr<nn::Optimizer> optimizer_;
  ExecOptions opts_;
  ProgramCache train_step_;  // fetches: loss, then gradients or in-graph SGD updates
  std::unique_ptr<ForwardFunction> forward_fn_;
};

}  // namespace sf
