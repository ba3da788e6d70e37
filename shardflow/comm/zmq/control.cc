#include <shardflow/comm/zmq/control.h>

#include <algorithm>
#include <vector>

#include <shardflow/core/error.h>

namespace sf::comm::zmq {

bool send_header(Socket& s, const Header& h, const std::string* rid, bool more) {
  const std::vector<uint8_t> bytes = encode_header(h);
  if (rid) {
    Message id(rid->data(), rid->size());
    if (!send_frame(s, id, true)) return false;
  }
  Message m(bytes.data(), bytes.size());
  return send_frame(s, m, more);
}

bool wait_readable(Socket& s, std::chrono::steady_clock::time_point deadline, std::string_view who) {
  using std::chrono::milliseconds;
  for (;;) {
    const long left =
        std::max<long>(0, std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    zmq_pollitem_t item{s.get(), 0, ZMQ_POLLIN, 0};
    const int rc = zmq_poll(&item, 1, left);
    if (rc > 0) return true;
    if (rc < 0 && zmq_errno() != EINTR) SF_THROW(Error, "{}: zmq_poll failed: {}", who, zmq_strerror(zmq_errno()));
    if (left == 0) return false;
  }
}

}  // namespace sf::comm::zmq
