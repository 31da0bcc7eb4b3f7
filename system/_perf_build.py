"""cffi (API mode) builder of ``system._perf_ext``: perf_event_open groups in cgroup mode,
the batch readers of many small kernel files (``koord_read_files``: their bytes;
``koord_read_values``: the numbers in them), and the metric cache's window statistics
(``koord_window_stats``: means and nearest-rank percentiles of many windows in one call).

Built by ``pip install`` through ``setup.py``'s ``cffi_modules``. The C part only does what
Python cannot: fill ``struct perf_event_attr`` and make the syscall, open a group (leader
first, members attached to it) for one (cgroup fd, cpu), enable it as a whole, and close it.
Reads stay in Python: ``os.read`` of the leader plus ``struct`` is cheaper than a cffi call
(measured in bench/perf_events.py).
"""

from __future__ import annotations

from cffi import FFI

CDEF = """
#define KOORD_PERF_FLAG_PID_CGROUP ...
#define KOORD_PERF_READ_FORMAT ...

int koord_perf_open_one(uint32_t type, uint64_t config, int pid, int cpu, int group_fd,
                        unsigned long flags, int disabled);
int koord_perf_open_group(int cgroup_fd, int cpu, const uint32_t *types,
                          const uint64_t *configs, int n, int *fds_out);
int koord_perf_close_group(const int *fds, int n);
int koord_read_files(const char *anchors, int n_anchors, const char *paths, const int *anchor_of,
                     int n, char *out, long cap, int file_max, long *offsets, int *lens);
#define KOORD_VALUES_PER_FILE ...
#define KOORD_VALUE_FILE_MAX ...
#define KOORD_MAX_ANCHORS ...
#define KOORD_SAME_DIR ...
int koord_read_values(const char *anchors, int n_anchors, const char *specs, const int *anchor_of,
                      int n, int64_t *values, int *status);
int koord_window_stats(const uint64_t *addrs, const long *lens, int n, const int *pct_at,
                       const int *permilles, double *means, double *pcts);
int koord_page_window_stats(const uint64_t *addrs, const long *lens, int n, const int *pct_at,
                            const int *permilles, double *means, double *pcts);
"""

SOURCE = r"""
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#define KOORD_PERF_FLAG_PID_CGROUP PERF_FLAG_PID_CGROUP
/* one read of the leader returns: nr, time_enabled, time_running, value[nr] */
#define KOORD_PERF_READ_FORMAT (PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED \
                                | PERF_FORMAT_TOTAL_TIME_RUNNING)

/* The raw syscall with a counting attribute; returns the fd or -errno. */
int koord_perf_open_one(uint32_t type, uint64_t config, int pid, int cpu, int group_fd,
                        unsigned long flags, int disabled)
{
    struct perf_event_attr attr;
    long fd;

    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = type;
    attr.config = config;
    attr.read_format = KOORD_PERF_READ_FORMAT;
    attr.disabled = disabled ? 1 : 0;
    fd = syscall(SYS_perf_event_open, &attr, (pid_t)pid, cpu, group_fd,
                 flags | PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

int koord_perf_close_group(const int *fds, int n)
{
    int i, err = 0;

    /* members before the leader, so no member is ever orphaned of its group */
    for (i = n - 1; i >= 0; i--) {
        if (fds[i] >= 0 && close(fds[i]) < 0 && err == 0)
            err = -errno;
    }
    return err;
}

/* Open events[0..n) as one group counting the cgroup behind cgroup_fd on one cpu.
 * The leader starts disabled so that every member starts counting together when the
 * whole group is enabled. Returns 0 with fds_out[0..n) filled, or -errno with nothing
 * left open. */
int koord_perf_open_group(int cgroup_fd, int cpu, const uint32_t *types,
                          const uint64_t *configs, int n, int *fds_out)
{
    int i, fd, err;

    for (i = 0; i < n; i++)
        fds_out[i] = -1;
    for (i = 0; i < n; i++) {
        fd = koord_perf_open_one(types[i], configs[i], cgroup_fd, cpu,
                                 i == 0 ? -1 : fds_out[0], PERF_FLAG_PID_CGROUP, i == 0);
        if (fd < 0) {
            koord_perf_close_group(fds_out, i);
            for (i = 0; i < n; i++)
                fds_out[i] = -1;
            return fd;
        }
        fds_out[i] = fd;
    }
    if (ioctl(fds_out[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) < 0) {
        err = -errno;
        koord_perf_close_group(fds_out, n);
        for (i = 0; i < n; i++)
            fds_out[i] = -1;
        return err;
    }
    return 0;
}

#define KOORD_MAX_ANCHORS 64
/* Set in anchor_of[i] (beside the anchor): path i is a file name only, in the directory of
 * the path before it (the files of one cgroup follow each other in a batch, and their
 * directory was most of each path's bytes). */
#define KOORD_SAME_DIR 0x10000

/* Where the paths of a batch are made whole again: the directory part of the last path
 * given in full, and room to join a file name to it. */
struct koord_dir {
    const char *dir;
    size_t len; /* with its '/'; 0 for a path with none */
    char joined[PATH_MAX];
};

/* File i's path: `path` as given, or, with same_dir, the directory of the last path given
 * in full and `path` joined in d->joined. NULL (errno ENAMETOOLONG) when that is longer
 * than PATH_MAX. */
static const char *koord_file_path(const char *path, int same_dir, struct koord_dir *d)
{
    const char *slash;
    size_t len;

    if (!same_dir) {
        slash = strrchr(path, '/');
        d->dir = path;
        d->len = slash ? (size_t)(slash - path) + 1 : 0;
        return path;
    }
    len = strlen(path);
    if (d->len + len + 1 > sizeof(d->joined)) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (d->len)
        memcpy(d->joined, d->dir, d->len);
    memcpy(d->joined + d->len, path, len + 1);
    return d->joined;
}

/* Open file i: relative to its anchor directory (a shorter path walk: each component and
 * mount crossing from / costs ~0.25 us, a third of an open + close at cgroup depth), its
 * path then being the part below that directory; or by its whole path when it has none.
 * A file under an anchor that could not be opened fails as the anchor's open did. */
static int koord_open_file(const char *given, int anchor, const int *anchor_fds, struct koord_dir *d)
{
    const char *path = koord_file_path(given, anchor >= 0 && (anchor & KOORD_SAME_DIR), d);

    if (!path)
        return -1;
    if (anchor < 0)
        return open(path, O_RDONLY | O_CLOEXEC);
    anchor &= ~KOORD_SAME_DIR;
    if (anchor < KOORD_MAX_ANCHORS && anchor_fds[anchor] >= 0)
        return openat(anchor_fds[anchor], path, O_RDONLY | O_CLOEXEC);
    errno = anchor < KOORD_MAX_ANCHORS ? -anchor_fds[anchor] : EINVAL;
    return -1;
}

/* The anchor directories, opened (O_PATH) for one call; -errno for those that could not be. */
static void koord_open_anchors(const char *anchors, int n_anchors, int *anchor_fds)
{
    int i;

    for (i = 0; i < KOORD_MAX_ANCHORS; i++) {
        anchor_fds[i] = -EINVAL;
        if (i < n_anchors) {
            anchor_fds[i] = open(anchors, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (anchor_fds[i] < 0)
                anchor_fds[i] = -errno;
            anchors += strlen(anchors) + 1;
        }
    }
}

static void koord_close_anchors(const int *anchor_fds)
{
    int i;

    for (i = 0; i < KOORD_MAX_ANCHORS; i++) {
        if (anchor_fds[i] >= 0)
            close(anchor_fds[i]);
    }
}

/* Open, read once and close each of n files whose paths follow each other in `paths`
 * (each ends with a NUL), appending their bytes to out[0..cap). File i is opened relative
 * to anchor anchor_of[i] as in koord_read_values (anchors: the same packed directories).
 * File i's bytes are at out[offsets[i]], lens[i] long, or lens[i] = -errno. A file is read
 * with one read() of at most file_max bytes: lens[i] == file_max means it may be longer
 * (the caller rereads it). When less than file_max bytes of out are left, the rest get
 * -ENOBUFS. cffi releases the GIL around the call. Returns the number of files read. */
int koord_read_files(const char *anchors, int n_anchors, const char *paths, const int *anchor_of,
                     int n, char *out, long cap, int file_max, long *offsets, int *lens)
{
    int anchor_fds[KOORD_MAX_ANCHORS];
    struct koord_dir d = {NULL, 0, {0}};
    long used = 0;
    int i, fd, ok = 0;
    ssize_t got;

    koord_open_anchors(anchors, n_anchors, anchor_fds);
    for (i = 0; i < n; i++) {
        offsets[i] = used;
        if (cap - used < file_max) {
            lens[i] = -ENOBUFS;
        } else if ((fd = koord_open_file(paths, anchor_of[i], anchor_fds, &d)) < 0) {
            lens[i] = -errno;
        } else {
            got = read(fd, out + used, file_max);
            if (got < 0) {
                lens[i] = -errno;
            } else {
                lens[i] = (int)got;
                used += got;
                ok++;
            }
            close(fd);
        }
        paths += strlen(paths) + 1;
    }
    koord_close_anchors(anchor_fds);
    return ok;
}

#define KOORD_VALUES_PER_FILE 2
/* memory.stat, the longest file read this way, is ~1.5 KiB (v1) to ~3 KiB (v2) */
#define KOORD_VALUE_FILE_MAX 16384

/* The decimal integer at *p (an optional '-', then digits); *end past it, or NULL if none. */
static int64_t koord_parse_int(const char *p, const char **end)
{
    int negative = 0;
    int64_t v = 0;
    const char *start;

    if (*p == '-') {
        negative = 1;
        p++;
    }
    start = p;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    *end = p == start ? NULL : p;
    return negative ? -v : v;
}

/* The value of the "key value" line of text whose key is key[0..len), or -ENODATA. */
static int koord_keyed(const char *text, const char *key, size_t len, int64_t *value)
{
    const char *line = text, *end;

    while (*line) {
        if (strncmp(line, key, len) == 0 && line[len] == ' ') {
            *value = koord_parse_int(line + len + 1, &end);
            return end ? 0 : -EINVAL;
        }
        line = strchr(line, '\n');
        if (!line)
            break;
        line++;
    }
    return -ENODATA;
}

/* Open, read once, close and parse each of n small kernel files: no bytes leave C.
 * specs holds, for each file, its path and then its keys, each NUL-ended: keys is "" for
 * a file that holds one number (cpuacct.usage, memory.usage_in_bytes), else up to
 * KOORD_VALUES_PER_FILE keys separated by one space, looked up as "key value" lines.
 * anchors holds n_anchors directory paths (NUL-ended): they are opened (O_PATH) for the
 * call only, and file i, when anchor_of[i] >= 0, is opened relative to that directory, its
 * path being the part below it. File i's values go to values[i * KOORD_VALUES_PER_FILE + k]; status[i]
 * is 0, -errno, -ENODATA (a key missing), -EINVAL (not a number) or -EFBIG (longer than
 * KOORD_VALUE_FILE_MAX: the caller reads it another way). cffi releases the GIL around the
 * call. Returns the number of files parsed. */
int koord_read_values(const char *anchors, int n_anchors, const char *specs, const int *anchor_of,
                      int n, int64_t *values, int *status)
{
    char text[KOORD_VALUE_FILE_MAX + 1];
    int anchor_fds[KOORD_MAX_ANCHORS];
    struct koord_dir d = {NULL, 0, {0}};
    const char *keys, *key, *next, *end;
    int64_t *out;
    int i, k, fd, ok = 0, err;
    ssize_t got;

    koord_open_anchors(anchors, n_anchors, anchor_fds);
    for (i = 0; i < n; i++) {
        keys = specs + strlen(specs) + 1;
        out = values + (long)i * KOORD_VALUES_PER_FILE;
        fd = koord_open_file(specs, anchor_of[i], anchor_fds, &d);
        specs = keys + strlen(keys) + 1;
        if (fd < 0) {
            status[i] = -errno;
            continue;
        }
        got = read(fd, text, KOORD_VALUE_FILE_MAX);
        err = got < 0 ? -errno : 0;
        close(fd);
        if (err) {
            status[i] = err;
            continue;
        }
        if (got == KOORD_VALUE_FILE_MAX) {
            status[i] = -EFBIG;
            continue;
        }
        text[got] = '\0';
        if (!*keys) {
            next = text;
            while (*next == ' ' || *next == '\n')
                next++;
            out[0] = koord_parse_int(next, &end);
            status[i] = end ? 0 : -EINVAL;
        } else {
            err = 0;
            for (k = 0, key = keys; *key && k < KOORD_VALUES_PER_FILE && !err; k++) {
                next = strchr(key, ' ');
                if (!next)
                    next = key + strlen(key);
                err = koord_keyed(text, key, (size_t)(next - key), out + k);
                key = *next ? next + 1 : next;
            }
            status[i] = err;
        }
        if (!status[i])
            ok++;
    }
    koord_close_anchors(anchor_fds);
    return ok;
}

#define KOORD_SWAP(a, i, j) do { double t_ = (a)[i]; (a)[i] = (a)[j]; (a)[j] = t_; } while (0)

/* The k-th smallest (0-based) of a[0..n), partly reordering a (Hoare's selection with a
 * median-of-three pivot). Equal values are interchangeable, so the value is the one a
 * full sort would put at k. */
static double koord_select(double *a, long n, long k)
{
    long lo = 0, hi = n - 1, mid, i, j;
    double pivot;

    while (hi > lo) {
        mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo])
            KOORD_SWAP(a, lo, mid);
        if (a[hi] < a[lo])
            KOORD_SWAP(a, lo, hi);
        if (a[hi] < a[mid])
            KOORD_SWAP(a, mid, hi);
        pivot = a[mid];
        i = lo;
        j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (pivot < a[j])
                j--;
            if (i <= j) {
                KOORD_SWAP(a, i, j);
                i++;
                j--;
            }
        }
        /* a[lo..j] <= pivot <= a[i..hi], and what lies between equals the pivot */
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return a[k];
    }
    return a[k];
}

#define KOORD_TOP_MAX 32

/* The rank (1 = the largest) of nearest rank's pick among len values: koordlet's index
 * len * permille / 1000 - 1 (at least 0) of the ascending order, counted from the top. */
static long koord_rank_from_top(long len, int permille)
{
    long k = len * permille / 1000 - 1;

    return len - (k < 0 ? 0 : k);
}

/* Σ values[0..len) one addition after the other, and the m largest of them ascending in
 * top[0..m) (m <= len). The additions form one dependency chain, so the comparisons beside
 * them come nearly free: a high percentile costs about what the sum costs. */
static double koord_sum_and_top(const double *values, long len, double *top, long m)
{
    double sum = 0.0, v;
    long j, i;

    for (j = 0; j < len; j++) {
        v = values[j];
        sum += v;
        if (j < m) { /* filling: insertion into the sorted prefix */
            for (i = j; i > 0 && top[i - 1] > v; i--)
                top[i] = top[i - 1];
            top[i] = v;
        } else if (v > top[0]) { /* drop the smallest kept, slide v into place */
            for (i = 1; i < m && top[i] < v; i++)
                top[i - 1] = top[i];
            top[i - 1] = v;
        }
    }
    return sum;
}

/* For each of n windows of doubles (window i: lens[i] > 0 values at address addrs[i]): its
 * mean, the values summed one after the other from the oldest (as koordlet sums them in Go,
 * and as the Python fallback does: the same bits), and its percentiles permilles[pct_at[i]
 * .. pct_at[i + 1]) by koordlet's nearest rank (the value at index n * permille / 1000 - 1,
 * at least 0, of the sorted window) into pcts[pct_at[i] ..]. A pick among the top
 * KOORD_TOP_MAX values (p95, p99 of a few hundred) is kept during the sum; others are
 * selected in a copy. The windows are the metric cache's rings: read only, and the caller
 * keeps them unchanged during the call (cffi releases the GIL: only the event loop writes
 * them). Returns 0, or -ENOMEM. */
int koord_window_stats(const uint64_t *addrs, const long *lens, int n, const int *pct_at,
                       const int *permilles, double *means, double *pcts)
{
    const double *values;
    double *scratch = NULL, top[KOORD_TOP_MAX];
    long longest = 0, len, m, r;
    int i, p, copied;

    for (i = 0; i < n; i++) {
        for (p = pct_at[i]; p < pct_at[i + 1]; p++) {
            if (koord_rank_from_top(lens[i], permilles[p]) > KOORD_TOP_MAX && lens[i] > longest)
                longest = lens[i];
        }
    }
    if (longest && !(scratch = malloc(longest * sizeof(double))))
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        values = (const double *)(uintptr_t)addrs[i];
        len = lens[i];
        m = 0;
        for (p = pct_at[i]; p < pct_at[i + 1]; p++) {
            r = koord_rank_from_top(len, permilles[p]);
            if (r <= KOORD_TOP_MAX && r > m)
                m = r;
        }
        means[i] = koord_sum_and_top(values, len, top, m) / (double)len;
        copied = 0;
        for (p = pct_at[i]; p < pct_at[i + 1]; p++) {
            r = koord_rank_from_top(len, permilles[p]);
            if (r <= m) {
                pcts[p] = top[m - r];
                continue;
            }
            if (!copied) {
                memcpy(scratch, values, len * sizeof(double));
                copied = 1;
            }
            pcts[p] = koord_select(scratch, len, len - r);
        }
    }
    free(scratch);
    return 0;
}

/* koord_window_stats of windows of uint32 counts of 4 KiB pages (the metric cache's memory
 * series): each window is turned into its byte values as doubles (exact: a count below
 * 2^32 times 4096 is below 2^53), then figured as a window of doubles: the same bits as the
 * doubles the series would otherwise hold. Returns 0, or -ENOMEM. */
int koord_page_window_stats(const uint64_t *addrs, const long *lens, int n, const int *pct_at,
                            const int *permilles, double *means, double *pcts)
{
    const uint32_t *counts;
    double *bytes = NULL;
    uint64_t at;
    long longest = 0, j;
    int i, err = 0;

    for (i = 0; i < n; i++) {
        if (lens[i] > longest)
            longest = lens[i];
    }
    if (longest && !(bytes = malloc(longest * sizeof(double))))
        return -ENOMEM;
    for (i = 0; i < n && !err; i++) {
        counts = (const uint32_t *)(uintptr_t)addrs[i];
        for (j = 0; j < lens[i]; j++)
            bytes[j] = (double)counts[j] * 4096.0;
        at = (uint64_t)(uintptr_t)bytes;
        err = koord_window_stats(&at, lens + i, 1, pct_at + i, permilles, means + i, pcts);
    }
    free(bytes);
    return err;
}
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source("system._perf_ext", SOURCE)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
