/// @file
/// Gpt: a GPT-style decoder (pre-LN blocks of causal multi-head attention and a GELU MLP, a
/// final LayerNorm, and an LM head tied to the token embedding) built from shardflow's ops, with
/// its tensor-, sequence- and data-parallel layouts given as `Layout` strategies so that the
/// redistribution planner inserts every collective (docs/transformer.md has the picture).
///
/// Why a models/ folder: train/ holds the machinery every network uses (cells, Model, the
/// steps); a model is one user of that API, as a user's own network is, so it sits above train/
/// and nothing below depends on it. The example, the benchmark and the tests share this one.
///
/// Inputs, as Model feeds them: `data` (batch, seq + 1) i32 whose column 0 is each sample's
/// dropout seed and whose other columns are the token ids, and `labels` (batch, seq) i32, the
/// next token of each position. A dropout mask is a function of (sample seed, dropout site,
/// position) only (ops/kernels/dropout.cc), so every layout, rank count and micro-batching
/// draws the 1-device mask.
///
/// Activations are (batch, seq, hidden) throughout, and every projection is a Linear on them
/// (ops/kernels/linear.cc), so the batch (data parallel) and the sequence (sequence parallel)
/// stay split through projections without reshapes.
///
/// Threading: as any Cell (one thread while building).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/train/cell.h>
#include <shardflow/train/losses.h>

namespace sf::models {

/// The model's sizes.
struct GptConfig {
  int64_t vocab = 114;          ///< real token ids: [0, vocab)
  int64_t vocab_multiple = 24;  ///< the embedding table has vocab rounded up to a multiple of this many rows
  int64_t layers = 2;           ///< decoder blocks
  int64_t hidden = 64;          ///< model width
  int64_t heads = 4;            ///< attention heads; must divide hidden
  int64_t seq = 32;             ///< tokens per sample
  float dropout = 0.1f;         ///< after the embedding, the attention projection and the MLP

  /// The embedding table's rows: vocab rounded up to a multiple of vocab_multiple. The padding
  /// rows are never looked up, and their logits are left out of the loss (its `classes`).
  int64_t padded_vocab() const { return (vocab + vocab_multiple - 1) / vocab_multiple * vocab_multiple; }
  /// Throws InvalidArgument naming the field and the rule for sizes below 1, heads not dividing
  /// hidden, or dropout outside [0, 1).
  void check() const;
};

/// How the model is split over one pipeline stage's devices: a device matrix (dp, tp).
struct GptParallel {
  int64_t dp = 1;   ///< data parallel: the batch is split dp ways
  int64_t tp = 1;   ///< tensor parallel: heads, the MLP's 4h and the vocabulary split tp ways
  bool sp = false;  ///< sequence parallel: LayerNorm, dropout and residual regions split on the sequence tp ways
  /// Throws InvalidArgument for dp or tp below 1 or a size they must divide (heads, 4*hidden,
  /// padded vocab, and the sequence under sp).
  void check(const GptConfig& c) const;
};

/// The ops that read each sample's dropout seed from column 0 of `data`. Every cell that drops
/// holds its own, so a pipeline stage reads the seeds from the micro-batch it is fed (each
/// stage is fed the data columns its ops read) rather than from the stage before.
struct GptSeeds {
  Primitive* column = nullptr;  ///< StridedSlice: column 0, (batch, 1)
  Primitive* flat = nullptr;    ///< Reshape to (batch,)
  /// The seeds of `data`'s samples.
  Value operator()(GraphBuilder& b, Value data) const { return (*flat)(b, {(*column)(b, {data})}); }
  /// Their layouts: the batch over `dp`.
  void shard(int64_t dp, int64_t tp) const;
};

/// The token embedding (its table is the LM head's too), the position table and the first
/// dropout: data (batch, seq + 1) -> x (batch, seq, hidden). A pipeline's first stage.
class GptEmbedding : public nn::Cell {
 public:
  /// For a model of these sizes.
  explicit GptEmbedding(const GptConfig& config);
  /// See the class comment.
  Value construct(GraphBuilder& b, Value data) override;
  /// Gives every op its layout on the (dp, tp) device matrix.
  void shard(const GptParallel& p);
  /// The token table (padded vocab, hidden), tied to the LM head.
  Parameter& wte() { return wte_; }

 private:
  friend class Gpt;
  GptConfig c_;
  Parameter &wte_, &wpe_;
  GptSeeds seeds_;
  Primitive &ids_, &embed_, &pos_, &drop0_;
};

/// One pre-LN decoder block: x + dropout(attention(LN(x))), then + dropout(MLP(LN(.))).
class GptBlock : public nn::Cell {
 public:
  /// Block `index` of a model of these sizes (the index salts its dropout sites).
  GptBlock(const GptConfig& config, int64_t index);
  /// x (batch, seq, hidden) -> the same shape; reads the seeds from the data the model set.
  Value construct(GraphBuilder& b, Value x) override;
  /// Gives every op of the block its layout on the (dp, tp) device matrix.
  void shard(const GptParallel& p);

 private:
  friend class Gpt;
  // x through `drop` when training with a dropout rate; else x itself (evaluation, p = 0).
  Value dropout(GraphBuilder& b, Primitive& drop, Value x, Value seeds);
  Primitive& prim(const std::string& name, const std::string& op, Attrs attrs = {}) {
    return register_primitive(name, op, std::move(attrs));
  }
  GptConfig c_;
  Value data_;  // the model's input, set by Gpt::construct before each call
  Parameter &ln1_gamma_, &ln1_beta_, &wq_, &bq_, &wk_, &bk_, &wv_, &bv_, &wo_, &bo_;
  Parameter &ln2_gamma_, &ln2_beta_, &w1_, &b1_, &w2_, &b2_;
  GptSeeds seeds_;
  Primitive &ln1_, &q_, &q_bias_, &k_, &k_bias_, &v_, &v_bias_;
  Primitive &q_heads_, &k_heads_, &v_heads_, &q_t_, &k_t_, &v_t_;
  Primitive &scores_, &scale_, &mask_, &softmax_, &context_, &merge_t_, &merge_, &proj_, &proj_bias_, &drop1_,
      &res1_;
  Primitive &ln2_, &fc1_, &fc1_bias_, &gelu_, &fc2_, &fc2_bias_, &drop2_, &res2_;
};

/// The final LayerNorm and the LM head tied to the embedding: x -> logits (batch, seq, padded
/// vocab). A pipeline's last stage.
class GptHead : public nn::Cell {
 public:
  /// `wte` is the embedding's table.
  GptHead(const GptConfig& config, Parameter wte);
  /// See the class comment.
  Value construct(GraphBuilder& b, Value x) override;
  /// Gives every op its layout on the (dp, tp) device matrix.
  void shard(const GptParallel& p);

 private:
  Parameter wte_;  // not registered here: the embedding owns it
  Parameter &lnf_gamma_, &lnf_beta_;
  Primitive &lnf_, &head_;
};

/// The loss on the head's logits: labels (batch, seq) flattened with them and the cross-entropy
/// over the real vocabulary. A cell so that a pipeline places it, labels included, on the head's
/// stage.
class GptLossHead : public nn::Cell {
 public:
  /// For a model of these sizes.
  explicit GptLossHead(const GptConfig& config);
  /// logits (batch, seq, padded vocab) -> the mean loss; reads the labels the model set.
  Value construct(GraphBuilder& b, Value logits) override;
  /// Gives every op its layout on the (dp, tp) device matrix.
  void shard(const GptParallel& p);

 private:
  friend class Gpt;
  Value labels_;  // set by Gpt::loss before each call
  Primitive &flat_logits_, &flat_labels_, &xent_;
};

/// The decoder: data (batch, seq + 1) i32 -> logits (batch, seq, padded vocab). Its cells, in
/// order: "embedding", "block0" .. "block<layers-1>", "head", and "loss" (which Gpt::loss calls).
class Gpt : public nn::Cell {
 public:
  /// Checks the config (GptConfig::check).
  explicit Gpt(const GptConfig& config);
  /// See the file comment for the input.
  Value construct(GraphBuilder& b, Value data) override;
  /// Gives every op its layout on the (dp, tp) device matrix, the loss's included (semi-auto
  /// parallel). Checks p against the config first.
  void shard(const GptParallel& p);
  /// Only the inputs annotated, for auto parallel: the batch split dp ways; the search chooses
  /// the rest.
  void shard_inputs(int64_t dp);
  /// Pipeline parallel: the embedding on stage 0, the head and loss on stage stages - 1, the blocks
  /// spread evenly between (earlier stages take the extra ones), and the tied table added to
  /// the last stage so that its gradient is summed over both. InvalidArgument unless
  /// 1 <= stages <= layers + 2 (every stage needs a cell).
  void set_stages(int stages);
  /// The config.
  const GptConfig& config() const { return c_; }
  /// The loss on logits (batch, seq, padded vocab) and labels (batch, seq): the mean over every
  /// position of the cross-entropy over the real vocabulary (GptLoss calls it).
  Value loss(GraphBuilder& b, Value logits, Value labels);

 private:
  GptConfig c_;
  std::shared_ptr<GptEmbedding> embedding_;
  std::vector<std::shared_ptr<GptBlock>> blocks_;
  std::shared_ptr<GptHead> head_;
  std::shared_ptr<GptLossHead> loss_;
};

/// Model's loss for a Gpt: Gpt::loss.
class GptLoss : public nn::LossFn {
 public:
  /// Keeps a reference: the model must outlive the loss.
  explicit GptLoss(Gpt& model) : model_(model) {}
  /// Gpt::loss.
  Value operator()(GraphBuilder& b, Value logits, Value labels) const override { return model_.loss(b, logits, labels); }

 private:
  Gpt& model_;
};

}  // namespace sf::models
