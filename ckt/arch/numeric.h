/* ckt/arch/numeric.h — 16-bit float storage types and their conversions.
 *
 *   ckt_f16   IEEE binary16 (fp16), stored as its 16 bits
 *   ckt_bf16  bfloat16, stored as its 16 bits
 *
 * They are storage types: arithmetic happens in fp32 after conversion
 * (or inside the warp MMA instructions). The same struct is used on every
 * backend and on the host, so buffers move between them bit for bit.
 *
 *   float     ckt_f32_from_f16(ckt_f16 h);
 *   ckt_f16   ckt_f16_from_f32(float f);     round to nearest even
 *   float     ckt_f32_from_bf16(ckt_bf16 h);
 *   ckt_bf16  ckt_bf16_from_f32(float f);    round to nearest even, NaN kept
 *   float     ckt_f32_from_e4m3(uint8_t b);  fp8 e4m3 (OCP / NVIDIA: bias 7, max 448,
 *   uint8_t   ckt_e4m3_from_f32(float f);    NaN 0x7f/0xff, no inf): round to nearest
 *                                            even, saturating to +-448, NaN -> 0x7f
 *   uint32_t  ckt_pack4_e4m3(x0, x1, x2, x3) four floats as e4m3 bytes, x0 lowest
 *   uint32_t  ckt_pack4_e4m3_pos(x0, x1, x2, x3)  the same for x >= 0 (softmax P),
 *                                            branch-free where there is no cvt
 *   float     ckt_f32_from_e4m3_fnuz(uint8_t b)  fp8 e4m3 FNUZ (gfx940's MFMA: bias 8,
 *                                            max 240, 0x80 NaN, no -0, no inf)
 *   uint32_t  ckt_e4m3x4_fnuz_operand(w)  four OCP bytes as FNUZ operands: -0 -> +0
 *   uint32_t  ckt_byte_perm(x, y, sel)   CUDA's __byte_perm: byte n of the result is
 *                                            byte (sel >> 4n) & 7 of {y:x} (x low)
 *   void      ckt_transpose_bytes_4x4(x, w)  x[i] byte e = w[e] byte i (a 4x4 byte
 *                                            matrix in four words; 8 prmt on NVIDIA)
 *
 * On the GPU backends the conversions use the hardware instructions; the
 * software versions (CPU, host code) give the same bits.
 */
#ifndef CKT_ARCH_NUMERIC_H
#define CKT_ARCH_NUMERIC_H

#include "ckt/arch/config.h"

#include <string.h>

#if defined(CKT_BACKEND_NVIDIA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#elif defined(CKT_BACKEND_AMD)
#include <hip/hip_runtime.h>
#endif

typedef struct ckt_f16 {
    uint16_t bits;
} ckt_f16;

typedef struct ckt_bf16 {
    uint16_t bits;
} ckt_bf16;

#define CKT_LOG2E 1.4426950408889634f /* log2(e): exp(x) = exp2(x * CKT_LOG2E) */
#define CKT_LN2 0.6931471805599453f   /* ln(2) */

CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_bits_from_f32(float f)
{
#if defined(CKT_DEVICE_PASS)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

CKT_INLINE CKT_HOST_DEVICE float ckt_f32_from_bits(uint32_t u)
{
#if defined(CKT_DEVICE_PASS)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* Software fp32 -> fp16, round to nearest even (also used by device code
 * where the hardware path is not wired). */
CKT_INLINE CKT_HOST_DEVICE uint16_t ckt__f16_bits_from_f32_soft(float f)
{
    uint32_t x = ckt_bits_from_f32(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* Inf or NaN (quiet NaN keeps a payload bit) */
        return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
        /* fp16 subnormal bits = round(|f| * 2^24); the product is exact and
         * rounding to even by hand keeps this free of the FP environment. */
        float scaled = ckt_f32_from_bits(ax) * 16777216.0f;
        uint32_t q = (uint32_t)scaled; /* < 1024 */
        float frac = scaled - (float)q;
        if (frac > 0.5f || (frac == 0.5f && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    {
        uint32_t h = ((((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13));
        uint32_t rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
            h++; /* a carry into the exponent is the correct result */
        return (uint16_t)(sign | h);
    }
}

CKT_INLINE CKT_HOST_DEVICE float ckt__f32_from_f16_bits_soft(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t m = (uint32_t)h & 0x3ffu;
    if (e == 0) { /* zero or subnormal: m * 2^-24 */
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (e == 31)
        return ckt_f32_from_bits(sign | 0x7f800000u | (m << 13));
    return ckt_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

CKT_INLINE CKT_HOST_DEVICE ckt_f16 ckt_f16_from_f32(float f)
{
    ckt_f16 r;
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA)
    r.bits = __half_as_ushort(__float2half_rn(f));
#elif defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_AMD)
    _Float16 h = (_Float16)f;
    r.bits = __builtin_bit_cast(uint16_t, h);
#else
    r.bits = ckt__f16_bits_from_f32_soft(f);
#endif
    return r;
}

CKT_INLINE CKT_HOST_DEVICE float ckt_f32_from_f16(ckt_f16 h)
{
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA)
    return __half2float(__ushort_as_half(h.bits));
#elif defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_AMD)
    return (float)__builtin_bit_cast(_Float16, h.bits);
#else
    return ckt__f32_from_f16_bits_soft(h.bits);
#endif
}

CKT_INLINE CKT_HOST_DEVICE ckt_bf16 ckt_bf16_from_f32(float f)
{
    ckt_bf16 r;
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA)
    r.bits = __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
    uint32_t x = ckt_bits_from_f32(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
        r.bits = (uint16_t)((x >> 16) | 0x0040u);
    else
        r.bits = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
    return r;
}

CKT_INLINE CKT_HOST_DEVICE float ckt_f32_from_bf16(ckt_bf16 h)
{
    return ckt_f32_from_bits((uint32_t)h.bits << 16);
}

/* Two floats rounded (to nearest even) and packed into one 32-bit word, lo in
 * the low half: one cvt.rn.{f16x2,bf16x2}.f32 instruction on NVIDIA. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_pack2_f16(float lo, float hi)
{
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA)
    __half2 h = __floats2half2_rn(lo, hi);
    return *(const uint32_t *)&h;
#else
    return (uint32_t)ckt_f16_from_f32(lo).bits | ((uint32_t)ckt_f16_from_f32(hi).bits << 16);
#endif
}

CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_pack2_bf16(float lo, float hi)
{
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA)
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *(const uint32_t *)&h;
#else
    return (uint32_t)ckt_bf16_from_f32(lo).bits | ((uint32_t)ckt_bf16_from_f32(hi).bits << 16);
#endif
}

/* >>fp8 e4m3 (OCP "E4M3", NVIDIA's __nv_fp8_e4m3): sign, 4 exponent bits
 * (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN; largest
 * finite 448 (0x7e), smallest normal 2^-6, subnormals m * 2^-9. */
#define CKT_E4M3_MAX 448.0f

CKT_INLINE CKT_HOST_DEVICE float ckt_f32_from_e4m3(uint8_t b)
{
    const uint32_t e = ((uint32_t)b >> 3) & 15u, m = (uint32_t)b & 7u;
    float v;
    if ((b & 0x7fu) == 0x7fu)
        return ckt_f32_from_bits(0x7fc00000u | ((uint32_t)(b & 0x80u) << 24));
    if (e == 0) /* zero or subnormal: m * 2^-9 */
        v = (float)m * (1.0f / 512.0f);
    else /* (1 + m / 8) 2^(e - 7): exponent field e - 7 + 127 */
        v = ckt_f32_from_bits(((e + 120u) << 23) | (m << 20));
    return (b & 0x80u) ? -v : v;
}

/* Software fp32 -> e4m3, round to nearest even, |x| > 448 (and +-inf)
 * saturate to +-448, NaN -> 0x7f: the bits of NVIDIA's
 * cvt.rn.satfinite.e4m3x2.f32. */
CKT_INLINE CKT_HOST_DEVICE uint8_t ckt_e4m3_from_f32(float f)
{
    const uint32_t x = ckt_bits_from_f32(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return 0x7f;
    if (ax > 0x43e00000u) /* > 448 */
        return (uint8_t)(sign | 0x7eu);
    if (ax < 0x3c800000u) { /* below 2^-6: subnormal or zero, round(|f| 2^9) exactly */
        const float scaled = ckt_f32_from_bits(ax) * 512.0f;
        uint32_t q = (uint32_t)scaled; /* <= 8 (8: the smallest normal, 0x08) */
        const float frac = scaled - (float)q;
        if (frac > 0.5f || (frac == 0.5f && (q & 1u)))
            q++;
        return (uint8_t)(sign | q);
    }
    uint32_t code = ((((ax >> 23) - 120u) << 3) | ((ax >> 20) & 7u)), rem = ax & 0xfffffu;
    if (rem > 0x80000u || (rem == 0x80000u && (code & 1u)))
        code++; /* a carry into the exponent is the correct result; <= 0x7e since |f| <= 448 */
    return (uint8_t)(sign | code);
}

/* Four floats as e4m3 bytes in one word, x0 in the low byte (the k order of
 * an fp8 MMA fragment register): two cvt.rn.satfinite.e4m3x2.f32 on sm_89+. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_pack4_e4m3(float x0, float x1, float x2, float x3)
{
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint16_t lo, hi; /* cvt's first source lands in the upper byte */
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(lo) : "f"(x0), "f"(x1));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(hi) : "f"(x2), "f"(x3));
    return (uint32_t)lo | ((uint32_t)hi << 16);
#else
    return (uint32_t)ckt_e4m3_from_f32(x0) | ((uint32_t)ckt_e4m3_from_f32(x1) << 8) |
           ((uint32_t)ckt_e4m3_from_f32(x2) << 16) | ((uint32_t)ckt_e4m3_from_f32(x3) << 24);
#endif
}

/* The e4m3 byte of f >= 0 (or +inf), the bits of ckt_e4m3_from_f32 there,
 * without branches: saturate with a compare-select, round a normal's fp32
 * mantissa to 3 bits to nearest even in the integer domain, and a subnormal
 * (f < 2^-6) to a multiple of 2^-9 with the fp32 adder (round(f 2^9) via
 * + 2^23, exact: f 2^9 < 8), then select. For P = softmax on targets that
 * convert in software (CDNA): the general function's sign, NaN and
 * subnormal branches cost an exec-mask branch each per value there. A NaN
 * gives 0x7e (it is not an input here). */
CKT_INLINE CKT_HOST_DEVICE uint8_t ckt__e4m3_from_f32_pos(float f)
{
    const float x = f < CKT_E4M3_MAX ? f : CKT_E4M3_MAX;
    const uint32_t u = ckt_bits_from_f32(x);
    /* (e - 120) << 3 | m, rounded: the carry into the exponent is right */
    const uint32_t normal = ((u + 0x7ffffu + ((u >> 20) & 1u)) >> 20) - (120u << 3);
    const uint32_t sub = ckt_bits_from_f32(x * 512.0f + 8388608.0f) - 0x4b000000u; /* 0 .. 8 */
    return (uint8_t)(x < 0.015625f ? sub : normal);
}

CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_pack4_e4m3_pos(float x0, float x1, float x2, float x3)
{
#if defined(CKT_DEVICE_PASS) && defined(CKT_BACKEND_NVIDIA)
    return ckt_pack4_e4m3(x0, x1, x2, x3); /* cvt.rn.satfinite (sm_89+) */
#else
    return (uint32_t)ckt__e4m3_from_f32_pos(x0) | ((uint32_t)ckt__e4m3_from_f32_pos(x1) << 8) |
           ((uint32_t)ckt__e4m3_from_f32_pos(x2) << 16) | ((uint32_t)ckt__e4m3_from_f32_pos(x3) << 24);
#endif
}

/* >>fp8 e4m3 FNUZ (AMD gfx940-942's MFMA fp8, "E4M3FNUZ"): sign, 4 exponent
 * bits with bias 8, 3 mantissa bits; no infinities, no -0: 0x80 is the one
 * NaN; largest finite 240 (0x7f), subnormals m * 2^-10. The same bits as
 * OCP e4m3 with the exponent bias one higher: every OCP byte but -0 (0x80)
 * and the NaNs (0x7f, 0xff) reads as exactly half its OCP value, subnormals
 * included (tests/fmha/fp8_test.cc, FnuzReadingIsHalfTheOcpValue), so an
 * fp8 MFMA fed OCP bytes computes a quarter of the OCP product once the -0
 * bytes are made +0 (docs/fmha.md#fp8). */
CKT_INLINE CKT_HOST_DEVICE float ckt_f32_from_e4m3_fnuz(uint8_t b)
{
    const uint32_t e = ((uint32_t)b >> 3) & 15u, m = (uint32_t)b & 7u;
    float v;
    if (b == 0x80u)
        return ckt_f32_from_bits(0x7fc00000u);
    if (e == 0) /* zero or subnormal: m * 2^-10 */
        v = (float)m * (1.0f / 1024.0f);
    else /* (1 + m / 8) 2^(e - 8): exponent field e - 8 + 127 */
        v = ckt_f32_from_bits(((e + 119u) << 23) | (m << 20));
    return (b & 0x80u) ? -v : v;
}

/* w, four OCP e4m3 bytes, with each -0 (0x80, FNUZ's NaN) made +0 (0x00),
 * the other bytes unchanged: what an FNUZ MFMA may read. SWAR, four ops: a
 * byte's bit 7 survives iff its low 7 bits are nonzero (their sum with 0x7f
 * carries into bit 7, never into the next byte). */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_e4m3x4_fnuz_operand(uint32_t w)
{
    return w & (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | 0x7f7f7f7fu);
}

/* >>byte permutes: byte n of the result is byte (sel >> 4n) & 7 of the
 * eight bytes {y:x} (x's bytes 0-3, y's 4-7), CUDA's __byte_perm without
 * its sign-replicate mode (bit 3 of each nibble is ignored, on every
 * backend); one prmt on NVIDIA devices. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_byte_perm(uint32_t x, uint32_t y, uint32_t sel)
{
#if defined(CKT_BACKEND_NVIDIA) && defined(__CUDA_ARCH__)
    return __byte_perm(x, y, sel & 0x7777u); /* no sign replication: the host's bytes */
#else
    const uint64_t xy = (uint64_t)x | ((uint64_t)y << 32);
    uint32_t r = 0;
    for (int n = 0; n < 4; n++)
        r |= (uint32_t)((xy >> (8 * ((sel >> (4 * n)) & 7u))) & 0xffu) << (8 * n);
    return r;
#endif
}

/* x[i] = {w[0] byte i, w[1] byte i, w[2] byte i, w[3] byte i} (low byte
 * first): the 4x4 byte matrix whose rows are the words w, transposed (fp8
 * operands moved between key-major and column-major). x and w must not
 * overlap. Eight byte permutes. */
CKT_INLINE CKT_HOST_DEVICE void ckt_transpose_bytes_4x4(uint32_t x[4], const uint32_t w[4])
{
    const uint32_t t0 = ckt_byte_perm(w[0], w[1], 0x5140), t1 = ckt_byte_perm(w[0], w[1], 0x7362);
    const uint32_t t2 = ckt_byte_perm(w[2], w[3], 0x5140), t3 = ckt_byte_perm(w[2], w[3], 0x7362);
    x[0] = ckt_byte_perm(t0, t2, 0x5410);
    x[1] = ckt_byte_perm(t0, t2, 0x7632);
    x[2] = ckt_byte_perm(t1, t3, 0x5410);
    x[3] = ckt_byte_perm(t1, t3, 0x7632);
}

#endif /* CKT_ARCH_NUMERIC_H */
