#include "tools/sfrun/hostfile.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::sfrun {

namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

int parse_slots(const std::string& v, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  const long k = std::strtol(v.c_str(), &end, 10);
  SF_ENFORCE(!v.empty() && *end == '\0' && errno == 0 && k >= 1 && k <= 4096, InvalidArgument,
             "{}: slots={} is not a whole number in 1..4096", where, brief_text(v, 40));
  return static_cast<int>(k);
}

}  // namespace

std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string& file) {
  // Every piece of the file in a message is brief: a 1 MB line must not become a 1 MB error.
  const std::string name = brief_text(file, 160);
  std::vector<HostEntry> hosts;
  std::set<std::string> seen;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    SF_ENFORCE(number <= kMaxHostfileLines, InvalidArgument, "{}: more than {} lines", name, kMaxHostfileLines);
    const std::string where = name + ":" + std::to_string(number);
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto words = words_of(line);
    if (words.empty()) continue;
    HostEntry h;
    h.host = words[0];
    h.line = number;
    SF_ENFORCE(h.host.find('=') == std::string::npos, InvalidArgument,
               "{}: '{}' is not a host name; a line reads `host [slots=K] [addr=A]`", where, brief_text(h.host, 60));
    for (size_t i = 1; i < words.size(); ++i) {
      const auto eq = words[i].find('=');
      SF_ENFORCE(eq != std::string::npos, InvalidArgument,
                 "{}: '{}' is not key=value; a line reads `host [slots=K] [addr=A]`", where,
                 brief_text(words[i], 60));
      const std::string key = words[i].substr(0, eq), value = words[i].substr(eq + 1);
      if (key == "slots") {
        h.slots = parse_slots(value, where);
      } else if (key == "addr") {
        SF_ENFORCE(!value.empty(), InvalidArgument, "{}: addr= needs an address", where);
        h.addr = value;
      } else {
        SF_THROW(InvalidArgument, "{}: unknown key '{}'; a line reads `host [slots=K] [addr=A]`", where,
                 brief_text(key, 60));
      }
    }
    SF_ENFORCE(seen.insert(h.host).second, InvalidArgument, "{}: host '{}' is listed twice", where, brief_text(h.host, 60));
    hosts.push_back(h);
  }
  SF_ENFORCE(!hosts.empty(), InvalidArgument, "{}: names no host", name);
  return hosts;
}

std::vector<HostEntry> read_hostfile(const std::string& path) {
  // What is not a regular file (/dev/zero, a fifo, a directory) and a file over the limit are
  // refused before a byte is read; reading stops at the limit too, should the file grow.
  const std::string name = brief_text(path, 160);
  struct stat st {};
  SF_ENFORCE(::stat(path.c_str(), &st) == 0, IoError, "hostfile {}: cannot read it: {}", name, std::strerror(errno));
  SF_ENFORCE(S_ISREG(st.st_mode), IoError, "hostfile {}: cannot read it: not a regular file", name);
  SF_ENFORCE(static_cast<uint64_t>(st.st_size) <= kMaxHostfileBytes, IoError,
             "hostfile {}: {} bytes, more than the {} allowed", name, st.st_size, kMaxHostfileBytes);
  std::ifstream in(path, std::ios::binary);
  SF_ENFORCE(in, IoError, "hostfile {}: cannot read it: {}", name, std::strerror(errno));
  std::string text(kMaxHostfileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  SF_ENFORCE(!in.bad(), IoError, "hostfile {}: reading it failed", name);
  text.resize(static_cast<size_t>(in.gcount()));
  SF_ENFORCE(text.size() <= kMaxHostfileBytes, IoError, "hostfile {}: more than the {} bytes allowed", name,
             kMaxHostfileBytes);
  return parse_hostfile(text, path);
}

}  // namespace sf::sfrun
