#include <shardflow/parallel/auto_search.h>

#include <algorithm>
#include <limits>

#include <shardflow/core/error.h>
#include <shardflow/parallel/propagation/sharding_problem.h>
#include <shardflow/parallel/step_estimate.h>

namespace sf {

namespace {

constexpr int kMaxRounds = 64;
constexpr size_t kCompared = 6;
// Memory weights tried in turn until the plan fits the limit.
constexpr double kMemoryWeights[] = {0, 1e-3, 1e-2, 0.1, 1, 10, 100, 1e3};

class Search {
 public:
  Search(const Graph& g, const std::vector<int>& outputs, int64_t devices, const AutoSearchOptions& o,
         const StrategyTable& given)
      : p_(g, outputs, devices, o.dataset_strategy), choice_(p_.none()) {
    for (int op : p_.ops()) {
      const Node& n = g.node(op);
      auto it = given.find(n.name);
      if (it == given.end()) {
        for (const Candidate& c : p_.candidates(op)) options_[op].push_back(c.sharding);
      } else {
        options_[op].push_back(shard_op(n, p_.input_shapes(op), it->second, devices));
        given_.push_back(op);
      }
    }
  }

  // Chooses every op's option for memory weight `weight`; the index chosen per op.
  std::map<int, size_t> run(double weight) {
    weight_ = weight;
    std::map<int, std::vector<double>> f;
    std::map<int, std::vector<int>> children;
    std::vector<int> roots;
    for (int op : p_.ops()) {
      const int parent = parent_of(op);
      (parent < 0 ? roots : children[parent]).push_back(op);
    }
    const std::vector<int>& ops = p_.ops();
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const int v = *it;
      auto& fv = f[v];
      for (size_t i = 0; i < options_[v].size(); ++i) {
        double cost = own_cost(v, options_[v][i]);
        for (int u : children[v]) cost += best_child(v, i, u, f[u]).second;
        fv.push_back(cost);
      }
    }
    std::map<int, size_t> pick;
    for (int r : roots) pick[r] = argmin(f[r]);
    for (int v : ops)
      for (int u : children[v]) pick[u] = best_child(v, pick[v], u, f[u]).first;
    for (int v : ops) choice_[v] = &options_[v][pick[v]];
    improve(pick);
    return pick;
  }

  ShardingProblem& problem() { return p_; }
  const std::vector<OpSharding>& options(int op) { return options_[op]; }
  bool given(int op) const { return std::find(given_.begin(), given_.end(), op) != given_.end(); }
  // An op's cost in option `s` with every neighbour as chosen.
  double local_cost(int op, const OpSharding& s) {
    double cost = own_cost(op, s);
    for (const auto& e : p_.in_edges(op))
      if (p_.is_op(e.producer)) cost += 2 * p_.bytes(e, choice_[e.producer]->carried, s.inputs[e.slot]);
    for (const auto& e : p_.out_edges(op)) cost += 2 * p_.bytes(e, s.carried, choice_[e.consumer]->inputs[e.slot]);
    return cost;
  }

 private:
  int parent_of(int op) const {
    for (const auto& e : p_.in_edges(op))
      if (p_.is_op(e.producer)) return e.producer;
    return -1;
  }

  static size_t argmin(const std::vector<double>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] < v[best]) best = i;
    return best;
  }

  // Partial sums resolved, gradients of the parameters read, priced inputs, weighted memory.
  double own_cost(int op, const OpSharding& s) {
    const Graph& g = p_.graph();
    const Node& n = g.node(op);
    const ShardingProblem::Edge self{op, op, 0};
    double cost = 2 * p_.bytes(self, s.output, s.carried) + weight_ * local_bytes(s.output, n);
    ShardingProblem::Choice none = p_.none();
    for (const auto& e : p_.in_edges(op)) {
      const Node& src = g.node(e.producer);
      if (src.op != "Parameter") continue;
      const double block = local_bytes(s.inputs[e.slot], src);
      const auto n_rep = static_cast<double>(s.inputs[e.slot].replica_group(0).size());
      cost += 2 * (n_rep - 1) / n_rep * block + weight_ * block;
    }
    // An Input priced by the dataset strategy (edge_bytes with no op decided sees only those).
    return cost + p_.edge_bytes(op, s, none);
  }

  // The child's best option given the parent's option i: (index, edge cost + child's subtree).
  std::pair<size_t, double> best_child(int v, size_t i, int u, const std::vector<double>& fu) {
    std::pair<size_t, double> best{0, std::numeric_limits<double>::infinity()};
    for (size_t j = 0; j < options_[u].size(); ++j) {
      double cost = fu[j];
      for (const auto& e : p_.in_edges(u))
        if (e.producer == v) cost += 2 * p_.bytes(e, options_[v][i].carried, options_[u][j].inputs[e.slot]);
      if (cost < best.second) best = {j, cost};
    }
    return best;
  }

  void improve(std::map<int, size_t>& pick) {
    for (int round = 0; round < kMaxRounds; ++round) {
      bool moved = false;
      for (int v : p_.ops()) {
        const double now = local_cost(v, *choice_[v]);
        for (size_t i = 0; i < options_[v].size(); ++i)
          if (local_cost(v, options_[v][i]) < now - 1e-9) {
            pick[v] = i;
            choice_[v] = &options_[v][i];
            moved = true;
            break;
          }
      }
      if (!moved) return;
    }
  }

  ShardingProblem p_;
  ShardingProblem::Choice choice_;
  std::map<int, std::vector<OpSharding>> options_;
  std::vector<int> given_;
  double weight_ = 0;
};

}  // namespace

StrategySearch search_auto(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                           int64_t devices, const AutoSearchOptions& options) {
  Search search(g, outputs, devices, options, given);
  StrategySearch out;
  out.mode = "dynamic_programming";
  double least_memory = std::numeric_limits<double>::infinity();
  for (double weight : kMemoryWeights) {
    const std::map<int, size_t> pick = search.run(weight);
    StrategyTable table;
    for (const auto& [op, i] : pick) {
      const std::string& name = g.node(op).name;
      table[name] = search.given(op) ? given.at(name) : search.options(op)[i].strategy;
    }
    const StepEstimate e = estimate_step(g, shard_graph(g, outputs, table, devices));
    least_memory = std::min(least_memory, e.memory_bytes());
    if (options.memory_limit_bytes > 0 && e.memory_bytes() > options.memory_limit_bytes) continue;
    out.table = std::move(table);
    out.estimate_bytes = e.communication_bytes();
    out.estimate_memory = e.memory_bytes();
    for (int op : search.problem().ops()) {
      StrategyDecision d;
      d.op = g.node(op).name;
      d.op_type = g.node(op).op;
      d.strategy = out.table.at(d.op);
      d.reason = search.given(op) ? DecisionReason::kGiven : DecisionReason::kSearched;
      std::vector<std::string> names;
      std::vector<double> costs;
      for (const OpSharding& s : search.options(op)) {
        names.push_back(s.strategy.str());
        costs.push_back(search.local_cost(op, s));
      }
      d.compared = cheapest(names, costs, kCompared);
      d.candidates = static_cast<int>(names.size());
      d.bytes = search.local_cost(op, search.options(op)[pick.at(op)]);
      out.decisions.push_back(std::move(d));
    }
    return out;
  }
  SF_THROW(InvalidArgument,
           "auto parallel search: no strategies fit the memory limit of {:.0f} bytes per rank; the least found needs "
           "{:.0f}",
           options.memory_limit_bytes, least_memory);
}

}  // namespace sf
