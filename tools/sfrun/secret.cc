#include "tools/sfrun/secret.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <shardflow/core/error.h>

namespace sf::sfrun {

std::string make_job_secret() {
  unsigned char bytes[32];
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  SF_ENFORCE(fd >= 0, IoError, "cannot open /dev/urandom for the job secret: {}", std::strerror(errno));
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::read(fd, bytes + got, sizeof(bytes) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  SF_ENFORCE(got == sizeof(bytes), IoError, "cannot read the job secret from /dev/urandom");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace sf::sfrun
