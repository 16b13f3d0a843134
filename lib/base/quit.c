/* Ending this process at once, as _exit does: a hang's or an abort's
 * exit, the keeper's and the PMI server's ends, a fenced rank. atexit's
 * handlers must not run there, but a coverage build (meson's
 * b_coverage) writes gcov's counters first, which _exit would drop: the
 * code those processes ran would count as never reached. */
#include <unistd.h>
#include "base.h"

#ifdef DCOLL_COVERAGE
void __gcov_dump(void);   /* libgcov's; once a process, later calls skip */
#endif

void dcoll_counters_flush(void)
{
#ifdef DCOLL_COVERAGE
    __gcov_dump();
#endif
}

void dcoll_exit_now(int code)
{
    dcoll_counters_flush();
    _exit(code);
}
