/// @file
/// StrategySearch: what a strategy search (sharding propagation, the cost-model search) decided
/// for a graph — every op's strategy, as a StrategyTable the semi-auto machinery runs
/// (parallel/sharding/graph_sharding.h), and for each op why it got it: given by shard(),
/// propagated from a neighbour (which, and the redistribution bytes of the candidates
/// compared), improved once its neighbours were known, data parallel for lack of an annotated
/// neighbourhood, or chosen by the cost model. explain() is the `--explain` printout.
///
/// Threading: plain values.
#pragma once

#include <string>
#include <vector>

#include <shardflow/parallel/sharding/op_strategy.h>

namespace sf {

/// Why an op got its strategy.
enum class DecisionReason {
  kGiven,         ///< by shard()
  kPropagated,    ///< from a neighbour
  kImproved,      ///< improved once its neighbours were fixed
  kDataParallel,  ///< no op connected to it has a strategy
  kSearched,      ///< chosen by the cost model
};

/// One op's strategy and why it got it.
struct StrategyDecision {
  /// A candidate strategy and its cost.
  struct Compared {
    std::string strategy;  ///< OpStrategy::str()
    double bytes = 0;      ///< redistribution bytes per rank on the op's edges (search: its cost)
  };
  std::string op;       ///< node name
  std::string op_type;  ///< "MatMul"
  OpStrategy strategy;  ///< the strategy decided
  DecisionReason reason = DecisionReason::kGiven;  ///< why
  std::string from;     ///< the neighbour it was propagated from
  bool forward = true;  ///< `from` produces one of the op's inputs (else consumes its output)
  double bytes = 0;     ///< the chosen strategy's, as in `compared`
  std::vector<Compared> compared;  ///< the cheapest candidates, cheapest first (ties: candidate order)
  int candidates = 0;              ///< how many were compared
};

/// What a strategy search decided for a graph, and why (see the file comment).
struct StrategySearch {
  std::string mode;  ///< "sharding_propagation" or "dynamic_programming"
  StrategyTable table;  ///< every op's strategy, as the semi-auto machinery runs it
  std::vector<StrategyDecision> decisions;  ///< one per op, in graph order
  double estimate_bytes = 0;   ///< the cost model's communication per rank per step (search only)
  double estimate_memory = 0;  ///< and its parameter + activation bytes per rank

  /// The decision for op `op`, or nullptr.
  const StrategyDecision* find(const std::string& op) const;
  /// One paragraph per op: its strategy and why, with the costs compared.
  std::string explain() const;
};

/// The `compared` list of a decision: the `keep` cheapest of `bytes` (one per candidate of
/// `strategies`), stable in candidate order.
std::vector<StrategyDecision::Compared> cheapest(const std::vector<std::string>& strategies,
                                                 const std::vector<double>& bytes, size_t keep);

}  // namespace sf
