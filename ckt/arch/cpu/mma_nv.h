/* ckt/arch/cpu/mma_nv.h — NVIDIA warp matrix instructions on the CPU emulator's
 * nv profile (warp 32): mma.sync m16n8k16 (f16, bf16 -> fp32) and ldmatrix
 * m8n8 x1/x2/x4 [.trans]. API and layouts: ckt/arch/mma.h. Included by
 * ckt/arch/cpu.h.
 *
 * Each instruction is a warp op (ckt__emu_warp_custom): every lane parks its
 * operand pointers and waits; once all 32 lanes are there, one callback
 * gathers the whole matrices from the lanes' registers following the PTX
 * fragment layout, computes, and scatters the result into each lane's
 * destination registers. Products are summed in fp32 from the converted
 * 16-bit inputs (the hardware's summation order may differ in the last bit).
 */
#ifndef CKT_ARCH_CPU_MMA_NV_H
#define CKT_ARCH_CPU_MMA_NV_H

#include "ckt/arch/config.h"

#if defined(CKT_BACKEND_CPU)

#include "ckt/arch/cpu/emulator.h"
#include "ckt/arch/cpu/memory.h"
#include "ckt/arch/numeric.h"

#include <string.h>

#if CKT_EMU_WARP_SIZE == 32

#define CKT_HAS_MMA_SYNC 1

/* Element `half` (0 = low 16 bits = lower index) of a packed pair, as fp32. */
static inline float ckt__emu_unpack(uint32_t w, unsigned half, int bf16)
{
    uint16_t bits = (uint16_t)(w >> (16 * half));
    if (bf16)
        return ckt_f32_from_bits((uint32_t)bits << 16);
    return ckt__f32_from_f16_bits_soft(bits);
}

/* >>mma.sync m16n8k16 .row.col, fp32 accumulate.
 * Operands per lane: op_ptr[0] = d (float[4]), [1] = a (uint32_t[4]),
 * [2] = b (uint32_t[2]), [3] = c (float[4]). Layout from the PTX ISA, "Matrix
 * Fragments for mma.m16n8k16 with floating point type", g = groupID = lane / 4,
 * t = threadID_in_group = lane % 4, element i of each fragment:
 *   A: a_i  row g (+8 for i = 2, 3, 6, 7), col 2t + (i & 1) (+8 for i >= 4)
 *   B: b_i  row 2t + (i & 1) (+8 for i >= 2), col g
 *   C: c_i  row g (+8 for i >= 2), col 2t + (i & 1)
 * Element i of a 16-bit fragment is half i % 2 of register i / 2. */
static inline void ckt__emu_mma_m16n8k16(ckt__emu_thread **lanes, int bf16)
{
    float A[16][16], B[16][8], D[16][8];
    /* Gather every lane's operands before writing any d: d may be c. */
    for (unsigned l = 0; l < 32; l++) {
        const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[1];
        const uint32_t *b = (const uint32_t *)lanes[l]->op_ptr[2];
        const float *c = (const float *)lanes[l]->op_ptr[3];
        unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 8; i++)
            A[g + ((i & 2) ? 8 : 0)][2 * t + (i & 1) + (i >= 4 ? 8 : 0)] =
                ckt__emu_unpack(a[i / 2], i % 2, bf16);
        for (unsigned i = 0; i < 4; i++)
            B[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g] = ckt__emu_unpack(b[i / 2], i % 2, bf16);
        for (unsigned i = 0; i < 4; i++)
            D[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = c[i];
    }
    /* D[m][n] = C[m][n] + sum_k A[m][k] * B[k][n] */
    for (unsigned m = 0; m < 16; m++)
        for (unsigned n = 0; n < 8; n++) {
            float acc = D[m][n];
            for (unsigned k = 0; k < 16; k++)
                acc += A[m][k] * B[k][n];
            D[m][n] = acc;
        }
    for (unsigned l = 0; l < 32; l++) {
        float *d = (float *)lanes[l]->op_ptr[0];
        unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 4; i++)
            d[i] = D[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)];
    }
}

static inline void ckt__emu_mma_m16n8k16_f16_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    ckt__emu_mma_m16n8k16(lanes, 0);
}

static inline void ckt__emu_mma_m16n8k16_bf16_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    ckt__emu_mma_m16n8k16(lanes, 1);
}

/* Typed entry points: the operands' types are checked as on the GPU. */
static inline void ckt__emu_mma_m16n8k16_f16(float *d, const uint32_t *a, const uint32_t *b,
                                             const float *c, const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_mma_m16n8k16_f16_fn, d, a, b, c, file, line);
}

static inline void ckt__emu_mma_m16n8k16_bf16(float *d, const uint32_t *a, const uint32_t *b,
                                              const float *c, const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_mma_m16n8k16_bf16_fn, d, a, b, c, file, line);
}

#define ckt_mma_m16n8k16_f16(d, a, b, c)                                                          \
    ckt__emu_mma_m16n8k16_f16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mma_m16n8k16_bf16(d, a, b, c)                                                         \
    ckt__emu_mma_m16n8k16_bf16((d), (a), (b), (c), __FILE__, __LINE__)

/* >>mma.sync m16n8k32 .row.col .e4m3.e4m3 (sm_89+), fp32 accumulate. Operands
 * as m16n8k16's; 8-bit elements, four per register, element i in byte i % 4
 * of register i / 4. Layout from the PTX ISA, "Matrix Fragments for
 * mma.m16n8k32" (.e4m3 / .e5m2 / .s8 / .u8), g = lane / 4, t = lane % 4:
 *   A: a_i  row g (+8 for i in 4..7 and 12..15), col 4t + (i & 3) (+16 for i >= 8)
 *   B: b_i  row 4t + (i & 3) (+16 for i >= 4), col g
 *   C: as m16n8k16 */
static inline void ckt__emu_mma_m16n8k32_e4m3_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    float A[16][32], B[32][8], D[16][8];
    for (unsigned l = 0; l < 32; l++) {
        const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[1];
        const uint32_t *b = (const uint32_t *)lanes[l]->op_ptr[2];
        const float *c = (const float *)lanes[l]->op_ptr[3];
        unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 16; i++)
            A[g + ((i & 4) ? 8 : 0)][4 * t + (i & 3) + (i >= 8 ? 16 : 0)] =
                ckt_f32_from_e4m3((uint8_t)(a[i / 4] >> (8 * (i % 4))));
        for (unsigned i = 0; i < 8; i++)
            B[4 * t + (i & 3) + (i >= 4 ? 16 : 0)][g] = ckt_f32_from_e4m3((uint8_t)(b[i / 4] >> (8 * (i % 4))));
        for (unsigned i = 0; i < 4; i++)
            D[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = c[i];
    }
    for (unsigned m = 0; m < 16; m++)
        for (unsigned n8 = 0; n8 < 8; n8++) {
            float acc = D[m][n8];
            for (unsigned k = 0; k < 32; k++)
                acc += A[m][k] * B[k][n8];
            D[m][n8] = acc;
        }
    for (unsigned l = 0; l < 32; l++) {
        float *d = (float *)lanes[l]->op_ptr[0];
        unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 4; i++)
            d[i] = D[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)];
    }
}

#define CKT_HAS_MMA_FP8 1
static inline void ckt__emu_mma_m16n8k32_e4m3(float *d, const uint32_t *a, const uint32_t *b, const float *c,
                                              const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_mma_m16n8k32_e4m3_fn, d, a, b, c, file, line);
}
#define ckt_mma_m16n8k32_e4m3(d, a, b, c) ckt__emu_mma_m16n8k32_e4m3((d), (a), (b), (c), __FILE__, __LINE__)

/* >>ldmatrix m8n8 .b16, num = 1, 2 or 4 matrices.
 * Operands per lane: op_ptr[0] = r (uint32_t[num]), [1] = the row address.
 * From the PTX ISA, "Warp-level matrix load instruction: ldmatrix": lane
 * 8j + i gives row i of matrix j; lane l receives, for each matrix j,
 *   plain: row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
 *   trans: the same of the transposed matrix (column l / 4, rows 2 (l % 4), +1). */
static inline void ckt__emu_ldmatrix(ckt__emu_thread **lanes, unsigned num, int trans)
{
    uint16_t M[4][8][8]; /* M[j][row][col] */
    for (unsigned j = 0; j < num; j++)
        for (unsigned i = 0; i < 8; i++) {
            const ckt__emu_thread *src = lanes[8 * j + i];
            const void *row = src->op_ptr[1];
            if ((uintptr_t)row % 16 || !ckt__emu_in_shared(row, 16))
                ckt__emu_die(src->file, src->line,
                             "ckt_ldmatrix_x%u: lane %u passes row address %p, which is not a "
                             "16-byte aligned shared-memory address",
                             num, src->lane, row);
            memcpy(M[j][i], row, 16);
        }
    for (unsigned l = 0; l < 32; l++) {
        uint32_t *r = (uint32_t *)lanes[l]->op_ptr[0];
        unsigned q = l / 4, p = 2 * (l % 4);
        for (unsigned j = 0; j < num; j++) {
            uint16_t lo = trans ? M[j][p][q] : M[j][q][p];
            uint16_t hi = trans ? M[j][p + 1][q] : M[j][q][p + 1];
            r[j] = (uint32_t)lo | ((uint32_t)hi << 16);
        }
    }
}

#define CKT__EMU_LDMATRIX_FN(num, trans, suffix)                                                  \
    static inline void ckt__emu_ldmatrix_x##num##suffix##_fn(ckt__emu_thread **lanes, unsigned n) \
    {                                                                                             \
        (void)n;                                                                                  \
        ckt__emu_ldmatrix(lanes, num, trans);                                                     \
    }                                                                                             \
    static inline void ckt__emu_ldmatrix_x##num##suffix(uint32_t *r, const void *row,             \
                                                        const char *file, int line)               \
    {                                                                                             \
        ckt__emu_warp_custom(ckt__emu_ldmatrix_x##num##suffix##_fn, r, row, NULL, NULL, file,     \
                             line);                                                               \
    }
CKT__EMU_LDMATRIX_FN(1, 0, )
CKT__EMU_LDMATRIX_FN(2, 0, )
CKT__EMU_LDMATRIX_FN(4, 0, )
CKT__EMU_LDMATRIX_FN(1, 1, _trans)
CKT__EMU_LDMATRIX_FN(2, 1, _trans)
CKT__EMU_LDMATRIX_FN(4, 1, _trans)
#undef CKT__EMU_LDMATRIX_FN

#define ckt_ldmatrix_x1(r, row) ckt__emu_ldmatrix_x1((r), (row), __FILE__, __LINE__)
#define ckt_ldmatrix_x2(r, row) ckt__emu_ldmatrix_x2((r), (row), __FILE__, __LINE__)
#define ckt_ldmatrix_x4(r, row) ckt__emu_ldmatrix_x4((r), (row), __FILE__, __LINE__)
#define ckt_ldmatrix_x1_trans(r, row) ckt__emu_ldmatrix_x1_trans((r), (row), __FILE__, __LINE__)
#define ckt_ldmatrix_x2_trans(r, row) ckt__emu_ldmatrix_x2_trans((r), (row), __FILE__, __LINE__)
#define ckt_ldmatrix_x4_trans(r, row) ckt__emu_ldmatrix_x4_trans((r), (row), __FILE__, __LINE__)

/* >>stmatrix m8n8 .b16, x4 (sm_90): the inverse of ldmatrix x4. Operands
 * per lane: op_ptr[0] = r (uint32_t[4]), [1] = the row address; lane 8j + i
 * gives row i of matrix j, lane l's r[j] holds row l / 4, columns 2 (l % 4)
 * and + 1 of matrix j. .trans: lane 8j + i gives row i of matrix j's
 * transpose (column i of the matrix the registers hold). */
#define CKT_HAS_STMATRIX 1
static inline void ckt__emu_stmatrix_x4_do(ckt__emu_thread **lanes, int trans)
{
    uint16_t M[4][8][8]; /* M[j][row][col]: the stored rows (transposed with trans) */
    for (unsigned l = 0; l < 32; l++) {
        const uint32_t *r = (const uint32_t *)lanes[l]->op_ptr[0];
        unsigned q = l / 4, p = 2 * (l % 4);
        for (unsigned j = 0; j < 4; j++) {
            *(trans ? &M[j][p][q] : &M[j][q][p]) = (uint16_t)(r[j] & 0xffff);
            *(trans ? &M[j][p + 1][q] : &M[j][q][p + 1]) = (uint16_t)(r[j] >> 16);
        }
    }
    for (unsigned j = 0; j < 4; j++)
        for (unsigned i = 0; i < 8; i++) {
            const ckt__emu_thread *dst = lanes[8 * j + i];
            void *row = (void *)dst->op_ptr[1];
            if ((uintptr_t)row % 16 || !ckt__emu_in_shared(row, 16))
                ckt__emu_die(dst->file, dst->line,
                             "ckt_stmatrix_x4%s: lane %u passes row address %p, which is not a 16-byte aligned "
                             "shared-memory address",
                             trans ? "_trans" : "", dst->lane, row);
            memcpy(row, M[j][i], 16);
        }
}
static inline void ckt__emu_stmatrix_x4_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    ckt__emu_stmatrix_x4_do(lanes, 0);
}
static inline void ckt__emu_stmatrix_x4_trans_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    ckt__emu_stmatrix_x4_do(lanes, 1);
}
static inline void ckt__emu_stmatrix_x4(void *row, const uint32_t *r, const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_stmatrix_x4_fn, r, row, NULL, NULL, file, line);
}
static inline void ckt__emu_stmatrix_x4_trans(void *row, const uint32_t *r, const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_stmatrix_x4_trans_fn, r, row, NULL, NULL, file, line);
}
#define ckt_stmatrix_x4(row, r) ckt__emu_stmatrix_x4((row), (r), __FILE__, __LINE__)
#define ckt_stmatrix_x4_trans(row, r) ckt__emu_stmatrix_x4_trans((row), (r), __FILE__, __LINE__)

#endif /* CKT_EMU_WARP_SIZE == 32 */
#endif /* CKT_BACKEND_CPU */
#endif /* CKT_ARCH_CPU_MMA_NV_H */
