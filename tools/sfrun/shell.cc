#include "tools/sfrun/shell.h"

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::sfrun {

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      const size_t end = text.find(c, i + 1);
      SF_ENFORCE(end != std::string::npos, InvalidArgument, "--agent '{}': unterminated {} quote", brief_text(text, 120), c);
      cur += text.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  SF_ENFORCE(!words.empty(), InvalidArgument, "--agent is empty: it names the command that reaches a remote host");
  return words;
}

namespace {

std::vector<std::string> host_words(const std::string& agent, const std::string& host) {
  auto words = split_words(agent);
  bool placed = false;
  for (auto& w : words) {
    for (size_t at = 0; (at = w.find("{host}", at)) != std::string::npos; at += host.size()) {
      w.replace(at, 6, host);
      placed = true;
    }
  }
  if (!placed) words.push_back(host);
  return words;
}

}  // namespace

std::vector<std::string> agent_argv(const std::string& agent, const std::string& host,
                                    const std::string& command_line) {
  auto words = host_words(agent, host);
  words.push_back(command_line);
  return words;
}

std::string agent_words(const std::string& agent, const std::string& host) {
  std::string out;
  for (const auto& w : host_words(agent, host)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

}  // namespace sf::sfrun
