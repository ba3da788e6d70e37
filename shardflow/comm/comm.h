/// @file
/// The comm layer in one include: transports, groups and every collective (DESIGN.md, comm/).
#pragma once

#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/all_reduce.h>
#include <shardflow/comm/all_to_all.h>
#include <shardflow/comm/barrier.h>
#include <shardflow/comm/broadcast.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/inproc/transport.h>
#include <shardflow/comm/neighbor_exchange.h>
#include <shardflow/comm/neighbor_exchange_v2.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/comm/reduce_scatter.h>
#include <shardflow/comm/send_recv.h>
#include <shardflow/comm/transport.h>
#include <shardflow/comm/work.h>
