// Child processes: starting one with its output on pipes, and running a short command to
// completion with a deadline (the preflight probes).
//
// Every child runs in its own process group (so sfrun can signal a rank and whatever it
// started, and a Ctrl-C at the terminal reaches only sfrun, which forwards it), gets SIGKILL
// if sfrun dies (PR_SET_PDEATHSIG), and starts with every signal unblocked and at its default.
// A child that cannot be started is reported by spawn_child itself, with the exec error.
//
// Threading: call from sfrun's one thread. The caller owns the returned descriptors.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace sf::sfrun {

struct SpawnSpec {
  std::vector<std::string> argv;     // argv[0] is looked up in PATH unless it has a '/'
  std::vector<std::string> env_set;  // NAME=VALUE, on top of sfrun's environment
  bool stdin_pipe = false;           // else stdin is /dev/null
};

struct Child {
  pid_t pid = -1;  // also its process group
  int out = -1;    // read ends of its stdout and stderr (non-blocking, close-on-exec)
  int err = -1;
  int in = -1;     // write end of its stdin when stdin_pipe
};

// sf::Error naming argv[0] and the reason if the program cannot be started.
Child spawn_child(const SpawnSpec& spec);

struct Captured {
  int status = 0;  // as waitpid gives it
  bool timed_out = false;
  std::string out, err;
};

// Runs every command at once (stdin /dev/null) and waits for all, each at most `timeout`
// (then its group is killed and timed_out set).
std::vector<Captured> run_all_captured(const std::vector<std::vector<std::string>>& commands,
                                       std::chrono::milliseconds timeout);

// "exited with code 1", "exited with signal 9 (Killed)".
std::string describe_status(int wait_status);

// Closes fd if open and sets it to -1.
void close_fd(int& fd);

}  // namespace sf::sfrun
