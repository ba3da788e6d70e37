#!/usr/bin/env bash
# Builds shardflow with sanitizers (clang 14) into its own build folder and runs the suite there
# (docs/testing.md). CI runs the address,undefined build after README command 2.
#
#   bash scripts/test_sanitized.sh                      # ASan + UBSan, the whole suite, fuzz replays
#   bash scripts/test_sanitized.sh thread               # TSan, the actor, comm and pipeline tests
#   bash scripts/test_sanitized.sh thread -R 'comm\.'   # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

sanitize=${1:-address,undefined}
[ $# -gt 0 ] && shift
# Under ASan + UBSan: every unit test (the layers, the tools, the fuzz corpora) and, of the example
# programs' tests, the bad-input refusals and one run per launch path. The other example tests
# run the same library code with other numbers, and the docs' pages run the examples again; no
# benchmarks either (docs/testing.md, "What CI runs").
examples='error_|missing_dataset_dir|unknown_optimizer|.*refused|.*_bad_|.*unknown_|.*_must_|.*_needs_'
examples+='|check_inputs_before_rendezvous|resume_from_a_missing_checkpoint|pipeline_parallel_resumes_bitwise'
examples+='|data_parallel_2_processes_sfrun_env|semi_auto_quickstart_2_processes_mpirun|gpt_2_processes_sfrun_tp2_sp'
examples+='|gpt_pp2_tp2_sp_equals_1_device'
case "$sanitize" in
  address,undefined)
    dir=build-asan
    # No Python package: a sanitized extension module needs the sanitizer runtime preloaded
    # into the interpreter; the C++ it calls is what these tests cover.
    extra=(-DSHARDFLOW_FUZZ=ON -DSHARDFLOW_BUILD_BENCH=OFF -DSHARDFLOW_DOC_TESTS=OFF -DSHARDFLOW_PYTHON=OFF)
    select=(-R "^(core|comm|ops|actors|data|parallel|pipeline|train|models|tools|fuzz)\\.|^examples\\.($examples)") ;;
  thread) dir=build-tsan; extra=(-DSHARDFLOW_PYTHON=OFF); select=(-R '^(actors|comm|pipeline)\.') ;;
  *) echo "test_sanitized.sh: '$sanitize' is not address,undefined or thread" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && select=()
werror=OFF
[ "${CI:-}" = true ] && werror=ON

cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DSHARDFLOW_SANITIZE="$sanitize" -DSHARDFLOW_WERROR="$werror" "${extra[@]}" >/dev/null
cmake --build "$dir" --parallel "$(nproc)"

supp="$PWD/tests/sanitizers"
# A report fails the process that made it (exit code 1 on top of the test's own verdict).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=4"
# Sanitized binaries run 2-15x slower: twice the normal per-test limit.
ctest --test-dir "$dir" --output-on-failure --parallel "$(nproc)" --timeout 600 "${select[@]}" "$@"
