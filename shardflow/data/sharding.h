// Which rows of a source each shard (rank) reads, and gathering those rows.
//
// The semantics are MindSpore's DistributedSampler with shuffle=False: with n shards, shard k
// reads rows k, k+n, k+2n, ... (interleaved, not contiguous blocks). When N is not a multiple
// of n, every shard still gets ceil(N/n) rows: the row sequence wraps around to row 0, so the
// last shards repeat the first rows of the set. Equal shard sizes keep data-parallel ranks in
// lockstep (the same number of steps per epoch); the cost is that up to n-1 rows are seen
// twice per epoch. Example, N = 10, n = 3: shard 0 = {0,3,6,9}, shard 1 = {1,4,7,0},
// shard 2 = {2,5,8,1}. Without padding the shards are disjoint and their union is every row.
//
// Interleaving also makes the global batch of n ranks with per-rank batch b equal to the
// 1-device batch of n*b rows (rows n*b*s ... n*b*(s+1)-1 at step s), which is what lets a
// data-parallel run be compared step by step with a 1-device run.
// Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::dataset {

// Throws InvalidArgument naming `who` and the values unless num_shards >= 1 and
// 0 <= shard_id < num_shards.
void check_shard_args(const std::string& who, int num_shards, int shard_id);

// Number of rows each shard reads: ceil(num_rows / num_shards) (0 for an empty source).
int64_t shard_size(int64_t num_rows, int num_shards);

// The source rows of shard `shard_id`, in reading order (see the header comment).
std::vector<int64_t> shard_indices(int64_t num_rows, int num_shards, int shard_id);

// A new tensor holding rows `index` of `src` (dim 0), in that order.
Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& index);

// Copies rows index[0..count) of `src` into the first `count` rows of `dst`, which must have
// src's dtype and row shape. Allocates nothing: used by iterators on reused buffers.
void gather_rows_into(const Tensor& src, const int64_t* index, int64_t count, Tensor& dst);

}  // namespace sf::dataset
