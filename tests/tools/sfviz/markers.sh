# sfviz show draws a timeline's markers: an elastic job's timeline (one rank's steps, schedule
# "elastic") with two membership changes prints a line per marker and writes an SVG with a
# dashed line per marker, its label escaped, an HTML page with a legend entry for them and a
# trace with a global instant event per marker. --plan has nothing to plan for it, and a
# malformed marker is refused; both are one line on stderr and exit status 2.
source "$(dirname "$0")/lib.sh"

# Steps 0 and 1, a kill, then step 1 again and step 2; the second marker comes after the last step.
cat >"$work/rank0.timeline.json" <<'EOF'
{"format":"shardflow-timeline","version":1,"schedule":"elastic","source":"measured","unit":"us",
 "stages":1,"micro_batches":3,"chunks":1,
"spans": [
 [{"action":"F0","start":0,"finish":1000},
  {"action":"F1","start":1000,"finish":2000},
  {"action":"F1","start":3000,"finish":4000},
  {"action":"F2","start":4000,"finish":5000}]],
"markers": [
 {"time":2500,"label":"generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 1"},
 {"time":6000,"label":"generation 2: <rank 3 & \"rank 4\"> left"}]}
EOF
"$SFVIZ" show "$work/rank0.timeline.json" --svg "$work/e.svg" --html "$work/e.html" --trace "$work/e.trace.json" \
  >"$work/out" 2>&1 || { show "$work/out"; fail "show rc $?"; }
expect_in "$work/out" "elastic p=1 m=3 v=1 measured: makespan 5000 µs, bubble fraction 0.200"
expect_in "$work/out" "  stage 0: busy 4000, idle 1000, bubble fraction 0.200"
expect_not_in "$work/out" "peak stashed"
expect_in "$work/out" "  marker at 2500 µs: generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 1"
expect_in "$work/out" "  marker at 6000 µs: generation 2: <rank 3 & \"rank 4\"> left"

# The SVG: four step blocks, two markers with their whole labels escaped in the tooltips.
[[ $(count_in "$work/e.svg" 'class="blk F"') -eq 4 ]] || fail "e.svg does not have 4 step blocks"
[[ $(count_in "$work/e.svg" '<g class="marker">') -eq 2 ]] || fail "e.svg does not have 2 markers"
[[ $(count_in "$work/e.svg" 'stroke-dasharray="5,3"') -eq 2 ]] || fail "e.svg does not have 2 dashed lines"
expect_in "$work/e.svg" "<title>marker at 6000 µs: generation 2: &lt;rank 3 &amp; &quot;rank 4&quot;&gt; left</title>"
expect_in "$work/e.svg" ">generation 2: &lt;rank 3 &amp; &quot;rank 4&quot;&gt; left</text>"
expect_in "$work/e.svg" \
  "<title>marker at 2500 µs: generation 1: lost rank 2; 4 -&gt; 3 ranks; rolled back to step 1</title>"
expect_in "$work/e.svg" "elastic · the steps of one rank, 4 steps · measured"
expect_in "$work/e.svg" "2 membership changes"
expect_not_in "$work/e.svg" "<rank"
# The axis reaches the marker after the last step (6 ms).
expect_in "$work/e.svg" ">6</text>"
# Well-formed XML, escaping and all.
if command -v xmllint >/dev/null; then
  xmllint --noout "$work/e.svg" 2>"$work/xml.err" || { show "$work/xml.err"; fail "e.svg is not well-formed XML"; }
fi

# The page: the picture, a legend entry and a note.
[[ $(count_in "$work/e.html" '<g class="marker">') -eq 2 ]] || fail "e.html does not have 2 markers"
expect_in "$work/e.html" "marker (its label at the top)"
expect_in "$work/e.html" "A dashed line across all stages is a marker"

# The trace: a global instant event per marker, named by its label, at its time in µs.
expect_in "$work/e.trace.json" '{"name":"generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 1","cat":"marker"'
expect_in "$work/e.trace.json" 'rolled back to step 1","cat":"marker","ph":"i","s":"g","pid":0,"tid":0,"ts":2500.0}'
expect_in "$work/e.trace.json" '{"name":"generation 2: <rank 3 & \"rank 4\"> left","cat":"marker","ph":"i","s":"g"'
[[ $(count_in "$work/e.trace.json" '"ph":"i"') -eq 2 ]] || fail "e.trace.json does not have 2 instant events"
[[ $(count_in "$work/e.trace.json" '"ph":"X"') -eq 4 ]] || fail "e.trace.json does not have 4 X events"

# A timeline without markers draws none and prints none.
"$SFVIZ" plan --schedule 1f1b --stages 2 --micro-batches 2 --svg "$work/p.svg" --trace "$work/p.trace.json" \
  >"$work/out" 2>&1 || { show "$work/out"; fail "plan rc $?"; }
expect_not_in "$work/out" "marker"
expect_not_in "$work/p.svg" "marker"
expect_not_in "$work/p.trace.json" '"ph":"i"'

# Bad input: one line, exit status 2.
expect_error() {
  local want=$1
  shift
  "$SFVIZ" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [[ $rc -eq 2 ]] || { show "$work/err"; fail "sfviz $* exited $rc, expected 2"; }
  [[ $(wc -l <"$work/err") -eq 1 ]] || { show "$work/err"; fail "sfviz $*: expected a one-line error"; }
  expect_in "$work/err" "sfviz: error: $want"
}
expect_error "'$work/rank0.timeline.json' is an elastic job's steps, which have no planned timeline" \
  show "$work/rank0.timeline.json" --plan --html "$work/x.html"
sed 's/"time":6000/"time":-1/' "$work/rank0.timeline.json" >"$work/bad.json"
expect_error "$work/bad.json: marker 1 has time -1, not a finite time >= 0" show "$work/bad.json"
sed 's/"label":"generation 1[^"]*"/"label":7/' "$work/rank0.timeline.json" >"$work/bad.json"
expect_error "$work/bad.json: marker 0 field 'label' is 7" show "$work/bad.json"
sed 's/"markers": \[/"markers": [{"label":"x"},/' "$work/rank0.timeline.json" >"$work/bad.json"
expect_error "$work/bad.json: marker 0 has no field 'time'" show "$work/bad.json"
echo PASS
