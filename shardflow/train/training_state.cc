#include <shardflow/train/training_state.h>

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/load_param_into_net.h>
#include <shardflow/train/parameter.h>

namespace sf {

namespace {

constexpr int kVersion = 1;

// `held`: the parameters the rank keeps current (Model::held_parameters).
TrainingState capture(const ParameterList& held, nn::Optimizer& optimizer, const dataset::Dataset& data,
                      ResumePoint at) {
  TrainingState s;
  // checkpoint_entries() hands out the live tensors: the state keeps copies, so training may
  // go on while it is written. Parameters the optimizer does not step (BatchNorm's moving
  // statistics, frozen layers) follow those it does.
  std::set<std::string> names;
  for (auto& [name, t] : checkpoint_entries(optimizer)) {
    names.insert(name);
    s.tensors.emplace_back(name, t.clone());
  }
  for (const Parameter& p : held)
    if (names.insert(p.name()).second) s.tensors.emplace_back(p.name(), p.value().clone());

  nlohmann::json hyper = nlohmann::json::object();
  for (const auto& [name, value] : optimizer.hyper_parameters()) hyper[name] = value;
  const std::optional<uint64_t> seed = data.shuffle_seed();
  const comm::RankContext* rank = comm::current_rank_or_null();
  s.scalars = {
      {"version", kVersion},
      {"global_step", optimizer.global_step()},
      {"epoch", at.epoch},
      {"step_in_epoch", at.step},
      {"dataset",
       {{"shuffle_seed", seed ? nlohmann::json(*seed) : nlohmann::json(nullptr)},
        {"batch_size", data.batch_size()},
        {"batches_per_epoch", data.get_dataset_size()},
        {"num_rows", data.num_rows()},
        {"num_shards", data.num_shards()},
        {"shard_id", data.shard_id()}}},
      {"rng", {{"seed", get_seed()}}},
      {"optimizer", {{"kind", optimizer.kind()}, {"hyper_parameters", hyper}}},
      {"rank", rank ? rank->rank() : 0},
      {"ranks", rank ? rank->size() : 1},
  };
  return s;
}

// The scalar at `path` ("dataset", "batch_size") as a T; a missing or mistyped one is refused,
// naming it.
template <class T>
T scalar(const nlohmann::json& scalars, const std::string& source, std::initializer_list<const char*> path) {
  std::string where;
  const nlohmann::json* j = &scalars;
  for (const char* key : path) {
    where += where.empty() ? key : fmt::format(".{}", key);
    SF_ENFORCE(j->is_object() && j->contains(key), InvalidArgument, "{}: scalar '{}' is missing", source, where);
    j = &(*j)[key];
  }
  try {
    return j->get<T>();
  } catch (const nlohmann::json::exception&) {
    SF_THROW(InvalidArgument, "{}: scalar '{}' is {}, not a value of the kind it must hold", source, where,
             brief_text(j->dump(), 60));
  }
}

// The dataset must be the one the state was captured on, or "the next batch" is another batch.
void check_dataset(const nlohmann::json& scalars, const dataset::Dataset& data, const std::string& source) {
  auto same = [&](const char* item, const std::string& saved, const std::string& here) {
    SF_ENFORCE(saved == here, InvalidArgument,
               "{}: the dataset's {} is {} in the state and {} here, so the resumed run would not read the batches "
               "the saved run read next",
               source, item, saved, here);
  };
  const auto& saved_seed = scalars.contains("dataset") ? scalars["dataset"].value("shuffle_seed", nlohmann::json())
                                                       : nlohmann::json();
  const std::optional<uint64_t> seed = data.shuffle_seed();
  same("shuffle seed", saved_seed.is_null() ? "none" : saved_seed.dump(), seed ? std::to_string(*seed) : "none");
  auto count = [&](const char* item, const char* key, int64_t here) {
    same(item, std::to_string(scalar<int64_t>(scalars, source, {"dataset", key})), std::to_string(here));
  };
  count("batch size", "batch_size", data.batch_size());
  count("row count", "num_rows", data.num_rows());
  count("batches per epoch", "batches_per_epoch", data.get_dataset_size());
  count("shard count (num_shards)", "num_shards", data.num_shards());
  count("shard (shard_id)", "shard_id", data.shard_id());
}

void check_optimizer(const nlohmann::json& scalars, const nn::Optimizer& optimizer, const std::string& source) {
  const auto kind = scalar<std::string>(scalars, source, {"optimizer", "kind"});
  SF_ENFORCE(kind == optimizer.kind(), InvalidArgument,
             "{}: it was saved with optimizer '{}', this model's is '{}'; its state would not fit", source,
             brief_text(kind, 40), optimizer.kind());
  const auto saved = scalar<std::map<std::string, double>>(scalars, source, {"optimizer", "hyper_parameters"});
  const std::map<std::string, double> here = optimizer.hyper_parameters();
  for (const auto& [name, value] : here) {
    auto it = saved.find(name);
    SF_ENFORCE(it != saved.end(), InvalidArgument, "{}: optimizer hyper-parameter '{}' is missing", source, name);
    SF_ENFORCE(it->second == value, InvalidArgument,
               "{}: optimizer hyper-parameter '{}' is {} in the state and {} here", source, name, it->second, value);
  }
  for (const auto& [name, value] : saved)
    SF_ENFORCE(here.count(name), InvalidArgument, "{}: optimizer hyper-parameter '{}' is not one of {} optimizer's",
               source, brief_text(name, 40), optimizer.kind());
}

}  // namespace

ResumePoint TrainingState::resume_point() const {
  return {scalar<int64_t>(scalars, "the training state", {"epoch"}),
          scalar<int64_t>(scalars, "the training state", {"step_in_epoch"})};
}

TrainingState capture_training_state(const RunContext& ctx) {
  SF_ENFORCE(ctx.network && ctx.optimizer && ctx.train_dataset, InvalidArgument,
             "capture_training_state: the RunContext has no network, optimizer or dataset (capture from a callback "
             "of Model::train)");
  return capture(ctx.model ? ctx.model->held_parameters() : ctx.network->get_parameters(), *ctx.optimizer,
                 *ctx.train_dataset, resume_point_of(ctx));
}

TrainingState capture_training_state(Model& model, const dataset::Dataset& train_set, ResumePoint at) {
  return capture(model.held_parameters(), model.optimizer(), train_set, at);
}

ResumePoint restore_training_state(Model& model, const dataset::Dataset& train_set, const TrainingState& state,
                                   const std::string& source) {
  const nlohmann::json& s = state.scalars;
  nn::Optimizer& optimizer = model.optimizer();
  nn::Cell& net = model.network();
  // Semi-auto and auto parallel cut the parameters to their blocks when the first step is built,
  // generating each block anew from its initializer (Parameter::shard): the step is built first,
  // so that the state lands in the blocks it keeps; a pipeline learns which parameters its
  // stages hold. Then every check: a refused restore changes no value.
  model.prepare(train_set);
  SF_ENFORCE(scalar<int>(s, source, {"version"}) == kVersion, InvalidArgument, "{}: version {} (this build reads {})",
             source, s["version"].dump(), kVersion);
  check_optimizer(s, optimizer, source);
  check_dataset(s, train_set, source);
  const ResumePoint at{scalar<int64_t>(s, source, {"epoch"}), scalar<int64_t>(s, source, {"step_in_epoch"})};
  SF_ENFORCE(at.epoch >= 0 && at.step >= 0 && (at.step == 0 || at.step < train_set.get_dataset_size()),
             InvalidArgument, "{}: position epoch {} step {} is not one of a dataset of {} batches per epoch", source,
             at.epoch, at.step, train_set.get_dataset_size());
  const auto global_step = scalar<int64_t>(s, source, {"global_step"});
  SF_ENFORCE(global_step >= 0, InvalidArgument, "{}: global_step {} is negative", source, global_step);
  const auto seed = scalar<uint64_t>(s, source, {"rng", "seed"});

  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : state.tensors) by_name.emplace(name, &t);
  std::set<std::string> known{"global_step"};
  for (const Parameter& p : net.get_parameters()) known.insert(p.name());
  std::vector<std::pair<std::string, Tensor>> slots = optimizer.state();
  for (const auto& [name, t] : slots) known.insert(name);
  std::vector<std::string> unknown;
  for (const auto& [name, t] : state.tensors)
    if (!known.count(name)) unknown.push_back(name);
  SF_ENFORCE(unknown.empty(), InvalidArgument,
             "{} holds {} tensor{} that name no parameter or optimizer state of this model: {} (a state of another "
             "network?)",
             source, unknown.size(), unknown.size() == 1 ? "" : "s", brief_names(unknown, 6));
  for (const auto& [name, dst] : slots)
    SF_ENFORCE(by_name.count(name), InvalidArgument, "{} has no optimizer state '{}' (it holds {})", source,
               brief_text(name, 80), brief_contents(state.tensors));
  // load_param_into_net checks every parameter, trainable or not, before writing any, and names
  // a network that does not match. The optimizer state's shapes follow the parameters', so they
  // are checked after it; the parameters' old values come back if one differs.
  std::vector<std::pair<Parameter, Tensor>> old_values;
  for (const Parameter& p : net.get_parameters()) old_values.emplace_back(p, p.value().clone());
  // A pipeline rank holds its stages' parameters only; the others are another rank's to restore.
  const bool pipeline = model.pipeline_step() != nullptr;
  if (pipeline) {
    const ParameterList held = model.held_parameters();
    std::vector<std::string> missing;
    for (const Parameter& p : held)
      if (!by_name.count(p.name())) missing.push_back(p.name());
    SF_ENFORCE(missing.empty(), InvalidArgument, "{} lacks {} of the {} parameters this rank's stages hold: {} (it "
               "holds {})", source, missing.size(), held.size(), brief_names(missing, 6), brief_contents(state.tensors));
  }
  load_param_into_net(net, state.tensors, /*strict=*/!pipeline, source);
  for (const auto& [name, dst] : slots) {
    const Tensor& src = *by_name.at(name);
    if (src.shape() == dst.shape() && src.dtype() == dst.dtype()) continue;
    for (auto& [p, value] : old_values) p.value().copy_from(value);
    SF_THROW(ShapeError, "{}: optimizer state '{}' is {}, this optimizer's is {}", source, brief_text(name, 80),
             src.describe(), dst.describe());
  }
  for (auto& [name, dst] : slots) dst.copy_from(*by_name.at(name));
  optimizer.set_global_step(global_step);
  set_seed(seed);
  return at;
}

}  // namespace sf
