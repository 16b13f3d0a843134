/* Who this process is, for reports and recorder files: the launcher's
 * job and step where it says (SLURM, Open MPI, or DCOLL_JOB_ID set by the
 * program's own launcher), else rank 0's host and pid, which every rank
 * learns in dcoll_init's gather of host names, so that one job's files
 * share a name without another exchange. MPICH's hydra gives its ranks no
 * job id, so it takes the last rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"

static struct dcoll_job job;

static void copy_env(char *out, size_t cap, const char *name)
{
    const char *v = getenv(name);
    snprintf(out, cap, "%s", v ? v : "");
}

/* in, with what a file name should not hold turned to '_'. */
static void name_safe(char *out, size_t cap, const char *in)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) {
        char ch = in[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
                  ch == '_';
        out[i] = ok ? ch : '_';
    }
    out[i] = '\0';
}

void dcoll_job_set(int rank, int size, const char *host0, long pid0)
{
    memset(&job, 0, sizeof(job));
    job.rank = rank;
    job.size = size;
    job.pid = (long)getpid();
    dcoll_host_name(job.host, sizeof(job.host));
    copy_env(job.slurm_job, sizeof(job.slurm_job), "SLURM_JOB_ID");
    copy_env(job.slurm_step, sizeof(job.slurm_step), "SLURM_STEP_ID");
    copy_env(job.slurm_node, sizeof(job.slurm_node), "SLURMD_NODENAME");
    copy_env(job.ompi_job, sizeof(job.ompi_job), "OMPI_MCA_ess_base_jobid");
    char id[160];
    const char *own = getenv("DCOLL_JOB_ID");
    if (own && *own)
        snprintf(id, sizeof(id), "%s", own);
    else if (job.slurm_job[0] && job.slurm_step[0])
        snprintf(id, sizeof(id), "%s.%s", job.slurm_job, job.slurm_step);
    else if (job.slurm_job[0])
        snprintf(id, sizeof(id), "%s", job.slurm_job);
    else if (job.ompi_job[0])
        snprintf(id, sizeof(id), "%s", job.ompi_job);
    else
        snprintf(id, sizeof(id), "%s-%ld", host0 && *host0 ? host0
                                                            : job.host,
                 pid0 > 0 ? pid0 : job.pid);
    name_safe(job.id, sizeof(job.id), id);
}

const struct dcoll_job *dcoll_job(void)
{
    return &job;
}
