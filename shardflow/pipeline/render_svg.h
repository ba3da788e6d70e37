// A pipeline timeline (pipeline/timeline.h) drawn as an SVG picture: one row per stage, one
// block per F, B or W at its start and finish, coloured by kind (F blue, B green, W orange; a
// lighter shade for each later model chunk) and labelled with its micro-batch (and .chunk
// when the schedule has chunks). Sends and receives are thin ticks at the foot of the row,
// not blocks. Idle time is the light lane showing between blocks. A title states the
// schedule, p, m, v and the source, the bubble fraction and the peak stash of every stage
// (pipeline/timeline_stats.h); each row ends with its own idle share and stash; a time axis
// runs along the bottom. A measured timeline of operator-parallel stages also has, under each
// stage's row, a thin lane of the collectives that ran inside the stage's phases, one small
// block each, coloured by op (AllReduce, AllGather, ...), and a legend of those colours under
// the axis; a timeline without collectives is drawn exactly as before they existed. Each marker
// of a timeline is a red dashed line across all stages at its time, its label at the top (on
// one of up to three lines of a band above the rows, shortened to 48 characters, left out when
// no line has room) and all of it in the line's tooltip; the time axis reaches every marker. A
// timeline without markers is drawn exactly as before they existed. An elastic job's timeline
// (timeline.h, is_elastic) is titled by its steps and membership changes, its one row "steps".
//
// Every compute block is a <rect class="blk K"> (K = F, B or W) holding a <title> tooltip with
// the stage, action, start and finish; nothing else in the picture has the class blk, so a
// test or a script can count blocks. Sends and receives are <line class="xfer ...">. Each
// collective is a <rect class="coll OP"> holding a <title> with its op, group, phase,
// micro-batch, chunk, times and duration, on a <rect class="coll-lane">. Each marker is a
// <g class="marker"> holding a <title> (its time and whole label), a dashed <line> and, where
// there was room, a <text> with its label, all inside one <g class="markers">.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <shardflow/pipeline/timeline.h>

namespace sf::pipeline {

struct SvgOptions {
  // The whole picture, in px; the time axis gets what the labels leave. 0: wide enough that a
  // block of typical duration has room for its label, from 1200 up to 4000 px.
  int width = 0;
  int row_height = 34;     // one stage's row, in px
  bool standalone = true;  // an .svg file (XML declaration, xmlns); false to inline it in HTML
};

// The picture as SVG text.
std::string render_svg(const Timeline& timeline, const SvgOptions& options = {});

// The fill of a block of `kind` on `chunk` of `chunks`, "#rrggbb"; the HTML legend uses it too.
// Sends and receives get the tick colour.
std::string action_colour(ActionKind kind, int chunk = 0, int chunks = 1);

// The colour of the idle lane behind the blocks, "#rrggbb".
std::string idle_colour();

// The colour of a marker's dashed line and label, "#rrggbb"; the HTML legend uses it too.
std::string marker_colour();

// The fill of a collective's block, "#rrggbb": one colour per known op (AllReduce, AllGather,
// ReduceScatter, AlltoAll, Broadcast), grey for any other.
std::string collective_colour(std::string_view op);

// The collective ops in any of `timelines`, known ops first in the order above, then the
// others by name: what a legend lists.
std::vector<std::string> collective_ops(const std::vector<Timeline>& timelines);

// How pictures and tables write a timeline unit: "units" for the simulator's, "\u00b5s" for "us",
// any other unit as it is.
std::string unit_name(std::string_view unit);

// `text` with &, <, >, " and ' written as XML entities.
std::string xml_escape(std::string_view text);

}  // namespace sf::pipeline
