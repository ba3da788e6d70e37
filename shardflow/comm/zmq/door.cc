#include <shardflow/comm/zmq/door.h>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/control.h>
#include <shardflow/comm/zmq/header.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Labels are the launcher's rank numbers; anything in this range passes the header checks.
constexpr int kMaxLabel = 1 << 20;
// An admission: generation, rank, size, then `size` labels, then each address's length and
// characters; a few KiB at most.
constexpr uint64_t kMaxAdmissionBytes = 1 << 20;
constexpr int kDoorRank = 0;
constexpr Tag kAdmissionTag = 1;
// The sizes a joiner readies buffers for (JoinDoor::expect): KiB each, at most kMaxExpected of
// them. A buffer's size class is a power of two of bytes, so rounding up to whole KiB changes
// none from 1 KiB on; a smaller message gets a larger buffer than it needs, which costs nothing.
constexpr Tag kExpectedTag = 2;
constexpr size_t kMaxExpected = size_t{1} << 14;

// A kData message of i32 `payload` under `tag` to the connection `rid`.
bool send_i32(Socket& socket, const std::string& rid, Tag tag, const std::vector<int32_t>& payload) {
  Header h;
  h.kind = Kind::kData;
  h.from = kDoorRank;
  h.tag = tag;
  h.dtype = DType::kI32;
  h.shape = {static_cast<int64_t>(payload.size())};
  h.nbytes = payload.size() * sizeof(int32_t);
  if (!send_header(socket, h, &rid, true)) return false;  // the payload frame follows
  Message body(payload.data(), h.nbytes);
  return send_frame(socket, body, false);
}

std::vector<int32_t> encode_admission(uint32_t generation, int rank, int size, const std::vector<int>& labels,
                                      const std::vector<std::string>& addresses) {
  std::vector<int32_t> v{static_cast<int32_t>(generation), rank, size};
  v.insert(v.end(), labels.begin(), labels.end());
  for (int r = 0; r < size; ++r) {
    const std::string& a = r == rank ? std::string() : addresses.at(static_cast<size_t>(r));
    v.push_back(static_cast<int32_t>(a.size()));
    v.insert(v.end(), a.begin(), a.end());
  }
  return v;
}

DoorAdmission decode_admission(const int32_t* v, size_t n, const std::string& door) {
  auto bad = [&] { SF_THROW(Error, "zmq: the door at {} sent a malformed admission", door); };
  if (n < 3) bad();
  DoorAdmission a;
  a.generation = static_cast<uint32_t>(v[0]);
  a.rank = v[1];
  a.size = v[2];
  if (v[0] < 1 || a.size < 1 || a.rank < 0 || a.rank >= a.size || n < 3 + static_cast<size_t>(a.size)) bad();
  size_t i = 3;
  for (int r = 0; r < a.size; ++r) a.labels.push_back(v[i++]);
  for (int r = 0; r < a.size; ++r) {
    if (i >= n || v[i] < 0 || static_cast<size_t>(v[i]) > n - i - 1) bad();
    const size_t len = static_cast<size_t>(v[i++]);
    std::string s;
    for (size_t k = 0; k < len; ++k) s.push_back(static_cast<char>(v[i++]));
    a.addresses.push_back(std::move(s));
  }
  if (i != n) bad();
  return a;
}

class ZmqDoor final : public JoinDoor {
 public:
  ZmqDoor(const std::string& bind_to, const std::string& job_secret) : key_(job_secret), socket_(ctx_, ZMQ_ROUTER) {
    socket_.set(ZMQ_LINGER, 200);  // refusals leave at the door's close; nobody waits longer
    socket_.set(ZMQ_ROUTER_MANDATORY, 1);
    const int64_t max_frame = 1 << 16;
    zmq_setsockopt(socket_.get(), ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame);
    socket_.bind(bind_to);
    address_ = socket_.last_endpoint();
  }

  ~ZmqDoor() override {
    for (auto& [rid, c] : conns_)
      if (c.asked) send_close(rid);
    socket_.close();
    if (address_.rfind("ipc://", 0) == 0) ::unlink(address_.c_str() + 6);  // libzmq 4.3 leaves the file behind
  }

  const std::string& address() const override { return address_; }

  std::vector<JoinRequest> poll() override {
    read_pending(nullptr);
    std::vector<JoinRequest> out;
    out.swap(fresh_);
    return out;
  }

  std::string admit(const JoinRequest& request, int rank, int size, uint32_t generation,
                    const std::vector<std::string>& addresses, const std::vector<int>& labels,
                    milliseconds timeout) override {
    const std::string* rid = rid_of(request);
    if (!rid) return "";
    const std::string id = *rid;
    if (!send_i32(socket_, id, kAdmissionTag, encode_admission(generation, rank, size, labels, addresses)))
      return forget(id);
    conns_[id].admitted = true;
    std::string answer;
    const auto deadline = Clock::now() + timeout;
    while (answer.empty() && Clock::now() < deadline) {
      if (!wait_readable(socket_, deadline, "zmq door")) break;
      read_pending([&](const std::string& from, const Header& reply) {
        if (from == id) answer = reply.endpoints[0];
      });
    }
    forget(id);
    return answer;
  }

  void expect(const std::vector<uint64_t>& message_bytes) override {
    expected_.clear();
    for (uint64_t n : message_bytes) {
      if (expected_.size() == kMaxExpected) break;
      expected_.push_back(static_cast<int32_t>(std::min<uint64_t>((n + 1023) / 1024, INT32_MAX)));
    }
  }

  void refuse(const JoinRequest& request) override {
    if (const std::string* rid = rid_of(request)) {
      send_close(*rid);
      forget(*rid);
    }
  }

 private:
  struct Conn {
    std::unique_ptr<ServerHandshake> hs;
    uint64_t id = 0;
    int label = -1;
    bool proven = false, asked = false, admitted = false, refused = false;
  };

  // Reads what is pending (without waiting): advances handshakes, keeps new requests for the
  // next poll() (one may come while another joiner is admitted), and passes an admitted
  // joiner's kJoin answer to `on_answer`.
  template <class OnAnswer>
  void read_pending(OnAnswer on_answer) {
    std::vector<Message> parts;
    const HeaderLimits limits{kMaxLabel, 0};
    while (size_t count = recv_parts(socket_, parts, 2)) {
      const std::string rid(reinterpret_cast<const char*>(parts[0].data()), parts[0].size());
      Conn& c = conns_[rid];
      if (!c.id) c.id = ++next_id_;
      if (c.refused) continue;
      auto refuse_conn = [&](const std::string& why) {
        c.refused = true;
        std::fprintf(stderr, "shardflow zmq: the door at %s refused a connection from %s: %s\n", address_.c_str(),
                     count >= 2 ? parts[1].peer_description().c_str() : "an unknown address", why.c_str());
      };
      if (count != 2) {
        refuse_conn("wrong number of frames");
        continue;
      }
      Header h;
      try {
        h = decode_header(parts[1].data(), parts[1].size(), limits);
      } catch (const MalformedFrame& e) {
        refuse_conn(e.what());
        continue;
      }
      if (!c.proven) {
        if (h.kind == Kind::kHello && !c.hs) {
          c.hs = std::make_unique<ServerHandshake>(key_, Purpose::kDoor, kDoorRank);
          send_header(socket_, c.hs->challenge(h), &rid);
        } else if (h.kind == Kind::kProof && c.hs && c.hs->accept(h)) {
          c.proven = true;
          c.label = c.hs->client_rank();
          send_i32(socket_, rid, kExpectedTag, expected_);  // the joiner asks once it has readied them
        } else {
          refuse_conn("a message that does not prove the job secret");
        }
        continue;
      }
      if (h.kind != Kind::kJoin || h.from != c.label) {
        refuse_conn("expected a request to join");
        continue;
      }
      if (c.admitted) {
        if constexpr (!std::is_same_v<OnAnswer, std::nullptr_t>) on_answer(rid, h);
        continue;
      }
      if (c.asked) continue;  // asked twice: one request
      c.asked = true;
      fresh_.push_back(JoinRequest{c.label, c.id});
    }
  }

  const std::string* rid_of(const JoinRequest& request) const {
    for (const auto& [rid, c] : conns_)
      if (c.id == request.id && c.asked && !c.refused) return &rid;
    return nullptr;
  }

  std::string forget(const std::string& rid) {
    conns_[rid].refused = true;  // later messages of this connection are ignored
    conns_[rid].asked = false;
    return "";
  }

  void send_close(const std::string& rid) {
    Header h;
    h.kind = Kind::kClose;
    h.from = kDoorRank;
    send_header(socket_, h, &rid);
  }

  Context ctx_;
  JobKey key_;
  Socket socket_;
  std::string address_;
  std::unordered_map<std::string, Conn> conns_;
  std::vector<JoinRequest> fresh_;  // asked since the last poll()
  std::vector<int32_t> expected_;   // KiB, told to each joiner once it proves the secret
  uint64_t next_id_ = 0;
};

}  // namespace

std::unique_ptr<JoinDoor> open_zmq_door(const std::string& bind_to, const std::string& job_secret) {
  return std::make_unique<ZmqDoor>(bind_to, job_secret);
}

DoorClient::DoorClient(const std::string& door, const std::string& job_secret, int label)
    : socket_(ctx_, ZMQ_DEALER), door_(door), key_(job_secret), label_(label) {
  SF_ENFORCE(label >= 0 && label < kMaxLabel, InvalidArgument, "zmq: a joining rank's label {} is outside 0 .. {}",
             label, kMaxLabel - 1);
  socket_.set(ZMQ_LINGER, 2000);  // the answer must leave before the client goes
  const int64_t max_frame = static_cast<int64_t>(kMaxAdmissionBytes);
  zmq_setsockopt(socket_.get(), ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame);
  socket_.connect(door);
}

DoorAdmission DoorClient::wait_admission(Clock::time_point deadline) {
  ClientHandshake hs(key_, Purpose::kDoor, label_, kDoorRank);
  send_header(socket_, hs.hello(), nullptr);
  const HeaderLimits limits{1, kMaxAdmissionBytes};
  std::vector<Message> parts;
  bool proven = false, asked = false;
  for (;;) {
    if (!wait_readable(socket_, deadline, "zmq door")) {
      socket_.set(ZMQ_LINGER, 0);
      SF_THROW(Error, "elastic: the door at {} did not {} in time (the job may have ended, or its world changed)",
               door_, proven ? "admit this rank" : "answer");
    }
    while (size_t count = recv_parts(socket_, parts, 2)) {
      Header h;
      try {
        h = decode_header(parts[0].data(), parts[0].size(), limits);
      } catch (const MalformedFrame& e) {
        std::fprintf(stderr, "shardflow zmq: ignored a message from the door at %s: %s\n", door_.c_str(), e.what());
        continue;
      }
      if (h.kind == Kind::kClose)
        SF_THROW(Error, "elastic: the door at {} refused this rank (the job ended, or its world changed first)", door_);
      if (!proven && h.kind == Kind::kChallenge && count == 1) {
        send_header(socket_, hs.answer(h), nullptr);  // throws if the door does not hold the secret
        proven = true;
      } else if (proven && h.kind == Kind::kData && h.dtype == DType::kI32 && count == 2 &&
                 parts[1].size() == h.nbytes) {
        std::vector<int32_t> v(h.nbytes / sizeof(int32_t));  // copied: a short frame's bytes may be unaligned
        if (!v.empty()) std::memcpy(v.data(), parts[1].data(), v.size() * sizeof(int32_t));
        if (h.tag == kAdmissionTag) return decode_admission(v.data(), v.size(), door_);
        if (h.tag == kExpectedTag && !asked) {
          // Ready for the first messages, then ask: the members train on meanwhile, and the
          // bytes of the state arrive at the transport's speed, not the first touch's.
          prefault(v);
          Header ask;
          ask.kind = Kind::kJoin;
          ask.from = label_;
          ask.size = 1;
          ask.endpoints = {""};
          send_header(socket_, ask, nullptr);
          asked = true;
        }
      }
    }
  }
}

void DoorClient::prefault(const std::vector<int32_t>& kib) {
  if (kib.size() > kMaxExpected) return;  // a hint, and not a sane one
  std::vector<size_t> bytes;
  for (int32_t k : kib)
    if (k > 0) bytes.push_back(static_cast<size_t>(k) * 1024);
  BufferPool::global().prefault(bytes);
}

void DoorClient::answer(const std::string& address) {
  Header h;
  h.kind = Kind::kJoin;
  h.from = label_;
  h.size = 1;
  h.endpoints = {address};
  SF_ENFORCE(send_header(socket_, h, nullptr), Error, "elastic: the door at {} is gone", door_);
}

}  // namespace sf::comm::zmq
