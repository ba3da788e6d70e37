#include <shardflow/core/error_context.h>

#include <fmt/format.h>

#include <new>
#include <string_view>
#include <type_traits>

#include <shardflow/core/error.h>

namespace sf {

namespace {

// The message with context, or empty when `what` already names the context.
std::string prefixed(const std::string& context, const char* what) {
  if (std::string_view(what).find(context) != std::string_view::npos) return {};
  return fmt::format("{}: {}", context, what);
}

// `x` again as its own type T with the context in its message; `e` itself when the message
// already names the context. T's constructor takes (message, where), PeerLost's the rank first.
template <class T>
std::exception_ptr same_type(const std::exception_ptr& e, const T& x, const std::string& context) {
  const std::string m = prefixed(context, x.what());
  if (m.empty()) return e;
  if constexpr (std::is_same_v<T, PeerLost>) {
    return std::make_exception_ptr(PeerLost(x.rank(), m, x.where()));
  } else {
    return std::make_exception_ptr(T(m, x.where()));
  }
}

}  // namespace

std::exception_ptr with_context(std::exception_ptr e, const std::string& context) {
  if (!e || context.empty()) return e;
  // Most derived first: each handler re-creates exactly the type it names.
  try {
    std::rethrow_exception(e);
  } catch (const PeerLost& x) {
    return same_type(e, x, context);
  } catch (const ShapeError& x) {
    return same_type(e, x, context);
  } catch (const NotFound& x) {
    return same_type(e, x, context);
  } catch (const InvalidArgument& x) {
    return same_type(e, x, context);
  } catch (const IoError& x) {
    return same_type(e, x, context);
  } catch (const Error& x) {
    return same_type(e, x, context);
  } catch (const std::bad_alloc&) {
    return std::make_exception_ptr(Error(fmt::format("{}: out of memory", context)));
  } catch (const std::exception& x) {
    const std::string m = prefixed(context, x.what());
    return std::make_exception_ptr(Error(m.empty() ? std::string(x.what()) : m));
  } catch (...) {
    return std::make_exception_ptr(Error(fmt::format("{}: an exception that is not a std::exception", context)));
  }
}

}  // namespace sf
