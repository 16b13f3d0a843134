/* dcoll: MPI-native collectives with an ABI-stable C interface.
 * The umbrella header: include this one. */
#ifndef DCOLL_DCOLL_H
#define DCOLL_DCOLL_H

#include "dcoll/common.h"
#include "dcoll/types.h"
#include "dcoll/init.h"
#include "dcoll/group.h"
#include "dcoll/work.h"
#include "dcoll/collectives.h"
#include "dcoll/plan.h"
#include "dcoll/neighbor.h"
#include "dcoll/store.h"
#include "dcoll/rendezvous.h"
#include "dcoll/spawn.h"
#include "dcoll/backend.h"

#endif
