// One self-contained HTML page with pictures of one or more timelines (pipeline/render_svg.h),
// e.g. the planned schedule above the measured one: per timeline a heading, the SVG inline and
// a table of its figures (pipeline/timeline_stats.h), with a legend of the colours at the top;
// a timeline with collectives adds their colours to the legend and their columns to its table.
// Markers (timeline.h) are drawn in the pictures; a page with any adds a legend entry and a note
// saying what they are. A page of elastic timelines calls their blocks steps. The page loads
// nothing: no scripts, no style sheets, fonts or images from anywhere else, so it can be mailed
// or attached to a report and opened offline.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <vector>

#include <shardflow/pipeline/render_svg.h>
#include <shardflow/pipeline/timeline.h>

namespace sf::pipeline {

struct HtmlOptions {
  std::string title;  // the page's title and heading; empty: from the first timeline
  SvgOptions svg;     // `standalone` is ignored: the pictures are inlined
};

// The page, timelines in the order given.
std::string render_html(const std::vector<Timeline>& timelines, const HtmlOptions& options = {});

}  // namespace sf::pipeline
