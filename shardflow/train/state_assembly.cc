#include <shardflow/train/state_assembly.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/text_tensor.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/reshard.h>
#include <shardflow/parallel/reshard_plan.h>
#include <shardflow/parallel/shard_box.h>
#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/sharded_tensor.h>
#include <shardflow/train/state_transfer.h>

namespace sf {

namespace {

constexpr const char* kBlocks = "blocks";
constexpr const char* kElsewhere = "held_elsewhere";

// Rounds 1 and 2 travel under this tag; round 3 under training_state_tag().
comm::Tag assembly_tag() { return comm::membership_tag(0xfffffff1u, 0); }

// A tensor held as a block: where it lies in the whole tensor.
struct Block {
  Shape global, offset, shape;
};

// The block entry of `name` in a commit's scalars, none when it is held whole. Error naming
// `who` for an entry that is not one.
std::optional<Block> block_entry(const nlohmann::json& blocks, const std::string& name, const std::string& who) {
  if (!blocks.is_object() || !blocks.contains(name)) return std::nullopt;
  const nlohmann::json& e = blocks[name];
  const auto dims = [&](const char* key) {
    SF_ENFORCE(e.is_object() && e.contains(key) && e[key].is_array(), Error,
               "elastic: {} describes the block of '{}' without its \"{}\"", who, brief_text(name, 80), key);
    Shape out;
    for (const auto& d : e[key]) {
      SF_ENFORCE(d.is_number_integer() && d.get<int64_t>() >= 0, Error,
                 "elastic: {} describes the block of '{}' with a bad \"{}\"", who, brief_text(name, 80), key);
      out.push_back(d.get<int64_t>());
    }
    return out;
  };
  Block b{dims("global"), dims("offset"), dims("shape")};
  SF_ENFORCE(b.global.size() == b.offset.size() && b.global.size() == b.shape.size(), Error,
             "elastic: {} describes the block of '{}' with dims that disagree", who, brief_text(name, 80));
  for (size_t d = 0; d < b.global.size(); ++d)
    SF_ENFORCE(b.shape[d] > 0 && b.global[d] % b.shape[d] == 0 && b.offset[d] % b.shape[d] == 0 &&
                   b.offset[d] < b.global[d],
               Error, "elastic: {} describes a block of '{}' that does not tile it", who, brief_text(name, 80));
  return b;
}

// "[0:392, 0:512]": a block's elements, begin:end per dim.
std::string block_text(const Block& b) {
  std::string out = "[";
  for (size_t d = 0; d < b.offset.size(); ++d)
    out += fmt::format("{}{}:{}", d ? ", " : "", b.offset[d], b.offset[d] + b.shape[d]);
  return out + "]";
}

// Every block offset of a tensor cut into blocks of `b.shape`, row-major: the layout rank order
// of ckpt::block_layout.
std::vector<Shape> block_offsets(const Block& b) {
  std::vector<Shape> out(1, Shape(b.global.size(), 0));
  for (size_t d = 0; d < b.global.size(); ++d) {
    std::vector<Shape> next;
    for (const Shape& o : out)
      for (int64_t at = 0; at < b.global[d]; at += b.shape[d]) {
        next.push_back(o);
        next.back()[d] = at;
      }
    out = std::move(next);
  }
  return out;
}

// What one member holds, as its round-1 message says.
struct Holding {
  std::vector<std::string> names;
  nlohmann::json blocks = nlohmann::json::object();
  nlohmann::json elsewhere = nlohmann::json::array();  // the network's parameters other members hold
};

Holding holding_of(const TrainingState& s) {
  Holding h;
  for (const auto& [name, t] : s.tensors) h.names.push_back(name);
  h.blocks = s.scalars.value(kBlocks, nlohmann::json::object());
  h.elsewhere = s.scalars.value(kElsewhere, nlohmann::json::array());
  return h;
}

std::string holding_text(const Holding& h) {
  return nlohmann::json{{"names", h.names}, {kBlocks, h.blocks}, {kElsewhere, h.elsewhere}}.dump();
}

Holding parse_holding(const Tensor& t, int rank) {
  const nlohmann::json j = nlohmann::json::parse(comm::tensor_text(t), nullptr, false);
  comm::BufferPool::global().release(t);  // read: back to the pool
  SF_ENFORCE(j.is_object() && j.contains("names") && j["names"].is_array() && j.contains(kBlocks) &&
                 j[kBlocks].is_object() && j.contains(kElsewhere) && j[kElsewhere].is_array(),
             Error, "elastic: rank {} sent a malformed list of the state it holds", rank);
  Holding h;
  for (const auto& n : j["names"]) {
    SF_ENFORCE(n.is_string(), Error, "elastic: rank {} sent a malformed list of the state it holds", rank);
    h.names.push_back(n.get<std::string>());
  }
  h.blocks = j[kBlocks];
  h.elsewhere = j[kElsewhere];
  return h;
}

// Rank 0's plan: the names it wants from each member, and the block of each tensor it will
// put together, or the first block no member holds.
struct Plan {
  std::map<int, std::set<std::string>> want;         // member -> names
  std::map<std::string, int> whole_from;             // tensors held whole: the lowest member
  std::map<std::string, Block> assembled;            // tensors put together from blocks
  std::map<std::string, std::map<Shape, int>> from;  // tensor -> block offset -> member
  std::string error;
};

Plan plan_assembly(const std::vector<Holding>& held) {
  Plan plan;
  // By name, in order of first appearance (rank 0's first): who holds it whole, and its blocks.
  std::vector<std::string> order;
  std::map<std::string, int>& whole_at = plan.whole_from;
  std::map<std::string, Block> shape_of;
  for (size_t r = 0; r < held.size(); ++r) {
    const std::string who = fmt::format("rank {}", r);
    for (const std::string& name : held[r].names) {
      if (!whole_at.count(name) && !shape_of.count(name) && !plan.from.count(name)) order.push_back(name);
      const std::optional<Block> b = block_entry(held[r].blocks, name, who);
      if (!b) {
        whole_at.emplace(name, static_cast<int>(r));
        continue;
      }
      const auto [it, first] = shape_of.emplace(name, *b);
      SF_ENFORCE(first || (it->second.global == b->global && it->second.shape == b->shape), Error,
                 "elastic: rank {} holds '{}' as a block of another layout than rank {}'s", r, brief_text(name, 80),
                 plan.from[name].begin()->second);
      plan.from[name].emplace(b->offset, static_cast<int>(r));  // the lowest holder stays
    }
  }
  // A parameter of a pipeline stage whose every rank was lost: no member holds it at all.
  for (const Holding& h : held)
    for (const auto& entry : h.elsewhere) {
      if (!entry.is_string()) continue;
      const std::string name = entry.get<std::string>();
      if (whole_at.count(name) || shape_of.count(name)) continue;
      plan.error = fmt::format(
          "elastic: no member holds '{}' (the ranks lost held its only copies: its pipeline stage had no "
          "data-parallel replica); the job stops, and its last checkpoint is where it can restart",
          brief_text(name, 80));
      return plan;
    }
  for (const std::string& name : order) {
    if (whole_at.count(name)) {
      plan.from.erase(name);
      if (whole_at[name] != 0) plan.want[whole_at[name]].insert(name);
      continue;
    }
    const Block& b = shape_of.at(name);
    Block missing = b;
    for (const Shape& offset : block_offsets(b)) {
      const auto at = plan.from[name].find(offset);
      if (at == plan.from[name].end()) {
        missing.offset = offset;
        plan.error = fmt::format(
            "elastic: no member holds the block {} of '{}' (the ranks lost held its only copies: it had no "
            "data-parallel replica); the job stops, and its last checkpoint is where it can restart",
            block_text(missing), brief_text(name, 80));
        return plan;
      }
      if (at->second != 0) plan.want[at->second].insert(name);
    }
    plan.assembled.emplace(name, b);
  }
  return plan;
}

const Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

}  // namespace

nlohmann::json state_blocks(const TrainingState& state, const ParameterList& params) {
  nlohmann::json blocks = nlohmann::json::object(), elsewhere = nlohmann::json::array();
  std::set<std::string> held;
  for (const auto& [name, t] : state.tensors) held.insert(name);
  for (const Parameter& p : params)
    if (!held.count(p.name())) elsewhere.push_back(p.name());
  for (const auto& [name, t] : state.tensors) {
    const ckpt::ShardedTensor b = ckpt::parameter_block(name, t, params);
    if (b.global == t.shape()) continue;
    const ShardBox box = shard_box(b.layout, b.global, b.layout_rank, name);
    Shape offset;
    for (const DimSlice& d : box.dims) offset.push_back(d.offset);
    blocks[name] = {{"global", b.global}, {"offset", offset}, {"shape", t.shape()}};
  }
  return {{kBlocks, std::move(blocks)}, {kElsewhere, std::move(elsewhere)}};
}

void note_state_blocks(TrainingState& state, nlohmann::json layout) {
  for (const char* key : {kBlocks, kElsewhere}) {
    if (!layout.contains(key) || layout[key].empty())
      state.scalars.erase(key);
    else
      state.scalars[key] = std::move(layout[key]);
  }
}

void note_state_blocks(TrainingState& state, const ParameterList& params) {
  note_state_blocks(state, state_blocks(state, params));
}

bool holds_blocks(const TrainingState& state) { return state.scalars.contains(kBlocks); }

bool holds_whole_state(const TrainingState& state) {
  return !holds_blocks(state) && !state.scalars.contains(kElsewhere);
}

std::optional<TrainingState> assemble_whole_state(comm::Transport& world, int members, const TrainingState& own,
                                                  int64_t step, std::chrono::milliseconds timeout) {
  const int me = world.rank();
  if (me != 0) {
    world.send(0, assembly_tag(), comm::text_tensor(holding_text(holding_of(own))));
    const Tensor answer_t = world.recv(0, assembly_tag(), timeout);
    const nlohmann::json answer = nlohmann::json::parse(comm::tensor_text(answer_t), nullptr, false);
    comm::BufferPool::global().release(answer_t);  // read: back to the pool
    SF_ENFORCE(answer.is_object() && (answer.contains("error") || answer.contains("send")), Error,
               "elastic: rank 0 sent a malformed request for the state");
    if (answer.contains("error")) SF_THROW(Error, "{}", answer["error"].get<std::string>());
    TrainingState part;
    for (const auto& name : answer["send"]) {
      const Tensor* t = name.is_string() ? find_tensor(own.tensors, name.get<std::string>()) : nullptr;
      SF_ENFORCE(t, Error, "elastic: rank 0 asked for a tensor this rank does not hold");
      part.tensors.emplace_back(name.get<std::string>(), *t);
    }
    if (!part.tensors.empty()) send_training_state(world, 0, part, step);
    return std::nullopt;
  }
  std::vector<Holding> held(static_cast<size_t>(members));
  held[0] = holding_of(own);
  for (int r = 1; r < members; ++r) {
    try {
      held[static_cast<size_t>(r)] = parse_holding(world.recv(r, assembly_tag(), timeout), r);
    } catch (const PeerLost&) {
      // Lost as the world began: it holds nothing here; the new world's watcher sees the loss,
      // and the next change starts from this one's step.
    }
  }
  const Plan plan = plan_assembly(held);
  for (int r = 1; r < members; ++r) {
    nlohmann::json answer;
    if (!plan.error.empty()) {
      answer = {{"error", plan.error}};
    } else {
      answer["send"] = nlohmann::json::array();
      if (plan.want.count(r))
        for (const std::string& name : plan.want.at(r)) answer["send"].push_back(name);
    }
    world.send(r, assembly_tag(), comm::text_tensor(answer.dump()));
  }
  SF_ENFORCE(plan.error.empty(), Error, "{}", plan.error);
  // Every tensor's copies, by member: rank 0's own, then what each member sent.
  std::vector<const NamedTensors*> got(static_cast<size_t>(members), nullptr);
  got[0] = &own.tensors;
  std::vector<ReceivedState> parts;
  parts.reserve(static_cast<size_t>(members));
  for (const auto& [r, names] : plan.want) {
    parts.push_back(recv_training_state(world, r, timeout));
    got[static_cast<size_t>(r)] = &parts.back().state.tensors;
  }
  TrainingState whole;
  whole.scalars = own.scalars;
  whole.scalars.erase(kBlocks);
  whole.scalars.erase(kElsewhere);
  std::set<std::string> done;
  for (size_t r = 0; r < held.size(); ++r) {
    for (const std::string& name : held[r].names) {
      if (!done.insert(name).second) continue;
      const auto blocks = plan.assembled.find(name);
      if (blocks == plan.assembled.end()) {  // whole on the lowest member that holds it so
        const int member = plan.whole_from.at(name);
        const Tensor* t = got[static_cast<size_t>(member)] ? find_tensor(*got[static_cast<size_t>(member)], name)
                                                          : nullptr;
        SF_ENFORCE(t, Error, "elastic: rank {} did not send '{}'", member, brief_text(name, 80));
        whole.tensors.emplace_back(name, *t);
        continue;
      }
      const Block& b = blocks->second;
      std::vector<Tensor> sources;
      for (const Shape& offset : block_offsets(b)) {
        const int member = plan.from.at(name).at(offset);
        const Tensor* t = got[static_cast<size_t>(member)] ? find_tensor(*got[static_cast<size_t>(member)], name)
                                                          : nullptr;
        SF_ENFORCE(t && t->shape() == b.shape, Error, "elastic: rank {} sent no block {} of '{}'", member,
                   block_text({b.global, offset, b.shape}), brief_text(name, 80));
        sources.push_back(*t);
      }
      const TensorLayout from = ckpt::block_layout(b.global, b.shape, b.offset, name).first;
      const TensorLayout to = TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(b.global.size()));
      whole.tensors.emplace_back(name, reshard(sources, b.global, from, to).front());
    }
  }
  return whole;
}

TrainingState cut_to_held_blocks(const TrainingState& whole, Model& model) {
  const ParameterList params = model.network().get_parameters();
  std::map<std::string, ckpt::ShardedTensor> held;  // what this rank holds, as blocks
  for (const Parameter& p : model.held_parameters())
    held.emplace(p.name(), ckpt::parameter_block(p.name(), p.value(), params));
  for (const auto& [name, t] : model.optimizer().state()) held.emplace(name, ckpt::parameter_block(name, t, params));
  std::set<std::string> network_params;
  for (const Parameter& p : params) network_params.insert(p.name());
  TrainingState out;
  out.scalars = whole.scalars;
  for (const auto& [name, t] : whole.tensors) {
    const auto h = held.find(name);
    if (h == held.end()) {
      // A parameter of another pipeline stage, or its optimizer state, is another rank's; anything
      // else ("global_step") is restored, or refused, as it is.
      if (!network_params.count(name) && !ckpt::owner_of(name, params)) out.tensors.emplace_back(name, t);
      continue;
    }
    const ckpt::ShardedTensor& b = h->second;
    if (b.global == b.local.shape() || t.shape() != b.global) {  // held whole, or refused by its shape later
      out.tensors.emplace_back(name, t);
      continue;
    }
    const TensorLayout from = TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(b.global.size()));
    const TargetPlan plan = plan_reshard_target(b.global, t.dtype(), from, b.layout, b.layout_rank);
    Tensor mine = Tensor::empty(plan.box.shape(), t.dtype());
    const auto* src = static_cast<const char*>(t.raw());
    copy_runs(
        plan, [&](int, int64_t offset, int64_t bytes, void* dst) { std::memcpy(dst, src + offset, bytes); },
        mine.raw(), static_cast<int64_t>(mine.nbytes()));
    out.tensors.emplace_back(name, std::move(mine));
  }
  return out;
}

}  // namespace sf
