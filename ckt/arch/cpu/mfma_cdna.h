/* ckt/arch/cpu/mfma_cdna.h — AMD CDNA MFMA instructions on the CPU emulator's
 * cdna profile (wave 64): v_mfma_f32_32x32x8{f16,bf16_1k},
 * v_mfma_f32_16x16x16{f16,bf16_1k} and gfx940's fp8 ones,
 * v_mfma_f32_32x32x16_fp8_fp8 and v_mfma_f32_16x16x32_fp8_fp8 (inputs read
 * as e4m3 FNUZ, as the hardware does). API and layouts: ckt/arch/mma.h.
 * Included by ckt/arch/cpu.h.
 *
 * Each instruction is a warp op (ckt__emu_warp_custom): once all 64 lanes have
 * arrived, one callback gathers A, B and C from every lane's registers as the
 * hardware lays them out, computes D = A * B + C in fp32 from the converted
 * 16-bit inputs, and scatters D into each lane's destination registers.
 */
#ifndef CKT_ARCH_CPU_MFMA_CDNA_H
#define CKT_ARCH_CPU_MFMA_CDNA_H

#include "ckt/arch/config.h"

#if defined(CKT_BACKEND_CPU)

#include "ckt/arch/cpu/emulator.h"
#include "ckt/arch/numeric.h"

#if CKT_EMU_WARP_SIZE == 64

#define CKT_HAS_MFMA 1
#define CKT_HAS_MFMA_FP8 1

/* Element e (0..3) of a lane's 4-element input: half e % 2 of register e / 2. */
static inline float ckt__emu_mfma_in(const uint32_t *r, unsigned e, int bf16)
{
    uint16_t bits = (uint16_t)(r[e / 2] >> (16 * (e % 2)));
    if (bf16)
        return ckt_f32_from_bits((uint32_t)bits << 16);
    return ckt__f32_from_f16_bits_soft(bits);
}

/* >>v_mfma_f32_32x32x8: D(32x32) = A(32x8) * B(8x32) + C.
 * Operands per lane: op_ptr[0] = d (float[16]), [1] = a (uint32_t[2]),
 * [2] = b (uint32_t[2]), [3] = c (float[16]). Layout (AMD matrix instruction
 * calculator; "AMD matrix cores" lab notes), lane l, i = l % 32, h = l / 32:
 *   a element e = A[i][4h + e]      b element e = B[4h + e][i]
 *   c[r], d[r]  = C[8 (r / 4) + 4h + r % 4][i] */
static inline void ckt__emu_mfma_32x32x8(ckt__emu_thread **lanes, int bf16)
{
    float A[32][8], B[8][32], D[32][32];
    for (unsigned l = 0; l < 64; l++) { /* gather all before writing: d may be c */
        const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[1];
        const uint32_t *b = (const uint32_t *)lanes[l]->op_ptr[2];
        const float *c = (const float *)lanes[l]->op_ptr[3];
        unsigned i = l % 32, h = l / 32;
        for (unsigned e = 0; e < 4; e++) {
            A[i][4 * h + e] = ckt__emu_mfma_in(a, e, bf16);
            B[4 * h + e][i] = ckt__emu_mfma_in(b, e, bf16);
        }
        for (unsigned r = 0; r < 16; r++)
            D[8 * (r / 4) + 4 * h + r % 4][i] = c[r];
    }
    for (unsigned m = 0; m < 32; m++)
        for (unsigned n = 0; n < 32; n++) {
            float acc = D[m][n];
            for (unsigned k = 0; k < 8; k++)
                acc += A[m][k] * B[k][n];
            D[m][n] = acc;
        }
    for (unsigned l = 0; l < 64; l++) {
        float *d = (float *)lanes[l]->op_ptr[0];
        unsigned i = l % 32, h = l / 32;
        for (unsigned r = 0; r < 16; r++)
            d[r] = D[8 * (r / 4) + 4 * h + r % 4][i];
    }
}

/* >>v_mfma_f32_16x16x16: D(16x16) = A(16x16) * B(16x16) + C.
 * Operands as above with c, d float[4]. Layout (same sources), lane l,
 * i = l % 16, q = l / 16:
 *   a element e = A[i][4q + e]      b element e = B[4q + e][i]
 *   c[r], d[r]  = C[4q + r][i] */
static inline void ckt__emu_mfma_16x16x16(ckt__emu_thread **lanes, int bf16)
{
    float A[16][16], B[16][16], D[16][16];
    for (unsigned l = 0; l < 64; l++) {
        const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[1];
        const uint32_t *b = (const uint32_t *)lanes[l]->op_ptr[2];
        const float *c = (const float *)lanes[l]->op_ptr[3];
        unsigned i = l % 16, q = l / 16;
        for (unsigned e = 0; e < 4; e++) {
            A[i][4 * q + e] = ckt__emu_mfma_in(a, e, bf16);
            B[4 * q + e][i] = ckt__emu_mfma_in(b, e, bf16);
        }
        for (unsigned r = 0; r < 4; r++)
            D[4 * q + r][i] = c[r];
    }
    for (unsigned m = 0; m < 16; m++)
        for (unsigned n = 0; n < 16; n++) {
            float acc = D[m][n];
            for (unsigned k = 0; k < 16; k++)
                acc += A[m][k] * B[k][n];
            D[m][n] = acc;
        }
    for (unsigned l = 0; l < 64; l++) {
        float *d = (float *)lanes[l]->op_ptr[0];
        unsigned i = l % 16, q = l / 16;
        for (unsigned r = 0; r < 4; r++)
            d[r] = D[4 * q + r][i];
    }
}

/* >>v_mfma_f32_32x32x16_fp8_fp8 and v_mfma_f32_16x16x32_fp8_fp8 (gfx940):
 * D(M x M) = A(M x K) * B(K x M) + C with M = 32, K = 16 or M = 16, K = 32.
 * Operands as above with a, b 8 fp8 bytes (uint32_t[2], element e in byte
 * e % 4 of register e / 4), decoded as e4m3 FNUZ (0x80 NaN: an OCP -0 left
 * in an operand poisons its row / column, as on the GPU). Layout (CDNA3
 * ISA; CK's xdlops_gemm.hpp, k_per_blk 8), lane l, i = l % M, q = l / M:
 *   a element e = A[i][8q + e]      b element e = B[8q + e][i]
 *   c[r], d[r]  = 32x32: C[8 (r / 4) + 4q + r % 4][i]   16x16: C[4q + r][i] */
static inline unsigned ckt__emu_mfma_fp8_row(unsigned M, unsigned r, unsigned q)
{
    return M == 32 ? 8 * (r / 4) + 4 * q + r % 4 : 4 * q + r;
}

static inline void ckt__emu_mfma_fp8(ckt__emu_thread **lanes, unsigned M)
{
    const unsigned K = 512 / M, R = M * M / 64; /* k per instruction, accumulators per lane */
    float A[32][32], B[32][32], D[32][32];
    for (unsigned l = 0; l < 64; l++) { /* gather all before writing: d may be c */
        const uint32_t *a = (const uint32_t *)lanes[l]->op_ptr[1];
        const uint32_t *b = (const uint32_t *)lanes[l]->op_ptr[2];
        const float *c = (const float *)lanes[l]->op_ptr[3];
        unsigned i = l % M, q = l / M;
        for (unsigned e = 0; e < 8; e++) {
            A[i][8 * q + e] = ckt_f32_from_e4m3_fnuz((uint8_t)(a[e / 4] >> (8 * (e % 4))));
            B[8 * q + e][i] = ckt_f32_from_e4m3_fnuz((uint8_t)(b[e / 4] >> (8 * (e % 4))));
        }
        for (unsigned r = 0; r < R; r++)
            D[ckt__emu_mfma_fp8_row(M, r, q)][i] = c[r];
    }
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < M; n++) {
            float acc = D[m][n];
            for (unsigned k = 0; k < K; k++)
                acc += A[m][k] * B[k][n];
            D[m][n] = acc;
        }
    for (unsigned l = 0; l < 64; l++) {
        float *d = (float *)lanes[l]->op_ptr[0];
        unsigned i = l % M, q = l / M;
        for (unsigned r = 0; r < R; r++)
            d[r] = D[ckt__emu_mfma_fp8_row(M, r, q)][i];
    }
}

static inline void ckt__emu_mfma_32x32x16_e4m3_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    ckt__emu_mfma_fp8(lanes, 32);
}

static inline void ckt__emu_mfma_16x16x32_e4m3_fn(ckt__emu_thread **lanes, unsigned n)
{
    (void)n;
    ckt__emu_mfma_fp8(lanes, 16);
}

#define CKT__EMU_MFMA_FN(shape, type, is_bf16)                                                    \
    static inline void ckt__emu_mfma_##shape##_##type##_fn(ckt__emu_thread **lanes, unsigned n)   \
    {                                                                                             \
        (void)n;                                                                                  \
        ckt__emu_mfma_##shape(lanes, is_bf16);                                                    \
    }                                                                                             \
    static inline void ckt__emu_mfma_##shape##_##type(float *d, const uint32_t *a,                \
                                                      const uint32_t *b, const float *c,          \
                                                      const char *file, int line)                 \
    {                                                                                             \
        ckt__emu_warp_custom(ckt__emu_mfma_##shape##_##type##_fn, d, a, b, c, file, line);        \
    }
CKT__EMU_MFMA_FN(32x32x8, f16, 0)
CKT__EMU_MFMA_FN(32x32x8, bf16, 1)
CKT__EMU_MFMA_FN(16x16x16, f16, 0)
CKT__EMU_MFMA_FN(16x16x16, bf16, 1)
#undef CKT__EMU_MFMA_FN

static inline void ckt__emu_mfma_32x32x16_e4m3(float *d, const uint32_t *a, const uint32_t *b, const float *c,
                                               const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_mfma_32x32x16_e4m3_fn, d, a, b, c, file, line);
}
static inline void ckt__emu_mfma_16x16x32_e4m3(float *d, const uint32_t *a, const uint32_t *b, const float *c,
                                               const char *file, int line)
{
    ckt__emu_warp_custom(ckt__emu_mfma_16x16x32_e4m3_fn, d, a, b, c, file, line);
}

#define ckt_mfma_32x32x8_f16(d, a, b, c)                                                          \
    ckt__emu_mfma_32x32x8_f16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_32x32x8_bf16(d, a, b, c)                                                         \
    ckt__emu_mfma_32x32x8_bf16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_16x16x16_f16(d, a, b, c)                                                         \
    ckt__emu_mfma_16x16x16_f16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_16x16x16_bf16(d, a, b, c)                                                        \
    ckt__emu_mfma_16x16x16_bf16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_32x32x16_e4m3(d, a, b, c) ckt__emu_mfma_32x32x16_e4m3((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_16x16x32_e4m3(d, a, b, c) ckt__emu_mfma_16x16x32_e4m3((d), (a), (b), (c), __FILE__, __LINE__)

#endif /* CKT_EMU_WARP_SIZE == 64 */
#endif /* CKT_BACKEND_CPU */
#endif /* CKT_ARCH_CPU_MFMA_CDNA_H */
