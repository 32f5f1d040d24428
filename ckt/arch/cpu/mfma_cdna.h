/* ckt/arch/cpu/mfma_cdna.h — AMD CDNA MFMA instructions on the CPU emulator's
 * cdna profile (wave 64): v_mfma_f32_32x32x8{f16,bf16_1k} and
 * v_mfma_f32_16x16x16{f16,bf16_1k}. API and layouts: ckt/arch/mma.h.
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

#define ckt_mfma_32x32x8_f16(d, a, b, c)                                                          \
    ckt__emu_mfma_32x32x8_f16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_32x32x8_bf16(d, a, b, c)                                                         \
    ckt__emu_mfma_32x32x8_bf16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_16x16x16_f16(d, a, b, c)                                                         \
    ckt__emu_mfma_16x16x16_f16((d), (a), (b), (c), __FILE__, __LINE__)
#define ckt_mfma_16x16x16_bf16(d, a, b, c)                                                        \
    ckt__emu_mfma_16x16x16_bf16((d), (a), (b), (c), __FILE__, __LINE__)

#endif /* CKT_EMU_WARP_SIZE == 64 */
#endif /* CKT_BACKEND_CPU */
#endif /* CKT_ARCH_CPU_MFMA_CDNA_H */
