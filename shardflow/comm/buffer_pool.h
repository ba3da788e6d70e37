// BufferPool: the process-wide pool of communication buffers. Collectives take their message
// buffers from here instead of allocating per chunk, because first-touch page faults cost far
// more than the copies on these machines; a released buffer is reused by the next acquire of
// the same dtype and size class (a power of two of bytes). Buffers of 64 KiB to 1 MiB are cut
// from 2 MiB blocks of huge pages (see kCarveMinBytes).
//
// Reader references: acquire() returns a buffer holding one reference. retain() adds
// references before one buffer is sent to several readers; every holder calls release()
// once, and the buffer becomes free again when the count reaches zero (see the ownership
// contract in comm/transport.h). release() of a tensor that did not come from the pool
// (a user's tensor, a zero-element buffer) does nothing, so a receiver may release whatever
// it received.
//
// Threading: every member function is thread-safe (one mutex; callers hold it for a map
// lookup, never while copying elements).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::comm {

class BufferPool {
 public:
  // The pool shared by every transport and collective of this process.
  static BufferPool& global();

  // A 1-D tensor of `numel` elements (contents undefined) with one reader reference.
  Tensor acquire(DType dtype, int64_t numel);
  // Adds `extra` reader references to a pooled buffer (no-op for others).
  void retain(const Tensor& t, int extra);
  // Drops one reader reference; at zero the buffer returns to the free list.
  void release(const Tensor& t);
  // For a received tensor kept past the call that read it (an elastic run's state, which may be
  // sent on later: a send passes the sender's reference to the message, which releases it, and
  // the buffer would be reused under the keeper): returns a tensor that is the caller's alone.
  // Where the caller holds the buffer's only reference the pool forgets the buffer and returns
  // `t` itself (its storage lives as long as its tensors); where others hold references too it
  // releases the caller's and returns a copy; a tensor the pool does not know comes back as is.
  Tensor adopt(const Tensor& t);

  // Readies a free f32 buffer for a message of each of these byte sizes, its pages touched, up
  // to kMaxFreeBytes in all: a later receive of that size takes it and costs no first touch of
  // fresh memory. The first touch is what a fresh process's first large receive spends most of
  // its time on (a joining rank's training state, comm/zmq/door.h): on these virtual machines
  // from 0.2 to 1.5 GB/s, against 2.5 GB/s for the transport's bytes.
  void prefault(const std::vector<size_t>& message_bytes);

  // Bytes held in free lists, and buffers handed out and not yet released (for tests).
  size_t free_bytes() const;
  size_t outstanding() const;

  // Free buffers beyond this many bytes are returned to the system instead of kept.
  static constexpr size_t kMaxFreeBytes = size_t{512} << 20;
  // Classes from kCarveMinBytes up to half of kCarveBlockBytes are cut from blocks of
  // kCarveBlockBytes, which the storage cache maps as transparent huge pages
  // (core/storage_cache.h); smaller blocks would be ordinary pages. The kernel copies a
  // received message into huge pages about twice as fast: a 1 MiB ping-pong over the zmq
  // transport's TCP lanes took 444-484 µs into 4 KiB pages and 229-248 µs into huge pages,
  // 512 KiB 224 against 84 µs, 128 KiB 73 against 58 µs (docs/zmq_transport.md).
  static constexpr size_t kCarveMinBytes = size_t{64} << 10;
  static constexpr size_t kCarveBlockBytes = size_t{2} << 20;

 private:
  struct Outstanding {
    Tensor full;  // the whole buffer of its size class
    int refs;
  };
  static size_t size_class(size_t nbytes);
  // A new buffer of class `cls` (carving a block for the middle classes).
  Tensor fresh(size_t cls, DType dtype);

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<Tensor>> free_;  // key: class bytes | dtype
  std::unordered_map<const void*, Outstanding> out_;        // key: data pointer
  size_t free_bytes_ = 0;
};

}  // namespace sf::comm
