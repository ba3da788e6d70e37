# An elastic job's timeline with two markers, drawn by sfviz as an HTML page, renders in headless
# Chromium: the screenshot shows the step colour and the markers' red, and the DOM Chromium
# parsed holds both markers with their labels intact, so the escaping of <, & and " held.
source "$(dirname "$0")/lib.sh"
need_chromium

cat >"$work/rank0.timeline.json" <<'JSON'
{"format":"shardflow-timeline","version":1,"schedule":"elastic","source":"measured","unit":"us",
 "stages":1,"micro_batches":3,"chunks":1,
"spans": [[{"action":"F0","start":0,"finish":1000},{"action":"F1","start":1000,"finish":2000},
           {"action":"F1","start":3000,"finish":4000},{"action":"F2","start":4000,"finish":5000}]],
"markers": [{"time":2500,"label":"generation 1: lost rank 2; 4 -> 3 ranks"},
            {"time":6000,"label":"generation 2: <rank 3 & \"rank 4\"> left"}]}
JSON
"$SFVIZ" show "$work/rank0.timeline.json" --html "$work/e.html" >"$work/out" 2>&1 ||
  { show "$work/out"; fail "sfviz show failed"; }

chrome --screenshot="$work/e.png" --window-size=1400,700 "file://$work/e.html" >"$work/shot.log" 2>&1 ||
  { show "$work/shot.log"; fail "chromium --screenshot failed (rc $?)"; }
[[ -s $work/e.png ]] || { show "$work/shot.log"; fail "chromium wrote no screenshot"; }
# The step blocks' fill and the markers' colour (pipeline/render_svg.cc): #3b6fb6 and #d62728.
"$PNG_CHECK" "$work/e.png" --min-colours 2 --colour 3b6fb6 --colour d62728 || fail "the screenshot is not the picture"

chrome --dump-dom "file://$work/e.html" >"$work/dom.html" 2>"$work/dom.log" ||
  { show "$work/dom.log"; fail "chromium --dump-dom failed (rc $?)"; }
[[ $(count_in "$work/dom.html" '<g class="marker">') -eq 2 ]] || fail "the DOM does not have 2 markers"
[[ $(count_in "$work/dom.html" 'class="blk F"') -eq 4 ]] || fail "the DOM does not have 4 step blocks"
expect_in "$work/dom.html" "generation 2: &lt;rank 3 &amp; \"rank 4\"&gt; left</text>"
expect_in "$work/dom.html" "generation 1: lost rank 2; 4 -&gt; 3 ranks</text>"
echo PASS
