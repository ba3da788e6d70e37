// Brief renderings of values for error messages: a message names the value that broke a rule
// but never dumps it (a 10-million-entry list or a 1 MB string makes a useless, huge line),
// so long lists keep their first entries and a count, long text its head and a count.
// Text from users (names, paths, file lines) is shown on one line: control characters are
// escaped ("\n", "\x1b") and bytes that are not UTF-8 become "\xNN", so a name cannot split
// an error over lines or send escape sequences to a terminal.
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
std::string brief_ints(const std::vector<int>& values, size_t keep = 8);
// "0, 1, 2" (a list inside a sentence); beyond `keep` entries "0, 1, ... 99998 more".
std::string brief_list(const std::vector<int>& values, size_t keep = 8);
// A shape as shape_str writes it ("(32, 784)", "(5,)", "()"); beyond `keep` dims its first
// ones and a count: "(1, 1, 1, 1, 1, 1, 1, 1, ... 9992 more)".
std::string brief_shape(const std::vector<int64_t>& shape, size_t keep = 8);
// `text` on one line (escaped as above) up to about `max` bytes, else its head and
// "... (N more bytes)"; a UTF-8 character is never split.
std::string brief_text(std::string_view text, size_t max = 160);
// "a, b, c"; each name as brief_text(name, max_each), beyond `keep` names "..., N more".
std::string brief_names(const std::vector<std::string>& names, size_t keep = 8, size_t max_each = 40);

}  // namespace sf
