// Brief renderings of values for error messages: a message names the value that broke a rule
// but never dumps it (a 10-million-entry list or a 1 MB string makes a useless, huge line),
// so long lists keep their first entries and a count, long text its head and a count.
//
// Threading: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sf {

// "(1,2,3)"; beyond `keep` entries "(1,2,...,8, ... 999992 more)".
std::string brief_ints(const std::vector<int64_t>& values, size_t keep = 8);
// `text` itself up to `max` characters, else its head and "... (N more characters)".
std::string brief_text(std::string_view text, size_t max = 160);

}  // namespace sf
