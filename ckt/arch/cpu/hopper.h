/* ckt/arch/cpu/hopper.h — mbarrier, TMA and wgmma on the CPU emulator's nv
 * profile (API and layouts: ckt/arch/hopper.h). Included by ckt/arch/cpu.h.
 *
 * Functional models, not timing models:
 *   - an mbarrier is the emulator's own 64-bit encoding (emulator.h); a
 *     thread in ckt_mbar_wait parks until the phase completes, and a block
 *     whose every thread waits for something that cannot happen (a phase no
 *     one completes) fails with a deadlock report naming each wait's
 *     file:line;
 *   - a TMA load copies at once (into the swizzled layout, zeros outside the
 *     tensor) and then completes its bytes on the barrier, so a kernel that
 *     overwrites a stage still being read corrupts it here as on the GPU;
 *   - a wgmma computes at issue, per warp (its 16 rows of the 64), from the
 *     shared memory its descriptors address, decoded as the hardware does:
 *     a descriptor that does not match the tile's layout gives wrong numbers
 *     here too. Fences, commits and waits have nothing left to order.
 * Misuse the GPU would fault on or hang on — an uninitialized barrier, an
 * address outside shared memory, a misaligned tile, a TMA box whose first
 * column is not at a multiple of 16 bytes, lanes of a warp passing
 * different descriptors — stops the program naming the call site.
 */
#ifndef CKT_ARCH_CPU_HOPPER_H
#define CKT_ARCH_CPU_HOPPER_H

#include "ckt/arch/config.h"

#if defined(CKT_BACKEND_CPU)

#include "ckt/arch/cpu/emulator.h"
#include "ckt/arch/cpu/memory.h"
#include "ckt/arch/hopper.h"
#include "ckt/arch/numeric.h"

#include <string.h>

#define CKT_KERNEL_GRID_CONSTANT(name, T, p) CKT__KERNEL(name, T, p)
#define CKT_KERNEL_GRID_CONSTANT_BOUNDS(name, T, p, max_threads, min_blocks) CKT__KERNEL(name, T, p)

/* >>TMA host side: the map keeps its fields in the opaque words: [0] a
 * magic, [1] base, [2..5] dims, [6..8] strides (bytes), [9] the boxes (16
 * bits each), [10] elem_bytes | swizzle << 8 */
#define CKT__EMU_TMA_MAGIC 0x636b74746d613464ull /* "cktmta4d" */
static inline int ckt__emu_tma_fill(ckt_tma_desc *d, const void *base, unsigned elem_bytes, const uint64_t *dims,
                                    const uint64_t *strides, const unsigned *box, ckt_swizzle sw)
{
    memset(d, 0, sizeof *d);
    d->opaque[0] = CKT__EMU_TMA_MAGIC;
    d->opaque[1] = (uint64_t)(uintptr_t)base;
    for (int i = 0; i < 4; i++) {
        d->opaque[2 + i] = dims[i];
        d->opaque[9] |= (uint64_t)box[i] << (16 * i);
    }
    for (int i = 0; i < 3; i++)
        d->opaque[6 + i] = strides[i];
    d->opaque[10] = (uint64_t)elem_bytes | ((uint64_t)sw << 8);
    return 0;
}

static inline int ckt_tma_make_2d(ckt_tma_desc *d, const void *base, unsigned elem_bytes, uint64_t rows,
                                  uint64_t cols, uint64_t row_stride_bytes, unsigned box_rows, unsigned box_cols,
                                  ckt_swizzle sw)
{
    if (!d || !ckt__tma_args_ok(base, elem_bytes, rows, cols, row_stride_bytes, box_rows, box_cols, sw))
        return -1;
    const uint64_t dims[4] = {cols, rows, 1, 1}, strides[3] = {row_stride_bytes, 16, 16};
    const unsigned box[4] = {box_cols, box_rows, 1, 1};
    return ckt__emu_tma_fill(d, base, elem_bytes, dims, strides, box, sw);
}

static inline int ckt_tma_make_4d(ckt_tma_desc *d, const void *base, unsigned elem_bytes, const uint64_t dims[4],
                                  const uint64_t strides[3], const unsigned box[4], ckt_swizzle sw)
{
    if (!d || !ckt__tma_args4_ok(base, elem_bytes, dims, strides, box, sw))
        return -1;
    return ckt__emu_tma_fill(d, base, elem_bytes, dims, strides, box, sw);
}

#if CKT_EMU_WARP_SIZE == 32

#define CKT_HAS_WGMMA 1

/* >>mbarrier */
static inline uint64_t *ckt__emu_mbar_check(uint64_t *bar, const char *what, const char *file, int line)
{
    if ((uintptr_t)bar % 8 || !ckt__emu_in_shared(bar, 8))
        ckt__emu_die(file, line, "%s: %p is not an 8-byte aligned shared-memory address", what, (void *)bar);
    if ((*bar >> 62) & 1u)
        ckt__emu_die(file, line, "%s: the mbarrier at %p was never initialized (ckt_mbar_init)", what,
                     (void *)bar);
    return bar;
}

/* Completes the phase once nothing is missing: parity flips, counts reset. */
static inline void ckt__emu_mbar_settle(uint64_t *bar)
{
    const uint64_t v = *bar, expect = v & 0xfffffu, missing = (v >> 20) & 0xfffffu;
    const int64_t tx = (int64_t)(v << 2) >> 42; /* bits 40-61, signed */
    if (missing == 0 && tx == 0)
        *bar = expect | (expect << 20) | ((~v) & (1ull << 63));
}

static inline void ckt__emu_mbar_set(uint64_t *bar, uint64_t missing, int64_t tx)
{
    const uint64_t v = *bar;
    *bar = (v & 0xfffffu) | ((missing & 0xfffffu) << 20) | (((uint64_t)tx & 0x3fffffu) << 40) | (v & (1ull << 63));
    ckt__emu_mbar_settle(bar);
}

static inline void ckt__emu_mbar_init(uint64_t *bar, unsigned count, const char *file, int line)
{
    if ((uintptr_t)bar % 8 || !ckt__emu_in_shared(bar, 8))
        ckt__emu_die(file, line, "ckt_mbar_init: %p is not an 8-byte aligned shared-memory address", (void *)bar);
    if (count < 1 || count > 0xfffffu)
        ckt__emu_die(file, line, "ckt_mbar_init: count %u is not in 1..2^20-1", count);
    *bar = (uint64_t)count | ((uint64_t)count << 20);
}

/* tx: bytes announced (> 0) or landed (< 0); arrive: one arrival. */
static inline void ckt__emu_mbar_update(uint64_t *bar, int64_t tx, int arrive, const char *what, const char *file,
                                        int line)
{
    ckt__emu_mbar_check(bar, what, file, line);
    const uint64_t v = *bar;
    uint64_t missing = (v >> 20) & 0xfffffu;
    const int64_t pending = ((int64_t)(v << 2) >> 42) + tx;
    if (arrive) {
        if (missing == 0)
            ckt__emu_die(file, line, "%s: more arrivals than the mbarrier's count", what);
        missing--;
    }
    if (pending >= (1 << 21) || pending <= -(1 << 21))
        ckt__emu_die(file, line, "%s: the mbarrier's transaction count leaves its range (2^21 bytes)", what);
    ckt__emu_mbar_set(bar, missing, pending);
}

static inline void ckt__emu_mbar_wait(uint64_t *bar, unsigned parity, const char *file, int line)
{
    ckt__emu_mbar_check(bar, "ckt_mbar_wait", file, line);
    ckt__emu_worker *w = ckt__emu_self;
    ckt__emu_thread *t = w->cur;
    while (!ckt__emu_mbar_phase_done(bar, parity)) {
        t->state = CKT__EMU_AT_MBAR;
        t->op = CKT__EMU_WAIT_MBAR;
        t->op_ptr[0] = bar;
        t->op_arg = parity;
        t->file = file;
        t->line = line;
        ckt__emu_yield(w, t);
    }
}

#define ckt_mbar_init(bar, count) ckt__emu_mbar_init((bar), (count), __FILE__, __LINE__)
#define ckt_mbar_arrive(bar) ckt__emu_mbar_update((bar), 0, 1, "ckt_mbar_arrive", __FILE__, __LINE__)
#define ckt_mbar_arrive_expect_tx(bar, bytes)                                                     \
    ckt__emu_mbar_update((bar), (int64_t)(bytes), 1, "ckt_mbar_arrive_expect_tx", __FILE__, __LINE__)
#define ckt_mbar_wait(bar, parity) ckt__emu_mbar_wait((bar), (parity), __FILE__, __LINE__)

/* >>named barriers: completion when `count` threads have arrived (bar.sync
 * arrives and waits, bar.arrive only arrives) */
static inline void ckt__emu_named_barrier(unsigned id, unsigned count, int wait, const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("a named barrier", file, line);
    if (id < 1 || id > 15 || count == 0 || count % 32 || count > w->launch->nthreads)
        ckt__emu_die(file, line,
                     "named barrier %u of %u threads: ids are 1..15 (0 is the block's), counts multiples of 32 up "
                     "to the block's %u threads",
                     id, count, w->launch->nthreads);
    ckt__emu_thread *t = w->cur;
    const unsigned gen = w->named_gen[id];
    if (++w->named_count[id] == count) { /* the last arrival completes it */
        w->named_count[id] = 0;
        w->named_gen[id]++;
        return;
    }
    if (!wait)
        return;
    while (w->named_gen[id] == gen) {
        t->state = CKT__EMU_AT_MBAR;
        t->op = CKT__EMU_WAIT_NAMED;
        t->op_arg = id;
        t->value = gen;
        t->file = file;
        t->line = line;
        ckt__emu_yield(w, t);
    }
}
#define ckt_named_barrier_sync(id, count) ckt__emu_named_barrier((id), (count), 1, __FILE__, __LINE__)
#define ckt_named_barrier_arrive(id, count) ckt__emu_named_barrier((id), (count), 0, __FILE__, __LINE__)

/* >>TMA */
static inline void ckt__emu_tma_load_4d(void *smem, const ckt_tma_desc *d, int c0, int c1, int c2, int c3,
                                        uint64_t *bar, const char *file, int line)
{
    if (!d || d->opaque[0] != CKT__EMU_TMA_MAGIC)
        ckt__emu_die(file, line, "ckt_tma_load: %p is not a tensor map made by ckt_tma_make_2d / _4d", (const void *)d);
    const unsigned char *base = (const unsigned char *)(uintptr_t)d->opaque[1];
    const uint64_t *dims = &d->opaque[2], *strides = &d->opaque[6];
    unsigned box[4];
    for (int i = 0; i < 4; i++)
        box[i] = (unsigned)((d->opaque[9] >> (16 * i)) & 0xffffu);
    const unsigned eb = (unsigned)(d->opaque[10] & 0xffu);
    const ckt_swizzle sw = (ckt_swizzle)((d->opaque[10] >> 8) & 0xffffu);
    const size_t row_bytes = (size_t)box[0] * eb, rows = (size_t)box[1] * box[2] * box[3], bytes = row_bytes * rows;
    const unsigned align = sw == CKT_SWIZZLE_NONE ? 128u : 1024u;
    ckt__emu_worker *w = ckt__emu_self;
    if (((int64_t)c0 * eb) % 16 != 0) /* an H100 stops with "illegal instruction" */
        ckt__emu_die(file, line,
                     "ckt_tma_load: column %d of %u-byte elements is not at a multiple of 16 bytes "
                     "(a box's rows must start 16-byte aligned in the tensor)",
                     c0, eb);
    if (!ckt__emu_in_shared(smem, bytes) || (size_t)((unsigned char *)smem - w->shared) % align)
        ckt__emu_die(file, line,
                     "ckt_tma_load: destination %p (+%zu bytes) is not a %u-byte aligned shared-memory tile", smem,
                     bytes, align);
    const uint32_t off0 = (uint32_t)((unsigned char *)smem - w->shared);
    const int64_t at[4] = {c0, c1, c2, c3};
    for (size_t r = 0; r < rows; r++) {
        /* row r of the box: coordinates (c1 + r1, c2 + r2, c3 + r3) */
        const int64_t g1 = at[1] + (int64_t)(r % box[1]), g2 = at[2] + (int64_t)(r / box[1] % box[2]);
        const int64_t g3 = at[3] + (int64_t)(r / box[1] / box[2]);
        const int row_in = g1 >= 0 && g2 >= 0 && g3 >= 0 && (uint64_t)g1 < dims[1] && (uint64_t)g2 < dims[2] &&
                           (uint64_t)g3 < dims[3];
        for (unsigned c = 0; c < box[0]; c++) {
            const int64_t g0 = at[0] + c;
            unsigned char *to = w->shared + ckt_swizzle_offset(off0 + (uint32_t)(r * row_bytes + c * eb), sw);
            if (!row_in || g0 < 0 || (uint64_t)g0 >= dims[0])
                memset(to, 0, eb);
            else
                memcpy(to, base + (uint64_t)g1 * strides[0] + (uint64_t)g2 * strides[1] + (uint64_t)g3 * strides[2] +
                               (uint64_t)g0 * eb,
                       eb);
        }
    }
    ckt__emu_mbar_update(bar, -(int64_t)bytes, 0, "ckt_tma_load", file, line);
}
#define ckt_tma_load_2d(smem, d, col, row, bar)                                                   \
    ckt__emu_tma_load_4d((smem), (d), (col), (row), 0, 0, (bar), __FILE__, __LINE__)
#define ckt_tma_load_4d(smem, d, c0, c1, c2, c3, bar)                                             \
    ckt__emu_tma_load_4d((smem), (d), (c0), (c1), (c2), (c3), (bar), __FILE__, __LINE__)
#define ckt_fence_proxy_async() ((void)0)

/* >>wgmma */
static inline uint64_t ckt__emu_wgmma_desc(const void *smem, ckt_swizzle sw, unsigned lbo, unsigned sbo,
                                           const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!ckt__emu_in_shared(smem, 16) || (uintptr_t)smem % 16)
        ckt__emu_die(file, line, "ckt_wgmma_desc: %p is not a 16-byte aligned shared-memory address", smem);
    if (lbo % 16 || sbo % 16)
        ckt__emu_die(file, line, "ckt_wgmma_desc: lbo %u and sbo %u must be multiples of 16", lbo, sbo);
    const uint64_t mode = sw == CKT_SWIZZLE_128B ? 1 : sw == CKT_SWIZZLE_64B ? 2 : sw == CKT_SWIZZLE_32B ? 3 : 0;
    const uint32_t off = (uint32_t)((const unsigned char *)smem - w->shared);
    return (uint64_t)((off & 0x3ffffu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3fffu) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3fffu) << 32) | (mode << 62);
}
#define ckt_wgmma_desc(smem, sw, lbo, sbo) ckt__emu_wgmma_desc((smem), (sw), (lbo), (sbo), __FILE__, __LINE__)

/* Byte offset (in the block's shared memory) of element (r, k) of the
 * operand that descriptor desc addresses (ckt/arch/hopper.h), mn: MN-major. */
static inline uint32_t ckt__emu_wgmma_addr(uint64_t desc, unsigned r, unsigned k, int mn, unsigned eb)
{
    static const unsigned widths[4] = {0, 128, 64, 32};
    const uint32_t start = (uint32_t)(desc & 0x3fffu) << 4, lbo = (uint32_t)((desc >> 16) & 0x3fffu) << 4;
    const uint32_t sbo = (uint32_t)((desc >> 32) & 0x3fffu) << 4, W = widths[desc >> 62], T = 16 / eb;
    uint32_t x;
    if (!mn)
        x = W ? (r / 8) * sbo + (r % 8) * W + k * eb : (r / 8) * sbo + (k / T) * lbo + (r % 8) * 16 + (k % T) * eb;
    else
        x = W ? (r / (W / eb)) * lbo + (k / 8) * sbo + (k % 8) * W + (r % (W / eb)) * eb
              : (r / T) * sbo + (k / 8) * lbo + (k % 8) * 16 + (r % T) * eb;
    return ckt_swizzle_offset(start + x, W ? (ckt_swizzle)W : CKT_SWIZZLE_NONE);
}

/* kind: CKT__EMU_WG_F16, _BF16 (k16, 2-byte elements) or _E4M3 (k32, OCP
 * e4m3 bytes, both operands K-major) */
enum { CKT__EMU_WG_F16 = 0, CKT__EMU_WG_BF16 = 1, CKT__EMU_WG_E4M3 = 2 };
typedef struct ckt__emu_wgmma_op {
    unsigned n;
    int kind, a_regs, b_mn, accumulate;
    uint64_t desc_a, desc_b;
} ckt__emu_wgmma_op;

static inline float ckt__emu_wgmma_elem(const unsigned char *p, int kind)
{
    uint16_t bits;
    if (kind == CKT__EMU_WG_E4M3)
        return ckt_f32_from_e4m3(p[0]);
    memcpy(&bits, p, 2);
    return kind == CKT__EMU_WG_BF16 ? ckt_f32_from_bits((uint32_t)bits << 16) : ckt__f32_from_f16_bits_soft(bits);
}

/* One warp's 16 rows of D(64 x N) (+)= A(64 x K) B(K x N), K = 16 (16-bit)
 * or 32 (e4m3). Operands per lane: op_ptr[0] = d, [1] = the op, [2] = a
 * (registers, _rs: mma.sync's A fragment, m16n8k16 or m16n8k32). */
static inline void ckt__emu_wgmma_fn(ckt__emu_thread **lanes, unsigned nl)
{
    (void)nl;
    ckt__emu_worker *w = ckt__emu_self;
    const ckt__emu_wgmma_op *op = (const ckt__emu_wgmma_op *)lanes[0]->op_ptr[1];
    for (unsigned l = 1; l < 32; l++)
        if (memcmp(op, lanes[l]->op_ptr[1], sizeof *op) != 0)
            ckt__emu_die(lanes[l]->file, lanes[l]->line,
                         "wgmma: lane %u of warp %u passes other descriptors or flags than lane 0", l,
                         lanes[l]->warp);
    const int e4m3 = op->kind == CKT__EMU_WG_E4M3;
    const unsigned N = op->n, wr = 16 * (lanes[0]->warp % 4), K = e4m3 ? 32 : 16, eb = e4m3 ? 1 : 2;
    float A[16][32], B[32][256], D[16][256];
    for (unsigned l = 0; l < 32; l++) {
        const unsigned g = l / 4, t = l % 4;
        if (op->a_regs && e4m3) { /* register r: row g (+8 if r odd), keys 4t.. (+16 if r >= 2) */
            const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[2];
            for (unsigned i = 0; i < 16; i++)
                A[g + ((i / 4) & 1 ? 8 : 0)][4 * t + (i % 4) + (i >= 8 ? 16 : 0)] =
                    ckt_f32_from_e4m3((uint8_t)(a[i / 4] >> (8 * (i % 4))));
        } else if (op->a_regs) {
            const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[2];
            for (unsigned i = 0; i < 8; i++) {
                const uint16_t bits = (uint16_t)(a[i / 2] >> (16 * (i % 2)));
                A[g + ((i & 2) ? 8 : 0)][2 * t + (i & 1) + (i >= 4 ? 8 : 0)] =
                    op->kind == CKT__EMU_WG_BF16 ? ckt_f32_from_bits((uint32_t)bits << 16) : ckt__f32_from_f16_bits_soft(bits);
            }
        }
        const float *d = (const float *)lanes[l]->op_ptr[0];
        for (unsigned j = 0; j < N / 8; j++)
            for (unsigned i = 0; i < 4; i++)
                D[g + (i >= 2 ? 8 : 0)][8 * j + 2 * t + (i & 1)] = op->accumulate ? d[4 * j + i] : 0.0f;
    }
    const uint32_t limit = (uint32_t)w->shared_bytes - eb;
    for (unsigned r = 0; r < 16 && !op->a_regs; r++)
        for (unsigned k = 0; k < K; k++) {
            const uint32_t o = ckt__emu_wgmma_addr(op->desc_a, wr + r, k, 0, eb);
            if (o > limit)
                ckt__emu_die(lanes[0]->file, lanes[0]->line, "wgmma: descriptor A addresses byte %u, past shared memory", o);
            A[r][k] = ckt__emu_wgmma_elem(w->shared + o, op->kind);
        }
    for (unsigned c = 0; c < N; c++)
        for (unsigned k = 0; k < K; k++) {
            const uint32_t o = ckt__emu_wgmma_addr(op->desc_b, c, k, op->b_mn, eb);
            if (o > limit)
                ckt__emu_die(lanes[0]->file, lanes[0]->line, "wgmma: descriptor B addresses byte %u, past shared memory", o);
            B[k][c] = ckt__emu_wgmma_elem(w->shared + o, op->kind);
        }
    for (unsigned r = 0; r < 16; r++)
        for (unsigned c = 0; c < N; c++) {
            float acc = D[r][c];
            for (unsigned k = 0; k < K; k++)
                acc += A[r][k] * B[k][c];
            D[r][c] = acc;
        }
    for (unsigned l = 0; l < 32; l++) {
        float *d = (float *)lanes[l]->op_ptr[0];
        const unsigned g = l / 4, t = l % 4;
        for (unsigned j = 0; j < N / 8; j++)
            for (unsigned i = 0; i < 4; i++)
                d[4 * j + i] = D[g + (i >= 2 ? 8 : 0)][8 * j + 2 * t + (i & 1)];
    }
}

static inline void ckt__emu_wgmma(float *d, const uint32_t *a, uint64_t desc_a, uint64_t desc_b, int accumulate,
                                  unsigned n, int kind, int a_regs, int b_mn, const char *file, int line)
{
    ckt__emu_wgmma_op op;
    memset(&op, 0, sizeof op);
    op.n = n;
    op.kind = kind;
    op.a_regs = a_regs;
    op.b_mn = b_mn;
    op.accumulate = accumulate != 0;
    op.desc_a = a_regs ? 0 : desc_a;
    op.desc_b = desc_b;
    ckt__emu_warp_custom(ckt__emu_wgmma_fn, d, &op, a, NULL, file, line);
}

#define CKT__EMU_WGMMA(N, ty, kind)                                                                              \
    static inline void ckt__emu_wgmma_m64n##N##k16_##ty(float *d, const uint32_t *a, uint64_t da, uint64_t db, \
                                                        int acc, int a_regs, int b_mn, const char *file, int line) \
    {                                                                                                          \
        ckt__emu_wgmma(d, a, da, db, acc, N, kind, a_regs, b_mn, file, line);                                  \
    }
CKT__EMU_WGMMA(64, bf16, CKT__EMU_WG_BF16)
CKT__EMU_WGMMA(80, bf16, CKT__EMU_WG_BF16)
CKT__EMU_WGMMA(176, bf16, CKT__EMU_WG_BF16)
CKT__EMU_WGMMA(128, bf16, CKT__EMU_WG_BF16)
CKT__EMU_WGMMA(192, bf16, CKT__EMU_WG_BF16)
CKT__EMU_WGMMA(256, bf16, CKT__EMU_WG_BF16)
CKT__EMU_WGMMA(64, f16, CKT__EMU_WG_F16)
CKT__EMU_WGMMA(80, f16, CKT__EMU_WG_F16)
CKT__EMU_WGMMA(176, f16, CKT__EMU_WG_F16)
CKT__EMU_WGMMA(128, f16, CKT__EMU_WG_F16)
CKT__EMU_WGMMA(192, f16, CKT__EMU_WG_F16)
CKT__EMU_WGMMA(256, f16, CKT__EMU_WG_F16)
#undef CKT__EMU_WGMMA

/* e4m3 (k32, K-major operands: no _bmn) */
#define ckt_wgmma_m64n64k32_e4m3_ss(d, da, db, acc) ckt__emu_wgmma((d), NULL, (da), (db), (acc), 64, CKT__EMU_WG_E4M3, 0, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k32_e4m3_rs(d, a, db, acc) ckt__emu_wgmma((d), (a), 0, (db), (acc), 64, CKT__EMU_WG_E4M3, 1, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k32_e4m3_ss(d, da, db, acc) ckt__emu_wgmma((d), NULL, (da), (db), (acc), 80, CKT__EMU_WG_E4M3, 0, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k32_e4m3_rs(d, a, db, acc) ckt__emu_wgmma((d), (a), 0, (db), (acc), 80, CKT__EMU_WG_E4M3, 1, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k32_e4m3_ss(d, da, db, acc) ckt__emu_wgmma((d), NULL, (da), (db), (acc), 128, CKT__EMU_WG_E4M3, 0, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k32_e4m3_rs(d, a, db, acc) ckt__emu_wgmma((d), (a), 0, (db), (acc), 128, CKT__EMU_WG_E4M3, 1, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k32_e4m3_ss(d, da, db, acc) ckt__emu_wgmma((d), NULL, (da), (db), (acc), 176, CKT__EMU_WG_E4M3, 0, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k32_e4m3_rs(d, a, db, acc) ckt__emu_wgmma((d), (a), 0, (db), (acc), 176, CKT__EMU_WG_E4M3, 1, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k32_e4m3_ss(d, da, db, acc) ckt__emu_wgmma((d), NULL, (da), (db), (acc), 192, CKT__EMU_WG_E4M3, 0, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k32_e4m3_rs(d, a, db, acc) ckt__emu_wgmma((d), (a), 0, (db), (acc), 192, CKT__EMU_WG_E4M3, 1, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k32_e4m3_ss(d, da, db, acc) ckt__emu_wgmma((d), NULL, (da), (db), (acc), 256, CKT__EMU_WG_E4M3, 0, 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k32_e4m3_rs(d, a, db, acc) ckt__emu_wgmma((d), (a), 0, (db), (acc), 256, CKT__EMU_WG_E4M3, 1, 0, __FILE__, __LINE__)

/* the typed names of ckt/arch/hopper.h (d float[N/2], a uint32_t[4]) */
#define CKT__EMU_WGMMA_NAMES(N, ty)                                                                              \
    CKT__EMU_WGMMA_NAMES_(ckt_wgmma_m64n##N##k16_##ty, ckt__emu_wgmma_m64n##N##k16_##ty)
#define CKT__EMU_WGMMA_NAMES_(pub, impl)                                                                         \
    static inline void pub##_ss_emu(float *d, uint64_t da, uint64_t db, int acc, int b_mn, const char *f, int l) \
    {                                                                                                          \
        impl(d, NULL, da, db, acc, 0, b_mn, f, l);                                                             \
    }                                                                                                          \
    static inline void pub##_rs_emu(float *d, const uint32_t *a, uint64_t db, int acc, int b_mn, const char *f,  \
                                    int l)                                                                     \
    {                                                                                                          \
        impl(d, a, 0, db, acc, 1, b_mn, f, l);                                                                 \
    }
CKT__EMU_WGMMA_NAMES(64, bf16)
CKT__EMU_WGMMA_NAMES(80, bf16)
CKT__EMU_WGMMA_NAMES(176, bf16)
CKT__EMU_WGMMA_NAMES(128, bf16)
CKT__EMU_WGMMA_NAMES(192, bf16)
CKT__EMU_WGMMA_NAMES(256, bf16)
CKT__EMU_WGMMA_NAMES(64, f16)
CKT__EMU_WGMMA_NAMES(80, f16)
CKT__EMU_WGMMA_NAMES(176, f16)
CKT__EMU_WGMMA_NAMES(128, f16)
CKT__EMU_WGMMA_NAMES(192, f16)
CKT__EMU_WGMMA_NAMES(256, f16)
#undef CKT__EMU_WGMMA_NAMES
#undef CKT__EMU_WGMMA_NAMES_

#define ckt_wgmma_m64n64k16_bf16_ss(d, da, db, acc) ckt_wgmma_m64n64k16_bf16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_bf16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n64k16_bf16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_bf16_rs(d, a, db, acc) ckt_wgmma_m64n64k16_bf16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_bf16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n64k16_bf16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_bf16_ss(d, da, db, acc) ckt_wgmma_m64n128k16_bf16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_bf16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n128k16_bf16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_bf16_rs(d, a, db, acc) ckt_wgmma_m64n128k16_bf16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_bf16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n128k16_bf16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_bf16_ss(d, da, db, acc) ckt_wgmma_m64n192k16_bf16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_bf16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n192k16_bf16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_bf16_rs(d, a, db, acc) ckt_wgmma_m64n192k16_bf16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_bf16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n192k16_bf16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_bf16_ss(d, da, db, acc) ckt_wgmma_m64n256k16_bf16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_bf16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n256k16_bf16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_bf16_rs(d, a, db, acc) ckt_wgmma_m64n256k16_bf16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_bf16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n256k16_bf16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_f16_ss(d, da, db, acc) ckt_wgmma_m64n64k16_f16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_f16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n64k16_f16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_f16_rs(d, a, db, acc) ckt_wgmma_m64n64k16_f16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n64k16_f16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n64k16_f16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_f16_ss(d, da, db, acc) ckt_wgmma_m64n128k16_f16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_f16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n128k16_f16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_f16_rs(d, a, db, acc) ckt_wgmma_m64n128k16_f16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n128k16_f16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n128k16_f16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_f16_ss(d, da, db, acc) ckt_wgmma_m64n192k16_f16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_f16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n192k16_f16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_f16_rs(d, a, db, acc) ckt_wgmma_m64n192k16_f16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n192k16_f16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n192k16_f16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_f16_ss(d, da, db, acc) ckt_wgmma_m64n256k16_f16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_f16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n256k16_f16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_f16_rs(d, a, db, acc) ckt_wgmma_m64n256k16_f16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n256k16_f16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n256k16_f16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)

#define ckt_wgmma_m64n80k16_bf16_ss(d, da, db, acc) ckt_wgmma_m64n80k16_bf16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_bf16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n80k16_bf16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_bf16_rs(d, a, db, acc) ckt_wgmma_m64n80k16_bf16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_bf16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n80k16_bf16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_bf16_ss(d, da, db, acc) ckt_wgmma_m64n176k16_bf16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_bf16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n176k16_bf16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_bf16_rs(d, a, db, acc) ckt_wgmma_m64n176k16_bf16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_bf16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n176k16_bf16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_f16_ss(d, da, db, acc) ckt_wgmma_m64n80k16_f16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_f16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n80k16_f16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_f16_rs(d, a, db, acc) ckt_wgmma_m64n80k16_f16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n80k16_f16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n80k16_f16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_f16_ss(d, da, db, acc) ckt_wgmma_m64n176k16_f16_ss_emu((d), (da), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_f16_ss_bmn(d, da, db, acc) ckt_wgmma_m64n176k16_f16_ss_emu((d), (da), (db), (acc), 1, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_f16_rs(d, a, db, acc) ckt_wgmma_m64n176k16_f16_rs_emu((d), (a), (db), (acc), 0, __FILE__, __LINE__)
#define ckt_wgmma_m64n176k16_f16_rs_bmn(d, a, db, acc) ckt_wgmma_m64n176k16_f16_rs_emu((d), (a), (db), (acc), 1, __FILE__, __LINE__)

/* nothing is in flight on the emulator: these order nothing */
#define ckt_wgmma_fence() ((void)0)
#define ckt_wgmma_commit() ((void)0)
#define ckt_wgmma_wait0() ((void)0)
#define ckt_wgmma_wait1() ((void)0)
#define ckt_wgmma_fence_operand(d, n) ((void)(d))
#define ckt_setmaxnreg_inc(n) ((void)0)
#define ckt_setmaxnreg_dec(n) ((void)0)

#endif /* CKT_EMU_WARP_SIZE == 32 */
#endif /* CKT_BACKEND_CPU */
#endif /* CKT_ARCH_CPU_HOPPER_H */
