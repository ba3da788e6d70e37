# A real 4-stage 1F1B run (bench/pipeline_bubble: p = 4, m = 8 on 4 virtual devices) writes its
# measured timeline; `sfviz show --plan` draws the planned schedule above the measured one in one
# HTML page, which headless Chromium renders: the screenshot shows the F and B colours and the
# DOM holds 64 planned + 64 measured blocks. The screenshot and page are kept in
# $PICTURES_DIR (the build's pictures/), to look at.
source "$(dirname "$0")/lib.sh"
need_chromium

timeout 120 "$PIPELINE_BUBBLE" --schedules 1f1b --stages 4 --micro-batches 8 --width 128 --rows 32 --warmup 1 --steps 1 \
  --timeline-dir "$work" >"$work/bench.out" 2>&1 || { show "$work/bench.out"; fail "pipeline_bubble failed"; }
[[ -s $work/1f1b.timeline.json ]] || { show "$work/bench.out"; fail "no measured timeline written"; }

mkdir -p "$PICTURES_DIR"
page=$PICTURES_DIR/pipeline_1f1b_p4_m8.html
"$SFVIZ" show "$work/1f1b.timeline.json" --plan --html "$page" --svg "$PICTURES_DIR/pipeline_1f1b_p4_m8_measured.svg" \
  --trace "$PICTURES_DIR/pipeline_1f1b_p4_m8.trace.json" >"$work/viz.out" 2>&1 || { show "$work/viz.out"; fail "sfviz show failed"; }
cat "$work/viz.out"

png=$PICTURES_DIR/pipeline_1f1b_p4_m8.png
chrome --screenshot="$png" --window-size=1400,1100 "file://$page" >"$work/shot.log" 2>&1 ||
  { show "$work/shot.log"; fail "chromium --screenshot failed (rc $?)"; }
[[ -s $png ]] || { show "$work/shot.log"; fail "chromium wrote no screenshot"; }
"$PNG_CHECK" "$png" --min-colours 2 --colour 3b6fb6 --colour 3a9a4a || fail "the screenshot is not the picture"

chrome --dump-dom "file://$page" >"$work/dom.html" 2>"$work/dom.log" ||
  { show "$work/dom.log"; fail "chromium --dump-dom failed (rc $?)"; }
blocks=$(count_in "$work/dom.html" 'class="blk ')
[[ $blocks -eq 128 ]] || fail "the DOM has $blocks blk blocks, expected 64 planned + 64 measured"
expect_in "$work/dom.html" "measured"
expect_in "$work/dom.html" "planned"
echo "PASS: $png"
