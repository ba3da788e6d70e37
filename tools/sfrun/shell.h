// Shell words: quoting a word for a POSIX shell command line, splitting an --agent string into
// words, and the agent's argv for one host. The agent contract (docs/sfrun.md): the agent words,
// with {host} replaced by the host (or the host appended when no word has {host}), followed by
// ONE more argument, a shell command line that the agent runs on that host — as
// `ssh HOST 'LINE'` and `ip netns exec NS sh -c 'LINE'` both do.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <vector>

namespace sf::sfrun {

// `word` in single quotes, safe in any POSIX shell: abc'd -> 'abc'\''d'.
std::string shell_quote(const std::string& word);

// Words quoted and joined by spaces.
std::string shell_join(const std::vector<std::string>& words);

// Splits on blanks; '...' and "..." group (no escapes inside), as a user would write --agent.
// sf::InvalidArgument for an unterminated quote or an empty string.
std::vector<std::string> split_words(const std::string& text);

// The argv that runs `command_line` on `host` through `agent`.
std::vector<std::string> agent_argv(const std::string& agent, const std::string& host,
                                    const std::string& command_line);

// The agent words for `host`, for messages (`ip netns exec ns1 sh -c`).
std::string agent_words(const std::string& agent, const std::string& host);

}  // namespace sf::sfrun
