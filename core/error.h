// Typed errors. Every message names what is wrong (the file, op, tensor or value and the
// rule broken) in one line; the throwing site's file:line is kept apart in where().
// Thrown inside a process; at an actor boundary they are carried to the caller as-is.
// Values in messages are summarised (core/brief.h); as a last guard a message is cut at
// kMaxErrorChars, so no input can make an error line megabytes long.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace sf {

inline constexpr size_t kMaxErrorChars = 1000;

namespace detail {
// `msg`, or its first kMaxErrorChars characters (not splitting a UTF-8 sequence) and a count.
inline std::string bounded_message(const std::string& msg) {
  if (msg.size() <= kMaxErrorChars) return msg;
  size_t cut = kMaxErrorChars;
  while (cut > 0 && (static_cast<unsigned char>(msg[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} more characters)", msg.substr(0, cut), msg.size() - cut);
}
}  // namespace detail

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, std::string where = {})
      : std::runtime_error(detail::bounded_message(msg)), where_(std::move(where)) {}
  // "file.cc:123" of the throwing site; empty if unknown.
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

// A value, shape, dtype or option that breaks a stated rule.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Tensor shapes or dtypes that an op cannot accept.
class ShapeError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A file that is missing, unreadable or malformed.
class IoError : public Error {
 public:
  using Error::Error;
};

// A name that is not registered (op, optimizer, initializer, parameter).
class NotFound : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A peer rank that died or went silent.
class PeerLost : public Error {
 public:
  PeerLost(int rank, const std::string& msg, std::string where = {})
      : Error(msg, std::move(where)), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

}  // namespace sf

#define SF_STRINGIFY_(x) #x
#define SF_STRINGIFY(x) SF_STRINGIFY_(x)
#define SF_WHERE (__FILE__ ":" SF_STRINGIFY(__LINE__))

// SF_THROW(InvalidArgument, "MatMul '{}': ...", name) throws sf::InvalidArgument.
#define SF_THROW(Type, ...) throw ::sf::Type(::fmt::format(__VA_ARGS__), SF_WHERE)

// SF_ENFORCE(cond, Type, fmt, args...) throws Type(message) unless cond holds.
#define SF_ENFORCE(cond, Type, ...) \
  do {                              \
    if (!(cond)) {                  \
      SF_THROW(Type, __VA_ARGS__);  \
    }                               \
  } while (0)
