/* tests/zero_init_check.c — the one zero-initialization idiom of ckt's
 * argument structs, CKT_ZERO_INIT (ckt/arch/config.h; documented in
 * ckt/fmha/args.h), compiles without a warning and zeroes every field, in C and
 * in C++:
 *
 *   gcc -std=c11 -Wall -Wextra -Werror -pedantic      built and run   (//tests:zero_init_test)
 *   g++ -std=c++17 -Wall -Wextra -Werror -pedantic    built and run   (//tests:zero_init_test)
 *   nvcc -x cu / hipcc -x hip, warnings as errors     compiled        (//tests:zero_init_gpu,
 *                                                                      --config=nvidia / amd)
 *
 * Exit status 0 = every field of every struct is zero. A new argument struct
 * gets a block in main below.
 */
#include "ckt/fmha/args.h"
#include "ckt/fmha/workspace.h"

#include <stdio.h>
#include <string.h>

static int failures;

/* Counts and names a field that is not zero. */
#define EXPECT_ZERO(field)                                                                        \
    do {                                                                                          \
        if ((field) != 0) {                                                                       \
            printf("FAIL: %s is not zero\n", #field);                                             \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

/* Leaves garbage where the next call's locals will live, so that a field the
 * initializer missed shows up as non-zero. */
static void dirty_stack(void)
{
    volatile unsigned char junk[16384];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 0xA5;
}

static void check_fwd(void)
{
    ckt_fmha_fwd_args a = CKT_ZERO_INIT;
    EXPECT_ZERO(a.q);
    EXPECT_ZERO(a.k);
    EXPECT_ZERO(a.v);
    EXPECT_ZERO(a.o);
    EXPECT_ZERO(a.lse);
    EXPECT_ZERO(a.dtype);
    EXPECT_ZERO(a.batch);
    EXPECT_ZERO(a.nhead_q);
    EXPECT_ZERO(a.nhead_k);
    EXPECT_ZERO(a.seqlen_q);
    EXPECT_ZERO(a.seqlen_k);
    EXPECT_ZERO(a.hdim_q);
    EXPECT_ZERO(a.hdim_v);
    EXPECT_ZERO(a.q_stride_b);
    EXPECT_ZERO(a.q_stride_h);
    EXPECT_ZERO(a.q_stride_s);
    EXPECT_ZERO(a.k_stride_b);
    EXPECT_ZERO(a.k_stride_h);
    EXPECT_ZERO(a.k_stride_s);
    EXPECT_ZERO(a.v_stride_b);
    EXPECT_ZERO(a.v_stride_h);
    EXPECT_ZERO(a.v_stride_s);
    EXPECT_ZERO(a.o_stride_b);
    EXPECT_ZERO(a.o_stride_h);
    EXPECT_ZERO(a.o_stride_s);
    EXPECT_ZERO(a.lse_stride_b);
    EXPECT_ZERO(a.lse_stride_h);
    EXPECT_ZERO(a.group_mode);
    EXPECT_ZERO(a.seqstart_q);
    EXPECT_ZERO(a.seqstart_k);
    EXPECT_ZERO(a.seqlen_q_ptr);
    EXPECT_ZERO(a.seqlen_k_ptr);
    EXPECT_ZERO(a.scale);
    EXPECT_ZERO(a.softcap);
    EXPECT_ZERO(a.mask);
    EXPECT_ZERO(a.window_left);
    EXPECT_ZERO(a.window_right);
}

static void check_bwd(void)
{
    ckt_fmha_bwd_args b = CKT_ZERO_INIT;
    EXPECT_ZERO(b.q);
    EXPECT_ZERO(b.k);
    EXPECT_ZERO(b.v);
    EXPECT_ZERO(b.o);
    EXPECT_ZERO(b.dout);
    EXPECT_ZERO(b.lse);
    EXPECT_ZERO(b.dq);
    EXPECT_ZERO(b.dk);
    EXPECT_ZERO(b.dv);
    EXPECT_ZERO(b.dtype);
    EXPECT_ZERO(b.batch);
    EXPECT_ZERO(b.nhead_q);
    EXPECT_ZERO(b.nhead_k);
    EXPECT_ZERO(b.seqlen_q);
    EXPECT_ZERO(b.seqlen_k);
    EXPECT_ZERO(b.hdim_q);
    EXPECT_ZERO(b.hdim_v);
    EXPECT_ZERO(b.q_stride_b);
    EXPECT_ZERO(b.q_stride_h);
    EXPECT_ZERO(b.q_stride_s);
    EXPECT_ZERO(b.k_stride_b);
    EXPECT_ZERO(b.k_stride_h);
    EXPECT_ZERO(b.k_stride_s);
    EXPECT_ZERO(b.v_stride_b);
    EXPECT_ZERO(b.v_stride_h);
    EXPECT_ZERO(b.v_stride_s);
    EXPECT_ZERO(b.o_stride_b);
    EXPECT_ZERO(b.o_stride_h);
    EXPECT_ZERO(b.o_stride_s);
    EXPECT_ZERO(b.do_stride_b);
    EXPECT_ZERO(b.do_stride_h);
    EXPECT_ZERO(b.do_stride_s);
    EXPECT_ZERO(b.dq_stride_b);
    EXPECT_ZERO(b.dq_stride_h);
    EXPECT_ZERO(b.dq_stride_s);
    EXPECT_ZERO(b.dk_stride_b);
    EXPECT_ZERO(b.dk_stride_h);
    EXPECT_ZERO(b.dk_stride_s);
    EXPECT_ZERO(b.dv_stride_b);
    EXPECT_ZERO(b.dv_stride_h);
    EXPECT_ZERO(b.dv_stride_s);
    EXPECT_ZERO(b.lse_stride_b);
    EXPECT_ZERO(b.lse_stride_h);
    EXPECT_ZERO(b.group_mode);
    EXPECT_ZERO(b.seqstart_q);
    EXPECT_ZERO(b.seqstart_k);
    EXPECT_ZERO(b.seqlen_q_ptr);
    EXPECT_ZERO(b.seqlen_k_ptr);
    EXPECT_ZERO(b.scale);
    EXPECT_ZERO(b.softcap);
    EXPECT_ZERO(b.mask);
    EXPECT_ZERO(b.window_left);
    EXPECT_ZERO(b.window_right);
    EXPECT_ZERO(b.deterministic);
    EXPECT_ZERO(b.workspace);
    EXPECT_ZERO(b.workspace_bytes);
}

static void check_bwd_traits(void)
{
    ckt_fmha_bwd_traits t = CKT_ZERO_INIT;
    EXPECT_ZERO(t.batch);
    EXPECT_ZERO(t.nhead_q);
    EXPECT_ZERO(t.nhead_k);
    EXPECT_ZERO(t.max_seqlen_q);
    EXPECT_ZERO(t.max_seqlen_k);
    EXPECT_ZERO(t.hdim_q);
    EXPECT_ZERO(t.hdim_v);
    EXPECT_ZERO(t.dtype);
    EXPECT_ZERO(t.group_mode);
    EXPECT_ZERO(t.mask);
    EXPECT_ZERO(t.window_left);
    EXPECT_ZERO(t.window_right);
    EXPECT_ZERO(t.deterministic);
    EXPECT_ZERO(t.multiprocessors);
}

static void check_appendkv(void)
{
    ckt_fmha_appendkv_args a = CKT_ZERO_INIT;
    EXPECT_ZERO(a.q);
    EXPECT_ZERO(a.k_new);
    EXPECT_ZERO(a.v_new);
    EXPECT_ZERO(a.k_cache);
    EXPECT_ZERO(a.v_cache);
    EXPECT_ZERO(a.dtype);
    EXPECT_ZERO(a.batch);
    EXPECT_ZERO(a.nhead_q);
    EXPECT_ZERO(a.nhead_k);
    EXPECT_ZERO(a.seqlen_q);
    EXPECT_ZERO(a.seqlen_knew);
    EXPECT_ZERO(a.seqlen_k);
    EXPECT_ZERO(a.cache_seqlen);
    EXPECT_ZERO(a.cache_batch);
    EXPECT_ZERO(a.hdim_q);
    EXPECT_ZERO(a.hdim_v);
    EXPECT_ZERO(a.q_stride_b);
    EXPECT_ZERO(a.q_stride_h);
    EXPECT_ZERO(a.q_stride_s);
    EXPECT_ZERO(a.knew_stride_b);
    EXPECT_ZERO(a.knew_stride_h);
    EXPECT_ZERO(a.knew_stride_s);
    EXPECT_ZERO(a.vnew_stride_b);
    EXPECT_ZERO(a.vnew_stride_h);
    EXPECT_ZERO(a.vnew_stride_s);
    EXPECT_ZERO(a.k_stride_b);
    EXPECT_ZERO(a.k_stride_h);
    EXPECT_ZERO(a.k_stride_s);
    EXPECT_ZERO(a.v_stride_b);
    EXPECT_ZERO(a.v_stride_h);
    EXPECT_ZERO(a.v_stride_s);
    EXPECT_ZERO(a.group_mode);
    EXPECT_ZERO(a.seqstart_q);
    EXPECT_ZERO(a.seqlen_k_ptr);
    EXPECT_ZERO(a.cache_batch_idx);
    EXPECT_ZERO(a.rotary_dim);
    EXPECT_ZERO(a.rotary_interleaved);
    EXPECT_ZERO(a.rotary_cos);
    EXPECT_ZERO(a.rotary_sin);
    EXPECT_ZERO(a.rotary_max_pos);
}

int main(void)
{
    dirty_stack();
    check_fwd();
    dirty_stack();
    check_bwd();
    dirty_stack();
    check_bwd_traits();
    dirty_stack();
    check_appendkv();
    printf("%s: CKT_ZERO_INIT, %d field(s) not zero\n",
#ifdef __cplusplus
           "C++",
#else
           "C",
#endif
           failures);
    return failures != 0;
}
