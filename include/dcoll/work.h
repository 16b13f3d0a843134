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

/* Waiting for many works (API 1.4). In each list a NULL entry is skipped,
 * as MPI skips MPI_REQUEST_NULL; test_any and wait_any also skip a work
 * already finished and reported by an earlier call, where MPI would have
 * set the request to MPI_REQUEST_NULL. A list with a handle that is not a
 * live work is refused, naming its index, before anything is waited
 * for. */

/* The index test_any and wait_any give when the list has no unfinished
 * work left. */
#define DCOLL_NO_WORK (-1)

/** Wait for every work of @p works (@p n entries). All are waited for,
 *  even after one fails; the status is the first failure in list order,
 *  its index in *failed (may be NULL; -1 when none failed). A work that
 *  had finished already counts with the status it finished with. */
DCOLL_API dcoll_status_t dcoll_work_wait_all(dcoll_work_t *const *works,
                                             int n, int *failed);

/** Make progress on the unfinished works of @p works and see whether one
 *  has finished: *done = 1 and *index = its index (the status is its
 *  own), or *done = 1 and *index = DCOLL_NO_WORK when none is left
 *  unfinished, or *done = 0 (DCOLL_SUCCESS) when none has finished yet.
 *  The work found counts as reported: later calls skip it. */
DCOLL_API dcoll_status_t dcoll_work_test_any(dcoll_work_t *const *works,
                                             int n, int *index, int *done);

/** Block until one unfinished work of @p works finishes: *index is its
 *  index and the status its own (then it counts as reported), or
 *  DCOLL_NO_WORK when none is left unfinished. */
DCOLL_API dcoll_status_t dcoll_work_wait_any(dcoll_work_t *const *works,
                                             int n, int *index);

#ifdef __cplusplus
}
#endif
#endif
