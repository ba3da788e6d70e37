// Printing and parsing the action text form (grammar in action.h and docs/pipeline.md).
#include <shardflow/pipeline/action.h>

#include <array>
#include <cctype>
#include <charconv>

#include <shardflow/core/error.h>

namespace sf::pipeline {
namespace {

constexpr std::array<std::string_view, kActionKinds> kNames = {"F", "B", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B"};

// Reads a non-negative decimal at the front of `text`, advancing it; -1 if there is none.
int take_number(std::string_view& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || text.front() == '+' || text.front() == '-') return -1;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

}  // namespace

bool is_compute(ActionKind kind) {
  return kind == ActionKind::kForward || kind == ActionKind::kBackward || kind == ActionKind::kWeight;
}

std::string_view kind_name(ActionKind kind) { return kNames[static_cast<size_t>(kind)]; }

std::string to_string(const Action& action) {
  std::string text(kind_name(action.kind));
  text += std::to_string(action.micro_batch);
  if (action.chunk != 0) {
    text += '.';
    text += std::to_string(action.chunk);
  }
  return text;
}

Action parse_action(std::string_view text) {
  size_t letters = 0;
  while (letters < text.size() && (std::isupper(static_cast<unsigned char>(text[letters])) || text[letters] == '_')) {
    ++letters;
  }
  const std::string_view name = text.substr(0, letters);
  Action action;
  bool known = false;
  for (size_t k = 0; k < kNames.size(); ++k) {
    if (kNames[k] == name) {
      action.kind = static_cast<ActionKind>(k);
      known = true;
    }
  }
  SF_ENFORCE(known, InvalidArgument,
             "pipeline action '{}': unknown kind '{}' (expected F, B, W, SEND_F, RECV_F, SEND_B or RECV_B)", text,
             name);
  std::string_view rest = text.substr(letters);
  action.micro_batch = take_number(rest);
  SF_ENFORCE(action.micro_batch >= 0, InvalidArgument, "pipeline action '{}': expected a micro-batch number after '{}'",
             text, name);
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    action.chunk = take_number(rest);
    SF_ENFORCE(action.chunk >= 0, InvalidArgument, "pipeline action '{}': expected a chunk number after '.'", text);
    // "F3.0" reads as F3; only "F3" is ever written.
  }
  SF_ENFORCE(rest.empty(), InvalidArgument, "pipeline action '{}': unexpected '{}' at the end", text, rest);
  return action;
}

}  // namespace sf::pipeline
