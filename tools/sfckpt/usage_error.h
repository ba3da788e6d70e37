// UsageError: a bad command line or argument of sfckpt (exit status 2), told apart from a bad
// checkpoint (any other sf::Error, exit status 1).
#pragma once

#include <shardflow/core/error.h>

namespace sf::sfckpt {

/// An argument that breaks a rule of the command line, named in the message.
class UsageError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

}  // namespace sf::sfckpt
