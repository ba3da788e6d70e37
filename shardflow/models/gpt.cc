#include <shardflow/models/gpt.h>

#include <cmath>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/parallel/layout.h>

namespace sf::models {

namespace {
// Past any batch: StridedSlice clamps an end to the dim, so one attr serves every batch size
// (and every micro-batch of a pipeline).
constexpr int64_t kToEnd = int64_t{1} << 40;

Attrs seed_column_attrs() {
  return {{"begin", std::vector<int64_t>{0, 0}}, {"end", std::vector<int64_t>{kToEnd, 1}}};
}

void positive(int64_t v, const char* field) {
  SF_ENFORCE(v >= 1, InvalidArgument, "gpt: {} must be at least 1, got {}", field, v);
}

void divides(int64_t ways, int64_t size, const char* what, const char* flag) {
  SF_ENFORCE(size % ways == 0, InvalidArgument, "gpt: {} {} is not divisible by {} {}", what, size, flag, ways);
}
}  // namespace

void GptConfig::check() const {
  positive(vocab, "vocab");
  positive(vocab_multiple, "vocab_multiple");
  positive(layers, "layers");
  positive(hidden, "hidden");
  positive(heads, "heads");
  positive(seq, "seq");
  divides(heads, hidden, "hidden", "heads");
  SF_ENFORCE(dropout >= 0.0f && dropout < 1.0f, InvalidArgument, "gpt: dropout must be in [0, 1), got {}", dropout);
}

void GptParallel::check(const GptConfig& c) const {
  positive(dp, "dp");
  positive(tp, "tp");
  divides(tp, c.heads, "heads", "tp");
  divides(tp, 4 * c.hidden, "the MLP width 4*hidden", "tp");
  SF_ENFORCE(c.padded_vocab() % tp == 0, InvalidArgument,
             "gpt: the padded vocabulary {} (vocab {} rounded up to a multiple of {}) is not divisible by tp {}; "
             "choose a vocab multiple that tp divides",
             c.padded_vocab(), c.vocab, c.vocab_multiple, tp);
  if (sp) divides(tp, c.seq, "seq", "tp under sequence parallel");
}

GptBlock::GptBlock(const GptConfig& c, int64_t index)
    : c_(c),
      ln1_gamma_(register_parameter("ln1_gamma", {c.hidden}, "ones")),
      ln1_beta_(register_parameter("ln1_beta", {c.hidden}, "zeros")),
      wq_(register_parameter("wq", {c.hidden, c.hidden}, "normal")),
      bq_(register_parameter("bq", {c.hidden}, "zeros")),
      wk_(register_parameter("wk", {c.hidden, c.hidden}, "normal")),
      bk_(register_parameter("bk", {c.hidden}, "zeros")),
      wv_(register_parameter("wv", {c.hidden, c.hidden}, "normal")),
      bv_(register_parameter("bv", {c.hidden}, "zeros")),
      wo_(register_parameter("wo", {c.hidden, c.hidden}, "normal")),
      bo_(register_parameter("bo", {c.hidden}, "zeros")),
      ln2_gamma_(register_parameter("ln2_gamma", {c.hidden}, "ones")),
      ln2_beta_(register_parameter("ln2_beta", {c.hidden}, "zeros")),
      w1_(register_parameter("w1", {4 * c.hidden, c.hidden}, "normal")),
      b1_(register_parameter("b1", {4 * c.hidden}, "zeros")),
      w2_(register_parameter("w2", {c.hidden, 4 * c.hidden}, "normal")),
      b2_(register_parameter("b2", {c.hidden}, "zeros")),
      ln1_(prim("ln1", "LayerNorm")),
      q_(prim("q", "Linear")),
      q_bias_(prim("q_bias", "Add")),
      k_(prim("k", "Linear")),
      k_bias_(prim("k_bias", "Add")),
      v_(prim("v", "Linear")),
      v_bias_(prim("v_bias", "Add")),
      q_heads_(prim("q_heads", "Reshape", {{"shape", Shape{-1, c.seq, c.heads, c.hidden / c.heads}}})),
      k_heads_(prim("k_heads", "Reshape", {{"shape", Shape{-1, c.seq, c.heads, c.hidden / c.heads}}})),
      v_heads_(prim("v_heads", "Reshape", {{"shape", Shape{-1, c.seq, c.heads, c.hidden / c.heads}}})),
      q_t_(prim("q_t", "Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})),
      k_t_(prim("k_t", "Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})),
      v_t_(prim("v_t", "Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})),
      scores_(prim("scores", "BatchMatMul", {{"transpose_b", int64_t{1}}})),
      scale_(prim("scale", "Mul")),
      mask_(prim("mask", "CausalMask")),
      softmax_(prim("softmax", "Softmax", {{"axis", int64_t{-1}}})),
      context_(prim("context", "BatchMatMul")),
      merge_t_(prim("merge_t", "Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})),
      merge_(prim("merge", "Reshape", {{"shape", Shape{-1, c.seq, c.hidden}}})),
      proj_(prim("proj", "Linear")),
      proj_bias_(prim("proj_bias", "Add")),
      drop1_(prim("drop1", "Dropout", {{"p", double{c.dropout}}, {"salt", index * 8 + 1}})),
      res1_(prim("res1", "Add")),
      ln2_(prim("ln2", "LayerNorm")),
      fc1_(prim("fc1", "Linear")),
      fc1_bias_(prim("fc1_bias", "Add")),
      gelu_(prim("gelu", "GeLU", {{"approximate", std::string("tanh")}})),
      fc2_(prim("fc2", "Linear")),
      fc2_bias_(prim("fc2_bias", "Add")),
      drop2_(prim("drop2", "Dropout", {{"p", double{c.dropout}}, {"salt", index * 8 + 2}})),
      res2_(prim("res2", "Add")) {
  seeds_ = {&prim("seed_col", "StridedSlice", seed_column_attrs()), &prim("seeds", "Reshape", {{"shape", Shape{-1}}})};
}

Value GptBlock::dropout(GraphBuilder& b, Primitive& drop, Value x, Value seeds) {
  return seeds.valid() ? drop(b, {x, seeds}) : x;
}

Value GptBlock::construct(GraphBuilder& b, Value x) {
  const Value seeds = training() && c_.dropout > 0.0f ? seeds_(b, data_) : Value{};
  const Value a = ln1_(b, {x, param(b, ln1_gamma_), param(b, ln1_beta_)});
  auto heads = [&](Primitive& lin, Parameter& w, Primitive& bias, Parameter& bv, Primitive& split, Primitive& t) {
    return t(b, {split(b, {bias(b, {lin(b, {a, param(b, w)}), param(b, bv)})})});  // (batch, heads, seq, head dim)
  };
  const Value q = heads(q_, wq_, q_bias_, bq_, q_heads_, q_t_);
  const Value k = heads(k_, wk_, k_bias_, bk_, k_heads_, k_t_);
  const Value v = heads(v_, wv_, v_bias_, bv_, v_heads_, v_t_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c_.hidden / c_.heads));
  const Value s = mask_(b, {scale_(b, {scores_(b, {q, k}), b.fill({1}, scale)})});
  const Value ctx = merge_(b, {merge_t_(b, {context_(b, {softmax_(b, {s}), v})})});  // (batch, seq, hidden)
  const Value attn = dropout(b, drop1_, proj_bias_(b, {proj_(b, {ctx, param(b, wo_)}), param(b, bo_)}), seeds);
  const Value h = res1_(b, {x, attn});
  const Value m = ln2_(b, {h, param(b, ln2_gamma_), param(b, ln2_beta_)});
  const Value up = gelu_(b, {fc1_bias_(b, {fc1_(b, {m, param(b, w1_)}), param(b, b1_)})});
  const Value down = dropout(b, drop2_, fc2_bias_(b, {fc2_(b, {up, param(b, w2_)}), param(b, b2_)}), seeds);
  return res2_(b, {h, down});
}

void GptBlock::shard(const GptParallel& p) {
  const Layout l({p.dp, p.tp}, {"dp", "tp"});
  const char* s = p.sp ? "tp" : "None";  // the sequence dim of the LayerNorm/dropout/residual regions
  const TensorLayout x = l("dp", s, "None");
  const TensorLayout whole = l("dp", "None", "None");    // gathered on the sequence: a column op's input
  const TensorLayout cols = l("dp", "None", "tp");       // a column op's output, a row op's input
  const TensorLayout heads4 = l("dp", "tp", "None", "None");  // (batch, heads, seq, head dim)
  const TensorLayout bshd = l("dp", "None", "tp", "None");    // (batch, seq, heads, head dim)
  const std::vector<TensorStrategy> to_x = {x};
  ln1_.shard({x, l("None"), l("None")});
  ln2_.shard({x, l("None"), l("None")});
  for (Primitive* lin : {&q_, &k_, &v_, &fc1_}) lin->shard({whole, l("tp", "None")});
  for (Primitive* bias : {&q_bias_, &k_bias_, &v_bias_, &fc1_bias_}) bias->shard({cols, l("tp")});
  for (Primitive* split : {&q_heads_, &k_heads_, &v_heads_}) split->shard({cols});
  for (Primitive* t : {&q_t_, &k_t_, &v_t_}) t->shard({bshd});
  scores_.shard({heads4, heads4});
  scale_.shard({heads4, l("None")});
  mask_.shard({heads4});
  softmax_.shard({heads4});
  context_.shard({heads4, heads4});
  merge_t_.shard({heads4});
  merge_.shard({bshd});
  gelu_.shard({cols});
  // Row-parallel: partial sums, AllReduced, or ReduceScattered onto the sequence under sp.
  proj_.shard({cols, l("None", "tp")}, p.sp ? to_x : std::vector<TensorStrategy>{});
  fc2_.shard({cols, l("None", "tp")}, p.sp ? to_x : std::vector<TensorStrategy>{});
  for (Primitive* bias : {&proj_bias_, &fc2_bias_}) bias->shard({x, l("None")});
  for (Primitive* drop : {&drop1_, &drop2_}) drop->shard({x, l("dp")});
  for (Primitive* res : {&res1_, &res2_}) res->shard({x, x});
  seeds_.shard(p.dp, p.tp);
}

void GptSeeds::shard(int64_t dp, int64_t tp) const {
  const Layout l({dp, tp}, {"dp", "tp"});
  column->shard({l("dp", "None")});
  flat->shard({l("dp", "None")});
}

GptEmbedding::GptEmbedding(const GptConfig& c)
    : c_(c),
      wte_(register_parameter("wte", {c.padded_vocab(), c.hidden}, "normal")),
      wpe_(register_parameter("wpe", {c.seq, c.hidden}, "normal")),
      ids_(register_primitive("ids", "StridedSlice", {{"begin", std::vector<int64_t>{0, 1}},
                                                      {"end", std::vector<int64_t>{kToEnd, c.seq + 1}}})),
      embed_(register_primitive("embed", "EmbeddingLookup")),
      pos_(register_primitive("pos", "Add")),
      drop0_(register_primitive("drop0", "Dropout", {{"p", double{c.dropout}}, {"salt", int64_t{0}}})) {
  seeds_ = {&register_primitive("seed_col", "StridedSlice", seed_column_attrs()),
            &register_primitive("seeds", "Reshape", {{"shape", Shape{-1}}})};
}

Value GptEmbedding::construct(GraphBuilder& b, Value data) {
  const Shape& in = b.shape(data);
  SF_ENFORCE(in.size() == 2 && in[1] == c_.seq + 1, ShapeError,
             "gpt: the input must be (batch, seq + 1) = (batch, {}): a dropout seed, then {} token ids; got {}",
             c_.seq + 1, c_.seq, fmt::join(in, "x"));
  Value x = embed_(b, {param(b, wte_), ids_(b, {data})});  // (batch, seq, hidden)
  x = pos_(b, {x, param(b, wpe_)});
  return training() && c_.dropout > 0.0f ? drop0_(b, {x, seeds_(b, data)}) : x;
}

void GptEmbedding::shard(const GptParallel& p) {
  const Layout l({p.dp, p.tp}, {"dp", "tp"});
  const char* s = p.sp ? "tp" : "None";
  const TensorLayout x = l("dp", s, "None");
  seeds_.shard(p.dp, p.tp);
  ids_.shard({l("dp", "None")});
  // Vocabulary-parallel: each rank looks up its rows; the partial sums are AllReduced, or
  // ReduceScattered onto the sequence under sp.
  embed_.shard({l("tp", "None"), l("dp", "None")}, {x});
  pos_.shard({x, l(s, "None")});
  drop0_.shard({x, l("dp")});
}

GptHead::GptHead(const GptConfig& c, Parameter wte)
    : wte_(std::move(wte)),
      lnf_gamma_(register_parameter("lnf_gamma", {c.hidden}, "ones")),
      lnf_beta_(register_parameter("lnf_beta", {c.hidden}, "zeros")),
      lnf_(register_primitive("lnf", "LayerNorm")),
      head_(register_primitive("head", "Linear")) {}

Value GptHead::construct(GraphBuilder& b, Value x) {
  x = lnf_(b, {x, param(b, lnf_gamma_), param(b, lnf_beta_)});
  return head_(b, {x, param(b, wte_)});  // tied: logits = x wte^T
}

void GptHead::shard(const GptParallel& p) {
  const Layout l({p.dp, p.tp}, {"dp", "tp"});
  lnf_.shard({l("dp", p.sp ? "tp" : "None", "None"), l("None"), l("None")});
  head_.shard({l("dp", "None", "None"), l("tp", "None")});  // logits split on the vocabulary
}

GptLossHead::GptLossHead(const GptConfig& c)
    : flat_logits_(register_primitive("flat_logits", "Reshape", {{"shape", Shape{-1, c.padded_vocab()}}})),
      flat_labels_(register_primitive("flat_labels", "Reshape", {{"shape", Shape{-1}}})),
      xent_(register_primitive("xent", "SoftmaxCrossEntropy", {{"classes", c.vocab}})) {}

Value GptLossHead::construct(GraphBuilder& b, Value logits) {
  return xent_(b, {flat_logits_(b, {logits}), flat_labels_(b, {labels_})});
}

void GptLossHead::shard(const GptParallel& p) {
  const Layout l({p.dp, p.tp}, {"dp", "tp"});
  flat_logits_.shard({l("dp", "None", "tp")});
  flat_labels_.shard({l("dp", "None")});
  xent_.shard({l("dp", "tp"), l("dp")});  // max and sum reduced across the vocabulary shards
}

Gpt::Gpt(const GptConfig& c) : c_((c.check(), c)) {
  embedding_ = register_cell("embedding", std::make_shared<GptEmbedding>(c));
  for (int64_t i = 0; i < c.layers; ++i)
    blocks_.push_back(register_cell(fmt::format("block{}", i), std::make_shared<GptBlock>(c, i)));
  head_ = register_cell("head", std::make_shared<GptHead>(c, embedding_->wte()));
  loss_ = register_cell("loss", std::make_shared<GptLossHead>(c));
}

Value Gpt::construct(GraphBuilder& b, Value data) {
  Value x = (*embedding_)(b, data);
  for (const auto& block : blocks_) {
    block->data_ = data;
    x = (*block)(b, x);
  }
  return (*head_)(b, x);
}

Value Gpt::loss(GraphBuilder& b, Value logits, Value labels) {
  loss_->labels_ = labels;
  return (*loss_)(b, logits);
}

void Gpt::shard(const GptParallel& p) {
  p.check(c_);
  embedding_->shard(p);
  for (const auto& block : blocks_) block->shard(p);
  head_->shard(p);
  loss_->shard(p);
}

void Gpt::shard_inputs(int64_t dp) {
  positive(dp, "dp");
  embedding_->ids_.shard({{dp, 1}});
  embedding_->seeds_.column->shard({{dp, 1}});
  for (const auto& block : blocks_) block->seeds_.column->shard({{dp, 1}});
}

void Gpt::set_stages(int stages) {
  const int64_t cells = c_.layers + 2;
  SF_ENFORCE(stages >= 1 && stages <= cells, InvalidArgument,
             "gpt: {} pipeline stages for {} layers: each stage needs a cell of its own (the embedding, a block or "
             "the head), so at most layers + 2 = {}",
             stages, c_.layers, cells);
  embedding_->set_pipeline_stage(0);
  head_->set_pipeline_stage(stages - 1);
  loss_->set_pipeline_stage(stages - 1);
  if (stages > 1) embedding_->wte().add_pipeline_stage(stages - 1);
  // The blocks over the stages, the embedding's and head's stages counting one cell each.
  const int64_t per = cells / stages, extra = cells % stages;
  int64_t cell = 0;
  for (int s = 0; s < stages; ++s)
    for (int64_t k = 0; k < per + (s < extra ? 1 : 0); ++k, ++cell)
      if (cell >= 1 && cell <= c_.layers) blocks_[static_cast<size_t>(cell - 1)]->set_pipeline_stage(s);
}

}  // namespace sf::models
