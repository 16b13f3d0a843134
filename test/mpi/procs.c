/* Test helper: what a job of spawned processes left behind. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procs.h"

void procs_note_pid(int rank)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/pid.%d", getenv("TMPDIR"), rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d\n", getpid());
        fclose(f);
    }
}

/* Is any process left in one of the job's process groups? */
int procs_left(const char *dir, int n)
{
    int left = 0;
    for (int r = 0; r < n; r++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/pid.%d", dir, r);
        FILE *f = fopen(path, "r");
        int pid = 0;
        if (!f)
            continue;
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
        if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) {
            fprintf(stderr, "process %d (rank %d) is still there\n", pid, r);
            left++;
        }
        /* Its process group: orted, ompi-server. */
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char stat[300], buf[512];
            snprintf(stat, sizeof(stat), "/proc/%s/stat", e->d_name);
            FILE *s = fopen(stat, "r");
            if (!s)
                continue;
            size_t got = fread(buf, 1, sizeof(buf) - 1, s);
            fclose(s);
            buf[got] = '\0';
            char *close = strrchr(buf, ')'), state;
            int ppid, pgrp;
            if (close && sscanf(close + 2, "%c %d %d", &state, &ppid,
                                &pgrp) == 3 &&
                pgrp == pid && state != 'Z') {
                fprintf(stderr, "process %s of rank %d's group is still "
                        "there\n", e->d_name, r);
                left++;
            }
        }
        if (d)
            closedir(d);
    }
    return left;
}

