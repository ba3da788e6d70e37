#include <shardflow/comm/zmq/socket.h>

#include <cerrno>
#include <cstring>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

namespace {

[[noreturn]] void fail(const char* call, const std::string& what) {
  SF_THROW(Error, "zmq: {} {} failed: {}", call, what, zmq_strerror(zmq_errno()));
}

void release_tensor(void* /*data*/, void* hint) {
  auto* t = static_cast<Tensor*>(hint);
  BufferPool::global().release(*t);
  delete t;
}

}  // namespace

Context::Context() : ctx_(zmq_ctx_new()) {
  if (!ctx_) fail("zmq_ctx_new", "");
}

Context::~Context() {
  while (zmq_ctx_term(ctx_) != 0 && zmq_errno() == EINTR) {
  }
}

Socket::Socket(Context& ctx, int type) : s_(zmq_socket(ctx.get(), type)) {
  if (!s_) fail("zmq_socket", std::to_string(type));
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

void Socket::set(int option, int value) {
  if (zmq_setsockopt(s_, option, &value, sizeof value) != 0) fail("zmq_setsockopt", std::to_string(option));
}

void Socket::set(int option, const std::string& value) {
  if (zmq_setsockopt(s_, option, value.data(), value.size()) != 0) fail("zmq_setsockopt", std::to_string(option));
}

void Socket::bind(const std::string& endpoint) {
  if (zmq_bind(s_, endpoint.c_str()) != 0) fail("zmq_bind", endpoint);
}

void Socket::connect(const std::string& endpoint) {
  if (zmq_connect(s_, endpoint.c_str()) != 0) fail("zmq_connect", endpoint);
}

int Socket::fd() const {
  int fd = -1;
  size_t n = sizeof fd;
  if (zmq_getsockopt(s_, ZMQ_FD, &fd, &n) != 0) fail("zmq_getsockopt", "ZMQ_FD");
  return fd;
}

std::string Socket::last_endpoint() const {
  char buf[1024];
  size_t n = sizeof buf;
  if (zmq_getsockopt(s_, ZMQ_LAST_ENDPOINT, buf, &n) != 0) fail("zmq_getsockopt", "ZMQ_LAST_ENDPOINT");
  return std::string(buf, n > 0 && buf[n - 1] == '\0' ? n - 1 : n);
}

void Socket::close() {
  if (s_) zmq_close(s_);
  s_ = nullptr;
}

Message::Message(size_t n) {
  if (zmq_msg_init_size(&m_, n) != 0) fail("zmq_msg_init_size", std::to_string(n));
}

Message::Message(const void* data, size_t n) : Message(n) {
  if (n) std::memcpy(zmq_msg_data(&m_), data, n);
}

Message::Message(Message&& o) noexcept {
  zmq_msg_init(&m_);
  zmq_msg_move(&m_, &o.m_);
}

Message Message::borrowing(const Tensor& t) {
  if (t.nbytes() == 0) {
    BufferPool::global().release(t);
    return Message(size_t{0});
  }
  Message m;
  auto* hold = new Tensor(t);
  if (zmq_msg_init_data(&m.m_, const_cast<void*>(hold->raw()), hold->nbytes(), release_tensor, hold) != 0) {
    delete hold;
    fail("zmq_msg_init_data", std::to_string(t.nbytes()));
  }
  return m;
}

std::string Message::peer_address() const {
  const char* a = zmq_msg_gets(const_cast<zmq_msg_t*>(&m_), "Peer-Address");
  return a ? std::string(a) : std::string();
}

std::string Message::peer_description() const {
  const std::string a = peer_address();
  if (a.empty()) return "an unknown address";
  if (a[0] == ':') return "local process (uid:gid:pid " + a.substr(1) + ")";  // ipc: SO_PEERCRED
  return a;
}

bool send_frame(Socket& s, Message& m, bool more) {
  if (zmq_msg_send(m.get(), s.get(), ZMQ_DONTWAIT | (more ? ZMQ_SNDMORE : 0)) >= 0) return true;
  if (zmq_errno() == EAGAIN || zmq_errno() == EHOSTUNREACH) return false;
  fail("zmq_msg_send", "");
}

size_t recv_parts(Socket& s, std::vector<Message>& parts, size_t max_parts) {
  parts.clear();
  size_t count = 0;
  for (;;) {
    Message m;
    if (zmq_msg_recv(m.get(), s.get(), count == 0 ? ZMQ_DONTWAIT : 0) < 0) {
      if (count == 0 && (zmq_errno() == EAGAIN || zmq_errno() == EINTR)) return 0;
      fail("zmq_msg_recv", "");
    }
    ++count;
    const bool more = zmq_msg_more(m.get());
    if (parts.size() < max_parts) parts.push_back(std::move(m));
    if (!more) return count;
  }
}

}  // namespace sf::comm::zmq
