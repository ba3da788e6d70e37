# Runs an example uninterrupted and resumed from a checkpoint of it: the resumed run's loss
# lines must be the uninterrupted run's last ones, the same text (bitwise equal training), and
# its test accuracy the same. With WITHIN (a checkpoint resumed on another configuration: the
# uninterrupted run is on the resumed run's configuration, FIRST saved on another), the same
# steps, each loss within WITHIN relative of the uninterrupted run's, the accuracy within 0.005.
#   -DCKPT=dir          removed first: where the checkpoints go
#   -DFIRST=cmd;args    optional: a run that saves the checkpoint and stops early
#   -DFULL=cmd;args     the uninterrupted run (it may save the checkpoint itself)
#   -DRESUME=cmd;args   the run resumed from the checkpoint
#   -DLINES=n           how many loss lines the resumed run prints
#   -DWITHIN=x          optional: the relative tolerance per loss line (1e-5), instead of bitwise
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

# Model.train's LossMonitor, or a seed loop's "epoch: 0, step: 30, loss is ...".
set(loss "epoch: [0-9]+,? step: [0-9]+, loss is [0-9.e+-]+")
string(REGEX MATCHALL "${loss}" full_losses "${full_out}")
string(REGEX MATCHALL "${loss}" resumed_losses "${resumed_out}")
list(LENGTH full_losses n_full)
list(LENGTH resumed_losses n_resumed)
if(NOT n_resumed EQUAL LINES OR n_full LESS n_resumed)
  message(FATAL_ERROR "the resumed run printed ${n_resumed} loss lines (want ${LINES}), the uninterrupted one ${n_full}")
endif()
math(EXPR skip "${n_full} - ${n_resumed}")
list(SUBLIST full_losses ${skip} ${n_resumed} full_tail)
string(REGEX MATCHALL "test accuracy: [0-9.]+" full_acc "${full_out}")
string(REGEX MATCHALL "test accuracy: [0-9.]+" resumed_acc "${resumed_out}")
if(NOT WITHIN)
  if(NOT resumed_losses STREQUAL full_tail)
    string(REPLACE ";" "\n" a "${full_tail}")
    string(REPLACE ";" "\n" b "${resumed_losses}")
    message(FATAL_ERROR "the resumed run's loss lines differ from the uninterrupted run's last ones:\n${a}\n---\n${b}")
  endif()
  if(NOT full_acc STREQUAL resumed_acc)
    message(FATAL_ERROR "test accuracy: '${full_acc}' uninterrupted, '${resumed_acc}' resumed")
  endif()
  return()
endif()
# CMake has no floating point: awk compares, as tests/tools/sfrun/four_ways.sh does. One
# "<uninterrupted line>|<resumed line>" per step; the same step numbers, losses within WITHIN.
set(pairs "")
foreach(i RANGE 1 ${n_resumed})
  math(EXPR k "${i} - 1")
  list(GET full_tail ${k} a)
  list(GET resumed_losses ${k} b)
  string(APPEND pairs "${a}|${b}\n")
endforeach()
if(full_acc)
  if(NOT resumed_acc)
    message(FATAL_ERROR "the resumed run printed no test accuracy")
  endif()
  list(GET full_acc 0 fa)
  list(GET resumed_acc 0 ra)
  string(APPEND pairs "${fa}|${ra}\n")
endif()
file(WRITE ${CKPT}.pairs "${pairs}")
execute_process(
  COMMAND awk -F| -v within=${WITHIN} [=[
    /^test accuracy/ { split($1, a, ": "); split($2, b, ": "); d = a[2] - b[2]; if (d < 0) d = -d
      if (d > 0.005) { print "test accuracy " b[2] " resumed, " a[2] " uninterrupted"; bad = 1 }
      next }
    { split($1, a, ", loss is "); split($2, b, ", loss is ")
      if (a[1] != b[1]) { print "step lines differ: " $1 " vs " $2; bad = 1; next }
      d = a[2] - b[2]; if (d < 0) d = -d
      if (d > within * a[2]) { printf "%s: loss %s resumed, %s uninterrupted: more than %s relative\n", a[1], b[2], a[2], within; bad = 1 } }
    END { exit bad }]=] ${CKPT}.pairs
  RESULT_VARIABLE rc OUTPUT_VARIABLE why)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the resumed run is not the uninterrupted one within ${WITHIN}:\n${why}")
endif()
message(STATUS "${n_resumed} loss lines within ${WITHIN} relative of the uninterrupted run's")
