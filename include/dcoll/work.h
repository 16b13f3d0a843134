/* dcoll: handles of operations in flight. */
#ifndef DCOLL_WORK_H
#define DCOLL_WORK_H

#include "dcoll/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An operation started by a collective called with a work pointer.
 *  Owned by the caller until dcoll_work_free. Not thread-safe. */
typedef struct dcoll_work dcoll_work_t;

/** Block until the operation is done. Returns the operation's own status:
 *  an error inside it comes out here, with its message. Calling again
 *  returns the same status. */
DCOLL_API dcoll_status_t dcoll_work_wait(dcoll_work_t *work);

/** *done = 1 when the operation has finished (then the status is the
 *  operation's, as for wait), else 0 and DCOLL_SUCCESS. Makes progress. */
DCOLL_API dcoll_status_t dcoll_work_test(dcoll_work_t *work, int *done);

/** For a finished receive: the world rank the message came from (useful
 *  with DCOLL_ANY_SOURCE). Other operations: DCOLL_ERR_INVALID_ARGUMENT;
 *  an unfinished receive: DCOLL_ERR_INVALID_STATE. */
DCOLL_API dcoll_status_t dcoll_work_source(dcoll_work_t *work, int *source);

/** Free a work handle and set *work to NULL. An unfinished operation is
 *  waited for first, since MPI cannot cancel a collective. NULL *work is
 *  fine. Returns the operation's status if it had to wait. */
DCOLL_API dcoll_status_t dcoll_work_free(dcoll_work_t **work);

#ifdef __cplusplus
}
#endif
#endif
