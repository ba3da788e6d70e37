// The comm layer in one include: transports, groups and every collective (DESIGN.md, comm/).
#pragma once

#include "comm/all_gather.h"
#include "comm/all_reduce.h"
#include "comm/all_to_all.h"
#include "comm/barrier.h"
#include "comm/broadcast.h"
#include "comm/group.h"
#include "comm/inproc/transport.h"
#include "comm/neighbor_exchange.h"
#include "comm/neighbor_exchange_v2.h"
#include "comm/rank_context.h"
#include "comm/reduce_scatter.h"
#include "comm/send_recv.h"
#include "comm/transport.h"
#include "comm/work.h"
