# Runs an example uninterrupted and resumed from a checkpoint of it: the resumed run's loss
# lines must be the uninterrupted run's last ones, the same text (bitwise equal training), and
# its test accuracy the same.
#   -DCKPT=dir          removed first: where the checkpoints go
#   -DFIRST=cmd;args    optional: a run that saves the checkpoint and stops early
#   -DFULL=cmd;args     the uninterrupted run (it may save the checkpoint itself)
#   -DRESUME=cmd;args   the run resumed from the checkpoint
#   -DLINES=n           how many loss lines the resumed run prints
include(${CMAKE_CURRENT_LIST_DIR}/run_command.cmake)

file(REMOVE_RECURSE ${CKPT})
if(FIRST)
  run(first_out ${FIRST})
  message(STATUS "saving run:\n${first_out}")
endif()
run(full_out ${FULL})
message(STATUS "uninterrupted run:\n${full_out}")
run(resumed_out ${RESUME})
message(STATUS "resumed run:\n${resumed_out}")

set(loss "epoch: [0-9]+ step: [0-9]+, loss is [0-9.e+-]+")
string(REGEX MATCHALL "${loss}" full_losses "${full_out}")
string(REGEX MATCHALL "${loss}" resumed_losses "${resumed_out}")
list(LENGTH full_losses n_full)
list(LENGTH resumed_losses n_resumed)
if(NOT n_resumed EQUAL LINES OR n_full LESS n_resumed)
  message(FATAL_ERROR "the resumed run printed ${n_resumed} loss lines (want ${LINES}), the uninterrupted one ${n_full}")
endif()
math(EXPR skip "${n_full} - ${n_resumed}")
list(SUBLIST full_losses ${skip} ${n_resumed} full_tail)
if(NOT resumed_losses STREQUAL full_tail)
  string(REPLACE ";" "\n" a "${full_tail}")
  string(REPLACE ";" "\n" b "${resumed_losses}")
  message(FATAL_ERROR "the resumed run's loss lines differ from the uninterrupted run's last ones:\n${a}\n---\n${b}")
endif()
string(REGEX MATCHALL "test accuracy: [0-9.]+" full_acc "${full_out}")
string(REGEX MATCHALL "test accuracy: [0-9.]+" resumed_acc "${resumed_out}")
if(NOT full_acc STREQUAL resumed_acc)
  message(FATAL_ERROR "test accuracy: '${full_acc}' uninterrupted, '${resumed_acc}' resumed")
endif()
