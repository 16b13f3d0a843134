/* The file store: a log of records on a shared file system, appended
 * under flock() and replayed by every handle, so processes that share
 * only the file see one table. Waits poll the file. The last handle to
 * close removes the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "store.h"
#include "store_table.h"

/* Record: u8 kind ('S' set, 'D' delete), u32 key length, u32 value
 * length (host order: the file is shared by one job's hosts, which agree),
 * key, value. */
#define REC_HDR 9

/* Handles open on the file: counted in the file itself, under a key no
 * dcoll_store_* call can make (keys there are non-empty C strings that
 * never start with \001... nor are counted by num_keys). */
static const struct wire_str USERS = {(const uint8_t *)"\001users", 6};

struct file_store {
    struct dcoll_store base;
    int fd;
    char *path;
    off_t pos;                /* how much of the file is replayed */
    struct kv_table kv;
};

static dcoll_status_t sys_error(struct file_store *f, const char *what)
{
    return dcoll_error(DCOLL_ERR_IO, "file store %s: %s: %s", f->path, what,
                       strerror(errno));
}

static dcoll_status_t lock(struct file_store *f)
{
    while (flock(f->fd, LOCK_EX))
        if (errno != EINTR)
            return sys_error(f, "flock");
    return DCOLL_SUCCESS;
}

static void unlock(struct file_store *f)
{
    flock(f->fd, LOCK_UN);
}

/* Replay what others appended since we last looked. Under the lock. */
static dcoll_status_t refresh(struct file_store *f)
{
    struct stat sb;
    if (fstat(f->fd, &sb))
        return sys_error(f, "fstat");
    if (sb.st_size < f->pos)
        return dcoll_error(DCOLL_ERR_IO, "file store %s: the file shrank "
                           "under us (removed or truncated by another "
                           "program?)", f->path);
    size_t n = (size_t)(sb.st_size - f->pos);
    if (!n)
        return DCOLL_SUCCESS;
    uint8_t *buf = malloc(n);
    if (!buf)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
    ssize_t got = pread(f->fd, buf, n, f->pos);
    if (got != (ssize_t)n) {
        free(buf);
        return sys_error(f, "read");
    }
    size_t at = 0;
    dcoll_status_t st = DCOLL_SUCCESS;
    while (!st && at < n) {
        uint32_t kl, vl;
        if (n - at < REC_HDR)
            break;
        memcpy(&kl, buf + at + 1, 4);
        memcpy(&vl, buf + at + 5, 4);
        if (kl > DCOLL_STORE_MAX_KEY || vl > DCOLL_STORE_MAX_VALUE ||
            n - at - REC_HDR < (size_t)kl + vl ||
            (buf[at] != 'S' && buf[at] != 'D')) {
            st = dcoll_error(DCOLL_ERR_IO, "file store %s: record at byte "
                             "%lld is corrupt", f->path,
                             (long long)(f->pos + (off_t)at));
            break;
        }
        struct wire_str k = {buf + at + REC_HDR, kl};
        struct wire_str v = {buf + at + REC_HDR + kl, vl};
        if (buf[at] == 'S' ? kv_put(&f->kv, k, v) != KV_OK
                           : (kv_erase(&f->kv, k), false))
            st = dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
        at += REC_HDR + kl + vl;
    }
    if (!st && at != n)
        st = dcoll_error(DCOLL_ERR_IO, "file store %s: a record was cut "
                         "short", f->path);
    f->pos += (off_t)at;
    free(buf);
    return st;
}

/* Append one record, already applied to our table. Under the lock. */
static dcoll_status_t append(struct file_store *f, char kind,
                             struct wire_str k, struct wire_str v)
{
    size_t n = REC_HDR + k.len + v.len;
    uint8_t *rec = malloc(n);
    if (!rec)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
    rec[0] = (uint8_t)kind;
    memcpy(rec + 1, &k.len, 4);
    memcpy(rec + 5, &v.len, 4);
    memcpy(rec + REC_HDR, k.p, k.len);
    if (v.len)
        memcpy(rec + REC_HDR + k.len, v.p, v.len);
    ssize_t w = pwrite(f->fd, rec, n, f->pos);
    free(rec);
    if (w != (ssize_t)n)
        return sys_error(f, "write");
    f->pos += (off_t)n;
    return DCOLL_SUCCESS;
}

static struct wire_str K(const char *key)
{
    return (struct wire_str){(const uint8_t *)key, (uint32_t)strlen(key)};
}

static dcoll_status_t copy_out(struct kv *e, struct store_val *out)
{
    out->len = e ? e->vlen : 0;
    out->p = malloc(out->len ? out->len : 1);
    if (!out->p)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
    if (out->len)
        memcpy(out->p, e->val, out->len);
    return DCOLL_SUCCESS;
}

static dcoll_status_t put_logged(struct file_store *f, struct wire_str k,
                                 struct wire_str v)
{
    if (kv_put(&f->kv, k, v) != KV_OK)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
    return append(f, 'S', k, v);
}

static dcoll_status_t f_set(dcoll_store_t *s, const char *key, const void *v,
                            size_t n)
{
    struct file_store *f = (struct file_store *)s;
    dcoll_status_t st = lock(f);
    if (st)
        return st;
    if (!(st = refresh(f)))
        st = put_logged(f, K(key), (struct wire_str){v, (uint32_t)n});
    unlock(f);
    return st;
}

static dcoll_status_t f_add_raw(struct file_store *f, struct wire_str k,
                                int64_t d, int64_t *sum)
{
    dcoll_status_t st = lock(f);
    if (st)
        return st;
    if (!(st = refresh(f))) {
        switch (kv_add(&f->kv, k, d, sum)) {
        case KV_OK: {
            struct kv *e = kv_find(&f->kv, k);
            st = append(f, 'S', k, (struct wire_str){e->val, e->vlen});
            break;
        }
        case KV_NOT_NUMBER:
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "file store: the "
                             "value under the key is not an integer");
            break;
        case KV_OVERFLOW:
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "file store: "
                             "adding %lld, the sum would overflow a 64-bit "
                             "integer; the value is unchanged", (long long)d);
            break;
        case KV_NO_MEMORY:
        case KV_FULL:   /* the file store has no limit */
            st = dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
            break;
        }
    }
    unlock(f);
    return st;
}

static dcoll_status_t f_add(dcoll_store_t *s, const char *key, int64_t d,
                            int64_t *sum)
{
    return f_add_raw((struct file_store *)s, K(key), d, sum);
}

static dcoll_status_t f_cas(dcoll_store_t *s, const char *key, const void *e,
                            size_t el, const void *d, size_t dl,
                            struct store_val *now)
{
    struct file_store *f = (struct file_store *)s;
    struct wire_str k = K(key), des = {d, (uint32_t)dl};
    dcoll_status_t st = lock(f);
    if (st)
        return st;
    if (!(st = refresh(f))) {
        struct kv *cur;
        if (kv_cas(&f->kv, k, (struct wire_str){e, (uint32_t)el}, des, &cur))
            st = dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
        else if (cur && cur->vlen == dl && (!dl || !memcmp(cur->val, d, dl)))
            st = append(f, 'S', k, des);
        if (!st)
            st = copy_out(kv_find(&f->kv, k), now);
    }
    unlock(f);
    return st;
}

/* Poll until the keys exist or the time is up. */
static dcoll_status_t f_poll(struct file_store *f, int n,
                             const struct wire_str *keys, double timeout,
                             struct store_val *out)
{
    double deadline = dcoll_now() + timeout, pause = 0.001;
    for (;;) {
        dcoll_status_t st = lock(f);
        if (st)
            return st;
        st = refresh(f);
        bool ready = !st && kv_all(&f->kv, n, keys);
        if (ready && out)
            st = copy_out(kv_find(&f->kv, keys[0]), out);
        unlock(f);
        if (st || ready)
            return st;
        if (dcoll_now() >= deadline)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "file store %s: the keys "
                               "did not appear within %g s", f->path,
                               timeout);
        usleep((useconds_t)(pause * 1e6));
        if (pause < 0.05)
            pause *= 2;
    }
}

static dcoll_status_t f_get(dcoll_store_t *s, const char *key, double t,
                            struct store_val *out)
{
    struct wire_str k = K(key);
    return f_poll((struct file_store *)s, 1, &k, t, out);
}

static dcoll_status_t f_keys(dcoll_store_t *s, const char *const *keys,
                             int n, double t, int *exist)
{
    struct file_store *f = (struct file_store *)s;
    struct wire_str ks[255];
    for (int i = 0; i < n; i++)
        ks[i] = K(keys[i]);
    if (!exist)
        return f_poll(f, n, ks, t, NULL);
    dcoll_status_t st = lock(f);
    if (st)
        return st;
    if (!(st = refresh(f)))
        *exist = kv_all(&f->kv, n, ks);
    unlock(f);
    return st;
}

static dcoll_status_t f_wait(dcoll_store_t *s, const char *const *keys, int n,
                             double t)
{
    return f_keys(s, keys, n, t, NULL);
}

static dcoll_status_t f_check(dcoll_store_t *s, const char *const *keys,
                              int n, int *exist)
{
    return f_keys(s, keys, n, 0, exist);
}

static dcoll_status_t f_del(dcoll_store_t *s, const char *key, int *deleted)
{
    struct file_store *f = (struct file_store *)s;
    dcoll_status_t st = lock(f);
    if (st)
        return st;
    if (!(st = refresh(f))) {
        *deleted = kv_erase(&f->kv, K(key));
        if (*deleted)
            st = append(f, 'D', K(key), (struct wire_str){NULL, 0});
    }
    unlock(f);
    return st;
}

static dcoll_status_t f_num_keys(dcoll_store_t *s, int64_t *count)
{
    struct file_store *f = (struct file_store *)s;
    dcoll_status_t st = lock(f);
    if (st)
        return st;
    if (!(st = refresh(f)))
        *count = (int64_t)f->kv.n - (kv_find(&f->kv, USERS) != NULL);
    unlock(f);
    return st;
}

static void f_destroy(dcoll_store_t *s)
{
    struct file_store *f = (struct file_store *)s;
    int64_t left = 1;
    /* Last one out removes the file, under the lock, so that a late
     * opener either sees the whole log or starts a new one. */
    if (f_add_raw(f, USERS, -1, &left) == DCOLL_SUCCESS && left == 0 &&
        lock(f) == DCOLL_SUCCESS) {
        unlink(f->path);
        unlock(f);
    }
    close(f->fd);
    kv_free(&f->kv);
    free(f->path);
    free(f);
}

static const struct store_ops file_ops = {
    "file", f_set, f_get, f_add, f_cas, f_wait, f_check, f_del, f_num_keys,
    f_destroy,
};

dcoll_status_t dcoll_store_file_open(dcoll_store_t **out, const char *path,
                                     const dcoll_store_params_t *p)
{
    struct file_store *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "file store: no memory");
    }
    f->base = (struct dcoll_store){DCOLL_STORE_MAGIC, &file_ops, p->timeout,
                                   0, false};
    for (;;) {
        f->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (f->fd < 0) {
            dcoll_status_t st = sys_error(f, "open");
            free(f->path);
            free(f);
            return st;
        }
        /* The last user of an old store may have removed the file between
         * our open and our lock: then open again. */
        struct stat a, b;
        if (lock(f) != DCOLL_SUCCESS)
            break;   /* f_add_raw below reports it */
        {
            bool same = fstat(f->fd, &a) == 0 && stat(path, &b) == 0 &&
                        a.st_ino == b.st_ino && a.st_dev == b.st_dev;
            unlock(f);
            if (same)
                break;
        }
        close(f->fd);
    }
    int64_t users;
    dcoll_status_t st = f_add_raw(f, USERS, 1, &users);
    if (st) {
        close(f->fd);
        kv_free(&f->kv);
        free(f->path);
        free(f);
        return st;
    }
    *out = &f->base;
    return DCOLL_SUCCESS;
}
