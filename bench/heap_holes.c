/* What was freed into glibc's free chunks: an LD_PRELOAD shim for bench/heap_holes.py
   (docs/history/benchmarks-log.md, "Session 54 (memtrace)").

   Every malloc, calloc, realloc and aligned allocation is passed to glibc's own (__libc_*: the heap's layout is the
   process's own, nothing here allocates from it) and, for blocks in glibc's heaps (not mapped apart), a shadow of the
   heap, one entry per 16 bytes, records the block's site (the Python frames running when it was allocated, when the
   thread holds the GIL, and the C callers) and the turn it was freed in. A heap walk at a
   mark then reads, for each free chunk, the sites whose blocks were last there. */
#define _GNU_SOURCE
#include <Python.h>
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#pragma weak PyGILState_Check
#pragma weak PyGILState_GetThisThreadState
#pragma weak PyCode_Addr2Line

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define FRAMES 6
#define C_FRAMES 4
#define REGION_SHIFT 26 /* 64 MiB: a secondary heap's size and alignment */
#define REGIONS 256
#define GRANULES (1u << (REGION_SHIFT - 4))
#define SITES (1u << 20)
#define TEXT 384

typedef struct {
    int32_t site, freed;
} Shadow;

typedef struct {
    uint64_t key;
    void *c[C_FRAMES];
    void *code[FRAMES];
    int32_t line[FRAMES];
    char text[TEXT];
} Site;

static uintptr_t region_base[REGIONS];
static Shadow *region_shadow[REGIONS];
static Site *sites;
static uint32_t site_count = 1; /* 0: no site known */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int32_t turn;
static volatile int tracing;
static __thread int busy;

void heap_holes_turn(int32_t now) { turn = now; }
void heap_holes_start(void) { tracing = 1; }
Site *heap_holes_sites(uint32_t *count) { *count = site_count; return sites; }

static Shadow *shadow_of(uintptr_t address, int make) {
    uintptr_t base = address >> REGION_SHIFT;
    for (int i = 0; i < REGIONS; i++) {
        if (region_base[i] == base && region_shadow[i]) return region_shadow[i] + ((address >> 4) & (GRANULES - 1));
        if (!region_shadow[i]) {
            if (!make) return NULL;
            pthread_mutex_lock(&lock);
            if (!region_shadow[i]) {
                void *made = mmap(NULL, GRANULES * sizeof(Shadow), PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                region_base[i] = base;
                __atomic_store_n(&region_shadow[i], (Shadow *)made, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&lock);
            i--; /* look at it again: made here or by another thread */
        }
    }
    return NULL;
}

Shadow *heap_holes_shadow(uintptr_t address) { return shadow_of(address, 0); }

static void ascii(char **out, char *end, PyObject *text) {
    if (!text || !PyUnicode_Check(text) || !PyUnicode_IS_COMPACT_ASCII(text)) return;
    const char *data = (const char *)(((PyASCIIObject *)text) + 1);
    Py_ssize_t n = ((PyASCIIObject *)text)->length;
    const char *cut = strstr(data, "/work/"); /* paths shortened to what follows the checkout or site-packages */
    const char *packages = strstr(data, "site-packages/");
    if (packages) cut = packages + 14, n -= cut - data, data = cut;
    else if (cut) { const char *slash = strchr(cut + 6, '/'); slash = slash ? strchr(slash + 1, '/') : NULL;
        if (slash) n -= slash + 1 - data, data = slash + 1; }
    while (n-- > 0 && *out < end - 1) *(*out)++ = *data++;
}

static int32_t site_now(void) {
    void *c[C_FRAMES + 1] = {0};
    int depth = backtrace(c, C_FRAMES + 1); /* c[0] is this shim */
    (void)depth;
    void *code[FRAMES] = {0};
    int offset[FRAMES] = {0};
    PyThreadState *state = (PyGILState_Check && PyGILState_GetThisThreadState) ? PyGILState_GetThisThreadState() : NULL;
    if (state && PyGILState_Check() && state->cframe) {
        _PyInterpreterFrame *frame = state->cframe->current_frame;
        for (int i = 0; frame && i < FRAMES; frame = frame->previous) {
            if (_PyFrame_IsIncomplete(frame)) continue;
            code[i] = frame->f_code;
            offset[i++] = (int)((frame->prev_instr - _PyCode_CODE(frame->f_code)) * sizeof(_Py_CODEUNIT));
        }
    }
    uint64_t key = 1469598103934665603ull;
    for (int i = 1; i <= C_FRAMES; i++) key = (key ^ (uintptr_t)c[i]) * 1099511628211ull;
    for (int i = 0; i < FRAMES; i++) key = ((key ^ (uintptr_t)code[i]) * 1099511628211ull ^ offset[i]) * 1099511628211ull;
    key |= 1;
    uint32_t at = (uint32_t)(key >> 20) & (SITES - 1);
    for (;;) {
        uint64_t held = __atomic_load_n(&sites[at].key, __ATOMIC_ACQUIRE);
        if (held == key) return (int32_t)at;
        if (held == 0) break;
        at = (at + 1) & (SITES - 1);
    }
    pthread_mutex_lock(&lock);
    while (sites[at].key && sites[at].key != key) at = (at + 1) & (SITES - 1);
    if (!sites[at].key && site_count < SITES / 2) {
        Site *site = &sites[at];
        for (int i = 0; i < C_FRAMES; i++) site->c[i] = c[i + 1];
        char *out = site->text, *end = site->text + TEXT;
        for (int i = 0; i < FRAMES && code[i]; i++) {
            PyCodeObject *co = (PyCodeObject *)code[i];
            site->code[i] = co;
            site->line[i] = PyCode_Addr2Line ? PyCode_Addr2Line(co, offset[i]) : -1;
            if (i && out < end - 4) memcpy(out, " <- ", 4), out += 4;
            ascii(&out, end, co->co_filename);
            if (out < end - 12) out += snprintf(out, end - out, ":%d ", site->line[i]);
            ascii(&out, end, co->co_name);
        }
        *out = 0;
        site_count++;
        __atomic_store_n(&site->key, key, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return sites[at].key == key ? (int32_t)at : 0;
}

static size_t chunk_size(void *mem) { return ((size_t *)mem)[-1] & ~(size_t)7; }
static int mapped_apart(void *mem) { return ((size_t *)mem)[-1] & 2; }

static void born(void *mem) {
    if (!mem || !tracing || busy || mapped_apart(mem)) return;
    busy = 1;
    int32_t site = site_now();
    uintptr_t from = (uintptr_t)mem, to = (uintptr_t)mem - 16 + chunk_size(mem);
    for (uintptr_t at = from; at < to; at += 16) {
        Shadow *s = shadow_of(at, 1);
        if (s) s->site = site, s->freed = -1;
    }
    busy = 0;
}

static void died(void *mem) {
    if (!mem || !tracing || busy || mapped_apart(mem)) return;
    uintptr_t from = (uintptr_t)mem, to = (uintptr_t)mem - 16 + chunk_size(mem);
    for (uintptr_t at = from; at < to; at += 16) {
        Shadow *s = shadow_of(at, 0);
        if (s) s->freed = turn;
    }
}

__attribute__((constructor)) static void start(void) {
    sites = mmap(NULL, SITES * sizeof(Site), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *warm[2];
    busy = 1;
    backtrace(warm, 2); /* loads libgcc's unwinder now, not inside a malloc */
    busy = 0;
}

void *malloc(size_t n) { void *p = __libc_malloc(n); born(p); return p; }
void *calloc(size_t k, size_t n) { void *p = __libc_calloc(k, n); born(p); return p; }
void free(void *p) { died(p); __libc_free(p); }
void *realloc(void *p, size_t n) {
    if (p && tracing && !busy && !mapped_apart(p)) {
        size_t before = chunk_size(p);
        void *q = __libc_realloc(p, n);
        if (q != p) { /* moved: the old block is free now (its shadow is only read where glibc says free) */
            uintptr_t from = (uintptr_t)p, to = (uintptr_t)p - 16 + before;
            for (uintptr_t at = from; at < to; at += 16) { Shadow *s = shadow_of(at, 0); if (s) s->freed = turn; }
        }
        born(q);
        return q;
    }
    void *q = __libc_realloc(p, n);
    born(q);
    return q;
}
void *memalign(size_t a, size_t n) { void *p = __libc_memalign(a, n); born(p); return p; }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    void *p = __libc_memalign(a, n);
    if (!p) return 12;
    born(p);
    *out = p;
    return 0;
}

/* [first, end) copied as another process would read it (process_vm_readv): a heap another thread shrinks meanwhile
   is a short read (NULL), not a fault. */
static char *copied(uintptr_t first, uintptr_t end) {
    size_t length = end - first;
    char *copy = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (copy == MAP_FAILED) return NULL;
    struct iovec local = {copy, length}, remote = {(void *)first, length};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)length) return copy;
    munmap(copy, length);
    return NULL;
}

static size_t size_at(const char *copy, uintptr_t first, uintptr_t p) {
    return ((const size_t *)(copy + (p - first)))[1];
}

/* Each free chunk of ``lo`` < size <= ``hi`` of one heap, tallied: its bytes by the site last there, into
   ``by_site[site]`` when freed more than ``recent`` turns before ``now`` (or not known freed) and
   ``by_site[sites + site]`` otherwise; its size by the site of the block after it (``by_next``); its bytes by turns
   since freed (``by_age``: 0, 1, <=10, <=100, <=1000, more, not known freed); and every free chunk's size by class
   (``by_class``: <=512, <=4 KiB, <=64 KiB, more, the top). A chunk is free when the next one's PREV_INUSE bit is
   clear (a tcache or fast bin's chunk, under 1 KiB, reads as in use). Nothing is allocated from the heaps. Returns the
   chunks tallied, or -1 if the walk met a size that does not fit. */
long heap_holes_tally(uintptr_t first, uintptr_t end, size_t lo, size_t hi, int32_t now, int32_t recent,
                      int64_t *by_site, int64_t *by_next, int64_t *by_age, int64_t *by_class, size_t sites) {
    char *copy = copied(first, end);
    if (!copy) return -1;
    long n = 0;
    for (uintptr_t p = first; p + 16 <= end;) {
        size_t size = size_at(copy, first, p) & ~(size_t)7;
        if (size < 32 || (size & 15) || p + size > end) { n = -1; break; }
        int top = p + size + 16 > end;
        if (top || !(size_at(copy, first, p + size) & 1)) {
            if (by_class) by_class[top ? 4 : size <= 512 ? 0 : size <= 4096 ? 1 : size <= 65536 ? 2 : 3] += size;
            if (!top && size > lo && size <= hi) {
                Shadow *next = shadow_of(p + size + 16, 0);
                by_next[next && next->site >= 0 && (size_t)next->site < sites ? next->site : 0] += size;
                for (uintptr_t at = p; at < p + size; at += 16) {
                    Shadow *s = shadow_of(at, 0);
                    int32_t site = s && s->site >= 0 && (size_t)s->site < sites ? s->site : 0;
                    int32_t age = s && s->freed >= 0 ? now - s->freed : -1;
                    by_site[(age < 0 || age > recent ? 0 : sites) + site] += 16;
                    by_age[age < 0 ? 6 : age == 0 ? 0 : age == 1 ? 1 : age <= 10 ? 2 : age <= 100 ? 3 : age <= 1000 ? 4 : 5] += 16;
                }
                n++;
            }
        }
        p += size;
    }
    munmap(copy, end - first);
    return n;
}

/* Whether the chunks from ``first`` walk to ``end`` (0), each size fitting; -1 if not: ``first`` is no heap's first
   chunk, or a chunk was being changed by another thread. */
int heap_holes_fits(uintptr_t first, uintptr_t end) {
    return heap_holes_tally(first, end, 0, 0, 0, 0, NULL, NULL, NULL, NULL, 0) >= 0 ? 0 : -1;
}
