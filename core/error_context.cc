#include "core/error_context.h"

#include <fmt/format.h>

#include <new>
#include <string_view>

#include "core/error.h"

namespace sf {

namespace {

// The message with context, or empty when `what` already names the context.
std::string prefixed(const std::string& context, const char* what) {
  if (std::string_view(what).find(context) != std::string_view::npos) return {};
  return fmt::format("{}: {}", context, what);
}

}  // namespace

std::exception_ptr with_context(std::exception_ptr e, const std::string& context) {
  if (!e || context.empty()) return e;
  // Most derived first: each handler re-creates exactly the type it names.
  try {
    std::rethrow_exception(e);
  } catch (const PeerLost& x) {
    const std::string m = prefixed(context, x.what());
    return m.empty() ? e : std::make_exception_ptr(PeerLost(x.rank(), m, x.where()));
  } catch (const ShapeError& x) {
    const std::string m = prefixed(context, x.what());
    return m.empty() ? e : std::make_exception_ptr(ShapeError(m, x.where()));
  } catch (const NotFound& x) {
    const std::string m = prefixed(context, x.what());
    return m.empty() ? e : std::make_exception_ptr(NotFound(m, x.where()));
  } catch (const InvalidArgument& x) {
    const std::string m = prefixed(context, x.what());
    return m.empty() ? e : std::make_exception_ptr(InvalidArgument(m, x.where()));
  } catch (const IoError& x) {
    const std::string m = prefixed(context, x.what());
    return m.empty() ? e : std::make_exception_ptr(IoError(m, x.where()));
  } catch (const Error& x) {
    const std::string m = prefixed(context, x.what());
    return m.empty() ? e : std::make_exception_ptr(Error(m, x.where()));
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
