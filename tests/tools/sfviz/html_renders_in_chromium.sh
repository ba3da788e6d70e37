# sfviz's HTML page for 1F1B with p = 4, m = 8 renders in headless Chromium: the screenshot is
# not blank and shows the forward and backward colours, and the page's DOM holds exactly
# 4 × 8 × 2 = 64 blocks. Chromium runs under `timeout 60` with a fresh profile each time,
# since a headless Chromium can hang.
source "$(dirname "$0")/lib.sh"
need_chromium

"$SFVIZ" plan --schedule 1f1b --stages 4 --micro-batches 8 --html "$work/1f1b.html" >"$work/out" 2>&1 ||
  { show "$work/out"; fail "sfviz plan failed"; }

chrome --screenshot="$work/1f1b.png" --window-size=1400,900 "file://$work/1f1b.html" >"$work/shot.log" 2>&1 ||
  { show "$work/shot.log"; fail "chromium --screenshot failed (rc $?)"; }
[[ -s $work/1f1b.png ]] || { show "$work/shot.log"; fail "chromium wrote no screenshot"; }
# The blocks' fills (pipeline/render_svg.cc): F #3b6fb6, B #3a9a4a.
"$PNG_CHECK" "$work/1f1b.png" --min-colours 2 --colour 3b6fb6 --colour 3a9a4a || fail "the screenshot is not the picture"

chrome --dump-dom "file://$work/1f1b.html" >"$work/dom.html" 2>"$work/dom.log" ||
  { show "$work/dom.log"; fail "chromium --dump-dom failed (rc $?)"; }
blocks=$(count_in "$work/dom.html" 'class="blk ')
[[ $blocks -eq 64 ]] || fail "the DOM has $blocks blk blocks, expected 64"
[[ $(count_in "$work/dom.html" 'class="blk F"') -eq 32 ]] || fail "expected 32 F blocks"
expect_in "$work/dom.html" "bubble fraction 0.273"
expect_in "$work/dom.html" "peak stashed activations per stage: 4, 3, 2, 1"
echo PASS
