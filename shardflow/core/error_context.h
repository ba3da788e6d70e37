// Errors that cross an actor or thread boundary travel as std::exception_ptr, not as text, so
// the caller catches the type that was thrown (sf::PeerLost with its rank, sf::IoError,
// sf::InvalidArgument, ...). with_context() adds where it happened (the op, the pipeline
// action) to the message without losing the type.
#pragma once

#include <exception>
#include <string>

namespace sf {

// `e` with "<context>: " before its message, re-created as the same type of core/error.h
// (PeerLost keeps its rank; every type keeps where()). A message that already names the
// context is passed on as it is (the same exception object, whatever its type), so a kernel
// error that names its op is not prefixed with the op again. A type derived from those of
// core/error.h elsewhere becomes its nearest core base; an exception that is not an
// sf::Error becomes sf::Error. A null `e` stays null.
std::exception_ptr with_context(std::exception_ptr e, const std::string& context);

// The exception being handled (call inside a catch block), with context.
inline std::exception_ptr current_error_with_context(const std::string& context) {
  return with_context(std::current_exception(), context);
}

}  // namespace sf
