/* The MPI library's name as tuning tables give it (tuning.c, and
 * dcoll-tune, which writes them): the first line of
 * MPI_Get_library_version, compared with spaces and commas as one. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "mpi_internal.h"

void dcoll_mpi_squeeze(char *s)
{
    char *w = s;
    bool space = false;
    for (char *r = s; *r; r++) {
        if (*r == ',' || isspace((unsigned char)*r)) {
            space = w != s;
            continue;
        }
        if (space)
            *w++ = ' ';
        space = false;
        *w++ = *r;
    }
    *w = '\0';
}

void dcoll_mpi_library(char *out, size_t cap)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    v[len >= 0 && len < (int)sizeof(v) ? len : (int)sizeof(v) - 1] = '\0';
    v[strcspn(v, "\r\n")] = '\0';
    size_t n = strlen(v);
    while (n && isspace((unsigned char)v[n - 1]))
        v[--n] = '\0';
    snprintf(out, cap, "%s", v + strspn(v, " \t"));
}
