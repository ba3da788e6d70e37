// docs/checkpoints.md's program on one device: a run of 30 steps saving its whole training state
// every 10 steps with the CheckpointDir callback, then a new network, Model and dataset resumed
// from step 10 with resume_from, and the check that both runs end with the same parameters, bit
// for bit.
#include <filesystem>
#include <iostream>
#include <memory>

#include <shardflow/shardflow.h>

#include "examples/snippets/synthetic_data.h"

namespace {

// A small classifier of the synthetic rows: 4 features -> 8 -> 3 classes.
std::shared_ptr<sf::nn::SequentialCell> make_net() {
  return std::make_shared<sf::nn::SequentialCell>(std::vector<sf::nn::CellPtr>{
      std::make_shared<sf::nn::Dense>(4, 8), std::make_shared<sf::nn::ReLU>(), std::make_shared<sf::nn::Dense>(8, 3)});
}

// 40 rows, shuffled anew each epoch, in batches of 4: 10 steps an epoch.
sf::dataset::Dataset make_data() {
  return sf::dataset::Dataset::generator(snippets::synthetic_row, 40, {"x", "y"}).shuffle(3).batch(4);
}

}  // namespace

int main() try {
  std::filesystem::remove_all("run");  // a committed step is never overwritten: start afresh

  // [save]
  sf::set_seed(1);
  auto net = make_net();
  sf::Model model(*net, sf::nn::CrossEntropyLoss(), sf::nn::Adam(net->trainable_params(), 1e-2f));
  // run/step_10, run/step_20, run/step_30 (the last step is always saved), keeping the newest 2
  auto saver = std::make_shared<sf::CheckpointDir>("run", /*save_every=*/10, /*keep=*/2);
  model.train(3, make_data(), {saver});
  // [save]

  // [resume]
  // Later, in a new process: the same network, optimizer and dataset, built as before (the seed
  // does not matter: every parameter comes from the checkpoint).
  sf::set_seed(99);
  auto resumed_net = make_net();
  sf::Model resumed(*resumed_net, sf::nn::CrossEntropyLoss(), sf::nn::Adam(resumed_net->trainable_params(), 1e-2f));
  sf::dataset::Dataset data = make_data();
  sf::ResumePoint from = sf::resume_from(resumed, data, "run/step_20");  // or "run": its latest step
  resumed.train(3, data, {}, from);  // steps 21 to 30: the third epoch
  // [resume]

  if (saver->saved() != std::vector<int64_t>{10, 20, 30} || std::filesystem::exists("run/step_10")) {
    std::cerr << "error: expected steps 10, 20 and 30 saved, step 10 removed (keep 2)" << std::endl;
    return 1;
  }
  const sf::ParameterList a = net->get_parameters(), b = resumed_net->get_parameters();
  for (size_t i = 0; i < a.size(); ++i)
    if (!sf::bitwise_equal(a[i].value(), b[i].value())) {
      std::cerr << "error: the resumed run differs from the uninterrupted one in " << a[i].name() << std::endl;
      return 1;
    }
  std::cout << "resumed run equals the uninterrupted one, bit for bit" << std::endl;
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
