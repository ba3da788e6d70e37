// RAII over libzmq's C API for the zmq backend: a context, sockets and messages, with every
// libzmq error turned into sf::Error naming the call. Also the zero-copy payload frame,
// which borrows a tensor's bytes and hands its pooled reference back once libzmq is done.
//
// Threading: libzmq's rules. A Context may be shared by threads; a Socket and a Message
// belong to one thread at a time (a socket may move to another thread across a full memory
// barrier, e.g. the start of that thread).
#pragma once

#include <zmq.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::comm::zmq {

class Context {
 public:
  Context();
  ~Context();  // zmq_ctx_term: waits for every socket's linger
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void* get() const { return ctx_; }

 private:
  void* ctx_;
};

class Socket {
 public:
  Socket() = default;
  Socket(Context& ctx, int type);
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  void* get() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }
  void set(int option, int value);
  void set(int option, const std::string& value);
  void bind(const std::string& endpoint);
  void connect(const std::string& endpoint);
  // ZMQ_FD: readable when commands reach the socket; after it fires, receive until EAGAIN.
  int fd() const;
  // The endpoint bound last, with the ephemeral port or path filled in.
  std::string last_endpoint() const;
  void close();

 private:
  void* s_ = nullptr;
};

class Message {
 public:
  Message() { zmq_msg_init(&m_); }
  explicit Message(size_t n);
  Message(const void* data, size_t n);  // a copy of data[0..n)
  ~Message() { zmq_msg_close(&m_); }
  Message(Message&& o) noexcept;
  Message& operator=(Message&&) = delete;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  // A frame that borrows t's bytes; one pooled reference of t is handed back (released)
  // when libzmq frees the frame, after its bytes have left (comm/transport.h).
  static Message borrowing(const Tensor& t);

  zmq_msg_t* get() { return &m_; }
  const uint8_t* data() const { return static_cast<const uint8_t*>(zmq_msg_data(const_cast<zmq_msg_t*>(&m_))); }
  size_t size() const { return zmq_msg_size(const_cast<zmq_msg_t*>(&m_)); }
  // libzmq's "Peer-Address" of the connection a received frame came from ("" if unknown).
  std::string peer_address() const;
  // peer_address() for a log line: "127.0.0.1", "local process (uid:gid:pid 0:0:42)" for ipc,
  // "an unknown address" where libzmq gave none.
  std::string peer_description() const;

 private:
  zmq_msg_t m_;
};

// Sends one frame without waiting; false if libzmq would block (no peer to send to).
bool send_frame(Socket& s, Message& m, bool more);
// Receives one whole multipart message without waiting into `parts` (cleared first), keeping
// at most `max_parts` frames and discarding the rest; returns the total frame count, or 0 if
// nothing was pending.
size_t recv_parts(Socket& s, std::vector<Message>& parts, size_t max_parts);

}  // namespace sf::comm::zmq
