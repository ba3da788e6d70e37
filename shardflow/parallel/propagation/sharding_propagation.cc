#include <shardflow/parallel/propagation/sharding_propagation.h>

#include <limits>
#include <queue>

#include <shardflow/parallel/propagation/sharding_problem.h>

namespace sf {

namespace {

constexpr int kMaxRounds = 64;
constexpr size_t kCompared = 6;

StrategyDecision decision(DecisionReason reason, std::string from = {}, bool forward = true) {
  StrategyDecision d;
  d.reason = reason;
  d.from = std::move(from);
  d.forward = forward;
  return d;
}

struct Pending {
  double bytes;
  int order;  // push order: equal costs settle first come, first served
  int op;
  int from;
  bool operator>(const Pending& o) const { return bytes != o.bytes ? bytes > o.bytes : order > o.order; }
};

class Propagation {
 public:
  Propagation(const Graph& g, const std::vector<int>& outputs, int64_t devices, std::string_view dataset_strategy)
      : p_(g, outputs, devices, dataset_strategy), chosen_(p_.none()) {}

  StrategySearch run(const StrategyTable& given) {
    const Graph& g = p_.graph();
    for (int op : p_.ops()) {
      const Node& n = g.node(op);
      auto it = given.find(n.name);
      if (it == given.end()) continue;
      decide(op, shard_op(n, p_.input_shapes(op), it->second, p_.devices()), decision(DecisionReason::kGiven));
    }
    for (int op : p_.ops())
      if (chosen_[op]) push_neighbours(op);
    while (!queue_.empty()) {
      const Pending next = queue_.top();
      queue_.pop();
      if (chosen_[next.op]) continue;
      StrategyDecision d = decision(DecisionReason::kPropagated, g.node(next.from).name, next.from < next.op);
      const size_t best = compare(next.op, d);
      decide(next.op, p_.candidates(next.op)[best].sharding, std::move(d));
      push_neighbours(next.op);
    }
    for (int op : p_.ops())
      if (!chosen_[op])
        decide(op, shard_op(g.node(op), p_.input_shapes(op), std::nullopt, p_.devices()),
               decision(DecisionReason::kDataParallel));
    improve();
    StrategySearch out;
    out.mode = "sharding_propagation";
    for (int op : p_.ops()) {
      StrategyDecision& d = decisions_.at(op);
      d.op = g.node(op).name;
      d.op_type = g.node(op).op;
      d.strategy = d.reason == DecisionReason::kGiven ? given.at(d.op) : sharding_.at(op).strategy;
      out.table[d.op] = d.strategy;
      out.decisions.push_back(d);
    }
    return out;
  }

 private:
  // Prices every candidate of `op` against the decided neighbours into `d`; the cheapest's index.
  size_t compare(int op, StrategyDecision& d) {
    const std::vector<Candidate>& cands = p_.candidates(op);
    std::vector<std::string> names;
    std::vector<double> bytes;
    size_t best = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      names.push_back(cands[i].sharding.strategy.str());
      bytes.push_back(p_.edge_bytes(op, cands[i].sharding, chosen_));
      if (bytes[i] < bytes[best]) best = i;
    }
    d.compared = cheapest(names, bytes, kCompared);
    d.candidates = static_cast<int>(cands.size());
    d.bytes = bytes[best];
    return best;
  }

  void decide(int op, OpSharding s, StrategyDecision d) {
    sharding_.insert_or_assign(op, std::move(s));
    chosen_[op] = &sharding_.at(op);
    decisions_.insert_or_assign(op, std::move(d));
  }

  void push_neighbours(int op) {
    for (int n : p_.neighbours(op)) {
      if (chosen_[n]) continue;
      double best = std::numeric_limits<double>::infinity();
      for (const Candidate& c : p_.candidates(n)) best = std::min(best, p_.edge_bytes(n, c.sharding, chosen_));
      queue_.push({best, order_++, n, op});
    }
  }

  // Moves each propagated op to a strictly cheaper candidate until none is left.
  void improve() {
    for (int round = 0; round < kMaxRounds; ++round) {
      bool moved = false;
      for (int op : p_.ops()) {
        StrategyDecision& d = decisions_.at(op);
        if (d.reason != DecisionReason::kPropagated && d.reason != DecisionReason::kImproved) continue;
        const double now = p_.edge_bytes(op, *chosen_[op], chosen_);
        StrategyDecision better = decision(DecisionReason::kImproved, d.from, d.forward);
        const size_t best = compare(op, better);
        if (better.bytes >= now) continue;
        decide(op, p_.candidates(op)[best].sharding, std::move(better));
        moved = true;
      }
      if (!moved) return;
    }
  }

  ShardingProblem p_;
  ShardingProblem::Choice chosen_;
  std::map<int, OpSharding> sharding_;
  std::map<int, StrategyDecision> decisions_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  int order_ = 0;
};

}  // namespace

StrategySearch propagate_strategies(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                                    int64_t devices, std::string_view dataset_strategy) {
  return Propagation(g, outputs, devices, dataset_strategy).run(given);
}

}  // namespace sf
