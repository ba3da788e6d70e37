// Command-line value checks for the programs (examples, tools, benches) that parse arguments
// with CLI11. CLI11's own PositiveNumber names the whole double range in its refusal (a line of
// 300+ digits); these say the rule in a few words and quote at most 40 characters of the value.
// Header-only: core's library does not use CLI11, a program that includes this links it.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace sf::cli {

namespace detail {
inline CLI::Validator number_check(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        const std::string shown = text.size() <= 40 ? text : text.substr(0, 40) + "...";
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        // strtod reads "nan" too: not a number either, rather than "negative".
        if (text.empty() || end != text.c_str() + text.size() || std::isnan(v))
          return "'" + shown + "' is not a number";
        if (allow_zero ? !(v >= 0) : !(v > 0)) return shown + (allow_zero ? " is negative" : " is not above 0");
        return {};
      },
      allow_zero ? "NONNEGATIVE" : "POSITIVE");
}
}  // namespace detail

// A number above 0 / at least 0.
inline const CLI::Validator kPositive = detail::number_check(false);
inline const CLI::Validator kNonNegative = detail::number_check(true);

}  // namespace sf::cli
