# sfviz's command line: plan writes the SVG, the HTML page, the trace and the timeline and
# prints the figures; show reads a timeline back (with --plan, the planned one above it); a
# schedule file works like a named schedule; a measured timeline with collectives inside its
# stages draws them on a lane and prints their figures; bad input is one line on stderr and
# exit code 2.
source "$(dirname "$0")/lib.sh"

"$SFVIZ" plan --schedule 1f1b --stages 4 --micro-batches 8 --svg "$work/a.svg" --html "$work/a.html" \
  --trace "$work/a.trace.json" --timeline "$work/a.timeline.json" >"$work/out" 2>&1 || { show "$work/out"; fail "plan rc $?"; }
expect_in "$work/out" "1f1b p=4 m=8 v=1 planned: makespan 22 units, bubble fraction 0.273"
expect_in "$work/out" "stage 0: busy 16, idle 6, bubble fraction 0.273, peak stashed 4"
expect_in "$work/out" "stage 3: busy 16, idle 6, bubble fraction 0.273, peak stashed 1"
for f in a.svg a.html a.trace.json a.timeline.json; do
  [[ -s $work/$f ]] || fail "plan did not write $f"
  expect_in "$work/out" "wrote $work/$f"
done
[[ $(count_in "$work/a.svg" 'class="blk ') -eq 64 ]] || fail "a.svg does not have 64 blocks"
[[ $(count_in "$work/a.trace.json" '"ph":"X"') -eq 64 ]] || fail "a.trace.json does not have 64 X events"

# Costs and chunks: interleaved with B twice F.
"$SFVIZ" plan --schedule interleaved_1f1b --stages 4 --micro-batches 8 --chunks 2 --costs 1,2,1 >"$work/out" 2>&1 ||
  { show "$work/out"; fail "interleaved plan rc $?"; }
expect_in "$work/out" "interleaved_1f1b p=4 m=8 v=2 planned: makespan 57 units, bubble fraction 0.158"

# show: the planned timeline read back draws the same; with --plan the page has both.
"$SFVIZ" show "$work/a.timeline.json" --plan --html "$work/b.html" --svg "$work/b.svg" >"$work/out" 2>&1 ||
  { show "$work/out"; fail "show rc $?"; }
cmp -s "$work/a.svg" "$work/b.svg" || fail "show draws the timeline differently from plan"
[[ $(count_in "$work/b.html" '<svg') -eq 2 ]] || fail "show --plan page does not have two pictures"
[[ $(count_in "$work/b.html" 'class="blk ') -eq 128 ]] || fail "show --plan page does not have 128 blocks"

# A measured timeline with collectives inside its stages: a lane of them in the SVG, their own
# trace thread, their figures printed; a malformed one is refused naming the stage and entry.
cat >"$work/c.json" <<'EOF'
{"format":"shardflow-timeline","version":1,"schedule":"1f1b","source":"measured","unit":"us","stages":2,"micro_batches":1,"chunks":1,
"spans": [
 [{"action":"F0","start":0,"finish":100},{"action":"B0","start":300,"finish":500}],
 [{"action":"F0","start":100,"finish":200},{"action":"B0","start":200,"finish":300}]],
"collectives": [
 [{"op":"AllReduce","group":"0-1","micro_batch":0,"chunk":0,"phase":"F","start":40,"finish":60}],
 [{"op":"AllGather","group":"0-1","micro_batch":0,"chunk":0,"phase":"B","start":250,"finish":260},
  {"op":"AllReduce","group":"0-1","micro_batch":0,"chunk":0,"phase":"F","start":150,"finish":180}]]}
EOF
"$SFVIZ" show "$work/c.json" --svg "$work/c.svg" --html "$work/c.html" --trace "$work/c.trace.json" >"$work/out" 2>&1 ||
  { show "$work/out"; fail "show with collectives rc $?"; }
expect_in "$work/out" "stage 0: busy 300, idle 200, bubble fraction 0.400, peak stashed 1, 1 collectives 20 (6.7% of busy)"
expect_in "$work/out" "stage 1: busy 200, idle 300, bubble fraction 0.600, peak stashed 1, 2 collectives 40 (20.0% of busy)"
expect_in "$work/out" "collectives inside the stages: 3 of them, 60 "
expect_in "$work/out" ", 12.0% of the compute time"
[[ $(count_in "$work/c.svg" '<rect class="coll ') -eq 3 ]] || fail "c.svg does not have 3 collective blocks"
[[ $(count_in "$work/c.svg" 'class="coll-lane"') -eq 2 ]] || fail "c.svg does not have a collective lane per stage"
[[ $(count_in "$work/c.html" '<rect class="coll ') -eq 3 ]] || fail "c.html does not have 3 collective blocks"
expect_in "$work/c.html" "collective AllGather"
[[ $(count_in "$work/c.trace.json" '"tid":2,"ts"') -eq 3 ]] || fail "c.trace.json does not have 3 collective events"
expect_not_in "$work/a.svg" 'coll'

# A schedule in text form.
printf 'F0 F1 B0 B1\nF0 B0 F1 B1\n' >"$work/s.txt"
"$SFVIZ" plan --schedule-file "$work/s.txt" --micro-batches 2 --svg "$work/s.svg" >"$work/out" 2>&1 ||
  { show "$work/out"; fail "schedule file rc $?"; }
expect_in "$work/out" "(parsed) p=2 m=2 v=1 planned: makespan 6 units, bubble fraction 0.333"
[[ $(count_in "$work/s.svg" 'class="blk ') -eq 8 ]] || fail "s.svg does not have 8 blocks"

# Bad input: exit code 2 and one line naming the problem.
expect_error() {
  local want=$1
  shift
  "$SFVIZ" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [[ $rc -eq 2 ]] || { show "$work/err"; fail "sfviz $* exited $rc, expected 2"; }
  [[ $(wc -l <"$work/err") -eq 1 ]] || { show "$work/err"; fail "sfviz $*: expected a one-line error"; }
  expect_in "$work/err" "sfviz: error: $want"
}
expect_error "pipeline: unknown schedule '2f2b'" plan --schedule 2f2b --stages 4 --micro-batches 8
expect_error "cannot open '$work/none.txt'" plan --schedule-file "$work/none.txt" --micro-batches 8
expect_error "cannot open '$work/none.json'" show "$work/none.json"
echo '{"stages": 4,' >"$work/bad.json"
expect_error "$work/bad.json: not JSON" show "$work/bad.json"
sed 's/"phase":"B"/"phase":"Q"/' "$work/c.json" >"$work/bad.json"
expect_error "$work/bad.json: stage 1 collective 0 'AllGather' has phase 'Q'" show "$work/bad.json"
echo '{"source": "measured", "unit": "us", "stages": 1, "micro_batches": 1, "chunks": 1, "spans": [[{"action": "X1", "start": 0, "finish": 1}]]}' >"$work/bad.json"
expect_error "$work/bad.json: stage 0 span 0" show "$work/bad.json"
expect_error "--costs '1,x,1'" plan --schedule 1f1b --stages 4 --micro-batches 8 --costs 1,x,1
expect_error "plan --schedule needs --stages" plan --schedule 1f1b --micro-batches 8
expect_error "A subcommand is required" 
expect_error "pipeline schedule '(parsed)'" plan --schedule-file "$work/s.txt" --micro-batches 3
"$SFVIZ" --help >"$work/out" 2>&1 || fail "--help exited $?"
expect_in "$work/out" "plan"
echo PASS
