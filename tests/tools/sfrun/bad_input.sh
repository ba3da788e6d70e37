# Bad input is refused before any rank starts, with exit status 2 and a message naming the
# problem: a bad hostfile line (FILE:LINE), too few slots, an unreachable host, a port in use,
# -n 0, a program that does not exist, a bad --elastic or --max-restarts. Nothing is started: no job directory,
# no process.
source "$TEST_DIR/lib.sh"
marker=sfrun-bad-input-$id
# refused NAME TEXT SFRUN-ARGS...: sfrun exits 2, says TEXT, and started nothing.
refused() {
  local name=$1 text=$2
  shift 2
  local rc=0
  "$SFRUN" --log-dir "$logs" --job-id "$name" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [[ $rc -eq 2 ]] || { show "$work/$name.err"; fail "$name: sfrun exited $rc, expected 2"; }
  expect_in "$work/$name.err" "$text"
  [[ ! -e $logs/$name ]] || fail "$name: the job directory was created"
  ! pgrep -f -- "$marker" >/dev/null || fail "$name: a process of the job is running"
  echo "ok: $name: $(head -1 "$work/$name.err")"
}

printf 'localhost slots=2\n\nhostB slots=two\n' >"$work/hosts1"
refused hostfile_value "$work/hosts1:3: slots=two is not a whole number" -n 2 --hostfile "$work/hosts1" -- "$JOB_MAIN" "$marker"
printf 'localhost slots=2\nhostB sluts=2\n' >"$work/hosts2"
refused hostfile_key "$work/hosts2:2: unknown key 'sluts'" -n 2 --hostfile "$work/hosts2" -- "$JOB_MAIN" "$marker"
printf 'localhost slots=2 extra\n' >"$work/hosts3"
refused hostfile_word "$work/hosts3:1: 'extra' is not key=value" -n 2 --hostfile "$work/hosts3" -- "$JOB_MAIN" "$marker"
refused hostfile_missing "hostfile $work/nope: cannot read it" -n 2 --hostfile "$work/nope" -- "$JOB_MAIN" "$marker"
# An endless file and a huge (sparse) one are refused before reading, in one line.
refused hostfile_endless "hostfile /dev/zero: cannot read it: not a regular file" -n 2 --hostfile /dev/zero -- \
  "$JOB_MAIN" "$marker"
truncate -s 8G "$work/hosts_huge"
refused hostfile_huge "hostfile $work/hosts_huge: 8589934592 bytes, more than the 1048576 allowed" -n 2 \
  --hostfile "$work/hosts_huge" -- "$JOB_MAIN" "$marker"
for name in hostfile_endless hostfile_huge; do
  [[ $(wc -l <"$work/$name.err") -eq 1 ]] || { show "$work/$name.err"; fail "$name: the error is not one line"; }
done
printf 'localhost slots=2\n' >"$work/hosts4"
refused slots "-n 3 needs 3 slots, but $work/hosts4 offers only 2 (localhost 2)" -n 3 --hostfile "$work/hosts4" -- \
  "$JOB_MAIN" "$marker"

# A host the agent cannot reach (a network namespace that does not exist).
printf 'localhost slots=1\nsfrun-no-such-host-%s slots=1 addr=10.254.254.254\n' "$id" >"$work/hosts5"
refused unreachable "host sfrun-no-such-host-$id is not reachable: \`ip netns exec sfrun-no-such-host-$id sh -c\`" \
  -n 2 --hostfile "$work/hosts5" --agent 'ip netns exec {host} sh -c' -- "$JOB_MAIN" "$marker"
# A host that does not answer at all within --probe-timeout.
printf 'sfrun-silent-host-%s slots=1\n' "$id" >"$work/hosts6"
refused silent "sfrun-silent-host-$id\` did not answer within 1 s" \
  -n 1 --hostfile "$work/hosts6" --agent "sh -c 'sleep 30'" --probe-timeout 1 --master-addr 10.254.254.254 -- "$JOB_MAIN" "$marker"

# A port in use, given explicitly.
coproc holder { "$PORT_HOLDER"; }
read -r port <&"${holder[0]}"
cleanups+=("kill $holder_PID 2>/dev/null")
refused port "rendezvous: port $port on 127.0.0.1 is in use (--master-port $port)" -n 2 --master-port "$port" -- \
  "$JOB_MAIN" "$marker"

refused n0 "-n 0: a job needs at least one rank" -n 0 -- "$JOB_MAIN" "$marker"
refused no_program "PROGRAM $work/no-such-program: does not exist" -n 2 -- "$work/no-such-program" "$marker"
refused no_program_path "PROGRAM no-such-program-$id: no executable of that name in PATH" -n 2 -- "no-such-program-$id" "$marker"
refused not_executable "PROGRAM $TEST_DIR/lib.sh: is not executable" -n 2 -- "$TEST_DIR/lib.sh" "$marker"
refused no_command "no program given" -n 2
refused transport "--transport tcp: must be zmq or mpi" -n 2 --transport tcp -- "$JOB_MAIN" "$marker"
# --elastic MIN:MAX: two whole numbers, 1 <= MIN <= N <= MAX, and only where sfrun starts the ranks; one line each.
refused elastic_zero "--elastic 0:4: MIN must be at least 1" -n 4 --elastic 0:4 -- "$JOB_MAIN" "$marker"
refused elastic_order "--elastic 3:2: MIN 3 is more than MAX 2" -n 2 --elastic 3:2 -- "$JOB_MAIN" "$marker"
refused elastic_words "--elastic a:b: must be MIN:MAX, two whole numbers (e.g. 2:4)" -n 4 --elastic a:b -- \
  "$JOB_MAIN" "$marker"
refused elastic_one "--elastic 3: must be MIN:MAX" -n 4 --elastic 3 -- "$JOB_MAIN" "$marker"
refused elastic_max "--elastic 2:3: -n 4 starts more ranks than MAX 3" -n 4 --elastic 2:3 -- "$JOB_MAIN" "$marker"
refused elastic_min "--elastic 5:8: MIN 5 is more than the 4 ranks of -n 4" -n 4 --elastic 5:8 -- "$JOB_MAIN" "$marker"
refused elastic_mpi \
  "--elastic needs the zmq transport: Open MPI 4.1 cannot shrink a communicator (see docs/elastic.md)" \
  -n 4 --elastic 2:4 --transport mpi -- "$JOB_MAIN" "$marker"
# --max-restarts K: a whole number, 0 or more, and only with --elastic (0 too: it would say something untrue).
refused restarts_plain "--max-restarts 2: only an elastic job starts replacement ranks; add --elastic MIN:MAX" \
  -n 4 --max-restarts 2 -- "$JOB_MAIN" "$marker"
refused restarts_zero_plain "--max-restarts 0: only an elastic job starts replacement ranks" -n 4 --max-restarts 0 -- \
  "$JOB_MAIN" "$marker"
refused restarts_mpi "--max-restarts 1: only an elastic job starts replacement ranks" -n 4 --transport mpi \
  --max-restarts 1 -- "$JOB_MAIN" "$marker"
refused restarts_negative "--max-restarts -1: must be a whole number, 0 or more" -n 4 --elastic 2:4 --max-restarts -1 \
  -- "$JOB_MAIN" "$marker"
refused restarts_words "--max-restarts two: must be a whole number, 0 or more" -n 4 --elastic 2:4 --max-restarts two \
  -- "$JOB_MAIN" "$marker"
refused restarts_huge "--max-restarts 99999999999: must be a whole number, 0 or more" -n 4 --elastic 2:4 \
  --max-restarts 99999999999 -- "$JOB_MAIN" "$marker"
for name in elastic_zero elastic_order elastic_words elastic_one elastic_max elastic_min elastic_mpi restarts_plain \
  restarts_zero_plain restarts_mpi restarts_negative restarts_words restarts_huge; do
  [[ $(wc -l <"$work/$name.err") -eq 1 ]] || { show "$work/$name.err"; fail "$name: the error is not one line"; }
done
# Everything wrong at once is said at once.
refused several "2 problems:" -n 2 --master-port "$port" -- "$work/no-such-program" "$marker"
echo PASS
