# --transport mpi: mpirun starts the ranks (one sfrun log keeper each), job_main sees Open MPI's
# variables and the mpi backend, and the logs have the same layout. A killed rank is named.
source "$TEST_DIR/lib.sh"
mpirun=${MPIRUN:-mpirun}
command -v "$mpirun" >/dev/null || skip "no mpirun"
args="--oversubscribe --mca pml ob1 --mca btl self,vader ${MPIRUN_EXTRA:-}"
job=mpi$id
rc=0
"$SFRUN" -n 3 --transport mpi --mpirun "$mpirun" --mpirun-args "$args" --tee --log-dir "$logs" --job-id "$job" -- \
  "$JOB_MAIN" mpirun mpi OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK \
  >"$work/out" 2>"$work/err" || rc=$?
[[ $rc -eq 0 ]] || { show "$work/err"; fail "sfrun exited $rc"; }
for r in 0 1 2; do
  expect_in "$logs/$job/rank.$r/stdout" "job_main: rank $r ok"
  expect_in "$work/out" "[rank $r] job_main: rank $r ok"
done

job=mpikill$id
"$SFRUN" -n 3 --transport mpi --mpirun "$mpirun" --mpirun-args "$args" --log-dir "$logs" --job-id "$job" -- "$LOOP_MAIN" 120 \
  >"$work/out" 2>"$work/err" &
sfrun=$!
cleanups+=("kill -9 $sfrun 2>/dev/null")
wait_pids "$job" 3 30
wait_for "$logs/$job/rank.2/stdout" "rank 2 step 3" 30
pids=$(job_pids "$job")
kill -9 "$(cat "$logs/$job/rank.1/pid")"
rc=0
wait "$sfrun" || rc=$?
show "$work/err"
[[ $rc -ne 0 ]] || fail "sfrun exited 0"
expect_in "$work/err" "sfrun: rank 1 exited with signal 9 (Killed) — see $logs/$job/rank.1/stdout"
assert_gone $pids
echo PASS
