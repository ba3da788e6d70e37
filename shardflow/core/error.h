/// @file
/// Typed errors. Every message names what is wrong (the file, op, tensor or value and the
/// rule broken) in one line; the throwing site's file:line is kept apart in where().
/// Thrown inside a process; at an actor boundary they are carried to the caller as-is.
/// Values in messages are summarised (core/brief.h); as a last guard a message is made one
/// line (control characters escaped, so a name with newlines cannot split it) and cut to
/// kMaxErrorChars, so no input can make an error line megabytes long.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace sf {

/// The longest message an sf::Error carries, in bytes. Sites aim at about 300 (core/brief.h);
/// this guard catches what they miss.
inline constexpr size_t kMaxErrorChars = 400;

namespace detail {
// `msg` on one line: "\n", "\r" and "\xNN" for the control characters (tab kept); other
// bytes, UTF-8 included, untouched.
inline std::string one_line(const std::string& msg) {
  std::string out;
  out.reserve(msg.size());
  for (char c : msg) {
    const auto b = static_cast<unsigned char>(c);
    if (b == '\n') out += "\\n";
    else if (b == '\r') out += "\\r";
    else if ((b < 0x20 && b != '\t') || b == 0x7F) out += fmt::format("\\x{:02x}", b);
    else out += c;
  }
  return out;
}

// Steps `i` back to the start of the UTF-8 sequence it is inside of.
inline size_t utf8_start(const std::string& s, size_t i) {
  while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

// `msg` on one line and at most kMaxErrorChars bytes. A longer one keeps its head (which
// names the input) and its tail (which usually states the rule) around "... (N bytes cut)
// ...", cutting neither inside a UTF-8 sequence.
inline std::string bounded_message(const std::string& msg) {
  std::string line = one_line(msg);
  if (line.size() <= kMaxErrorChars) return line;
  // " ... (N bytes cut) ... " with N up to 20 digits, and 3 bytes the tail may step back.
  constexpr size_t kMarkRoom = 48;
  constexpr size_t kTail = (kMaxErrorChars - kMarkRoom) / 3;
  constexpr size_t kHead = kMaxErrorChars - kMarkRoom - kTail;
  const size_t head = utf8_start(line, kHead);
  const size_t tail = utf8_start(line, line.size() - kTail);
  return fmt::format("{} ... ({} bytes cut) ... {}", line.substr(0, head), tail - head, line.substr(tail));
}
}  // namespace detail

/// The base of every shardflow error: a bounded one-line message and the throwing site.
class Error : public std::runtime_error {
 public:
  /// `msg` made one line and cut to kMaxErrorChars; `where` is the throwing site's file:line.
  explicit Error(const std::string& msg, std::string where = {})
      : std::runtime_error(detail::bounded_message(msg)), where_(std::move(where)) {}
  /// "file.cc:123" of the throwing site; empty if unknown.
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

/// A value, shape, dtype or option that breaks a stated rule.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// Tensor shapes or dtypes that an op cannot accept.
class ShapeError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// A file that is missing, unreadable or malformed.
class IoError : public Error {
 public:
  using Error::Error;
};

/// A name that is not registered (op, optimizer, initializer, parameter).
class NotFound : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// A peer rank that died or went silent.
class PeerLost : public Error {
 public:
  /// An error about `rank`, which was lost.
  PeerLost(int rank, const std::string& msg, std::string where = {})
      : Error(msg, std::move(where)), rank_(rank) {}
  /// The rank that was lost.
  int rank() const { return rank_; }

 private:
  int rank_;
};

}  // namespace sf

/// `x` as a string literal (the helper of SF_STRINGIFY).
#define SF_STRINGIFY_(x) #x
/// `x`, macro-expanded, as a string literal.
#define SF_STRINGIFY(x) SF_STRINGIFY_(x)
/// "file.cc:123" of the line it is written on, for Error::where().
#define SF_WHERE (__FILE__ ":" SF_STRINGIFY(__LINE__))

/// SF_THROW(InvalidArgument, "MatMul '{}': ...", name) throws sf::InvalidArgument.
#define SF_THROW(Type, ...) throw ::sf::Type(::fmt::format(__VA_ARGS__), SF_WHERE)

/// SF_ENFORCE(cond, Type, fmt, args...) throws Type(message) unless cond holds.
#define SF_ENFORCE(cond, Type, ...) \
  do {                              \
    if (!(cond)) {                  \
      SF_THROW(Type, __VA_ARGS__);  \
    }                               \
  } while (0)
