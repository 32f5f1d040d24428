/* tools/fmha_registry.c — what libckt_fmha compiled, and what a call would run:
 *
 *   bazel run //tools:fmha_registry                      # a table of every instance
 *   bazel run //tools:fmha_registry -- -json             # the registry as JSON (grep it)
 *   bazel run //tools:fmha_registry -- -family=bwd       # one family: fwd fwd_kv fwd_decode appendkv bwd
 *   bazel run //tools:fmha_registry -- -select=fwd -prec=bf16 -d=128 -s=1 -s_k=4096 -page_block_size=16
 *                                                        # each candidate and why not; the plan
 *
 * -select=fwd|bwd|appendkv takes the examples' names for the call (defaults
 * in brackets): -prec [fp16] -b [1] -h [8] -h_k [h] -s [1024] -s_k [s] -d [128]
 * -d_v [d] -mode [0] (1: group mode) -page_block_size [0] -cache_batch_idx [0]
 * (1: set) -num_splits [0] (0: automatic, a workspace given) -deterministic
 * [0] (bwd). Exit status: 0, or 1 when -select finds no instance, 2 on bad
 * options. In the GPU configurations: fmha_registry_gpu (the device's
 * multiprocessors pick the automatic split count). docs/fmha.md#registry.
 */
#include "ckt/fmha.h"
#include "ckt/host/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int family_of(const char *s)
{
    for (int f = 0; f < CKT_FMHA_FAMILY_COUNT; f++)
        if (strcmp(s, ckt_fmha_family_name(f)) == 0)
            return f;
    return -2;
}

/* -name alone means -name=1 (so -json works as well as -json=1). */
static int flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && strcmp(argv[i] + 1, name) == 0)
            return 1;
    return (int)ckt_arg_int(argc, argv, name, 0);
}

static void print_table(int family)
{
    printf("%-34s %-10s %-5s %-8s %-8s %-30s %s\n", "name", "family", "dtype", "hdim", "tile", "stages", "features");
    for (int i = 0; i < ckt_fmha_registry_count(); i++) {
        const ckt_fmha_registry_entry *e = ckt_fmha_registry_at(i);
        if (family >= 0 && (int)e->family != family)
            continue;
        char dims[32], tile[32], feats[256] = "", stages[128] = "";
        snprintf(dims, sizeof dims, "%d/%d", e->hdim, e->hdim_v);
        snprintf(tile, sizeof tile, "%dx%d", e->block_m, e->block_n);
        size_t n = 0;
        for (int b = 0; ckt_fmha_feature_name(b) && n < sizeof feats; b++)
            if (e->features >> b & 1u)
                n += (size_t)snprintf(feats + n, sizeof feats - n, "%s%s", n ? "," : "", ckt_fmha_feature_name(b));
        n = 0;
        for (int k = 0; k < e->num_stages && n < sizeof stages; k++)
            n += (size_t)snprintf(stages + n, sizeof stages - n, "%s%s", k ? "," : "", e->stages[k]);
        printf("%-34s %-10s %-5s %-8s %-8s %-30s %s%s\n", e->name, ckt_fmha_family_name(e->family),
               ckt_dtype_name(e->dtype), dims, tile, stages, feats, e->runnable ? "" : " (not on this target)");
    }
    printf("instance set: %s; targets: %s; %d instances\n", ckt_fmha_instance_set(), ckt_fmha_target_arch(),
           ckt_fmha_registry_count());
}

/* Prints the report of `what` and its plan; 0 when an instance fits. */
static int select_call(const char *what, int argc, char **argv)
{
    ckt_dtype dt = CKT_F16;
    if (ckt_dtype_parse(ckt_arg_str(argc, argv, "prec", "fp16"), &dt) != 0) {
        fprintf(stderr, "-prec: %s (fp16 or bf16)\n", ckt_arg_str(argc, argv, "prec", ""));
        return 2;
    }
    const int b = (int)ckt_arg_int(argc, argv, "b", 1), h = (int)ckt_arg_int(argc, argv, "h", 8);
    const int hk = (int)ckt_arg_int(argc, argv, "h_k", h), s = (int)ckt_arg_int(argc, argv, "s", 1024);
    const int sk = (int)ckt_arg_int(argc, argv, "s_k", s), d = (int)ckt_arg_int(argc, argv, "d", 128);
    const int dv = (int)ckt_arg_int(argc, argv, "d_v", d), mode = (int)ckt_arg_int(argc, argv, "mode", 0);
    static char report[1 << 16], json[4096];
    int found = 0;
    if (strcmp(what, "fwd") == 0) {
        ckt_fmha_fwd_args a = CKT_ZERO_INIT;
        static int32_t stand_in[1];
        a.dtype = dt;
        a.batch = b;
        a.nhead_q = h;
        a.nhead_k = hk;
        a.seqlen_q = s;
        a.seqlen_k = sk;
        a.hdim_q = d;
        a.hdim_v = dv;
        a.group_mode = mode;
        a.page_size = (int)ckt_arg_int(argc, argv, "page_block_size", 0);
        a.cache_batch_idx = ckt_arg_int(argc, argv, "cache_batch_idx", 0) ? stand_in : NULL; /* never read */
        a.num_splits = (int)ckt_arg_int(argc, argv, "num_splits", 0);
        ckt_fmha_fwd_select_report(&a, report, sizeof report);
        fputs(report, stdout);
        ckt_fmha_fwd_plan p;
        found = ckt_fmha_fwd_plan_init(&p, &a) == CKT_SUCCESS;
        if (found) {
            ckt_fmha_fwd_plan_json(&p, json, sizeof json);
            printf("plan: %s\n", json);
        }
    } else if (strcmp(what, "bwd") == 0) {
        ckt_fmha_bwd_traits t = CKT_ZERO_INIT;
        t.dtype = dt;
        t.batch = b;
        t.nhead_q = h;
        t.nhead_k = hk;
        t.max_seqlen_q = s;
        t.max_seqlen_k = sk;
        t.hdim_q = d;
        t.hdim_v = dv;
        t.group_mode = mode;
        t.deterministic = (int)ckt_arg_int(argc, argv, "deterministic", 0);
        ckt_fmha_bwd_select_report(&t, report, sizeof report);
        fputs(report, stdout);
        ckt_fmha_bwd_plan p;
        found = ckt_fmha_bwd_plan_init(&p, &t) == CKT_SUCCESS;
        if (found) {
            ckt_fmha_bwd_plan_json(&p, json, sizeof json);
            printf("plan: %s\n", json);
        } else if (ckt_fmha_bwd_select(&t)) {
            printf("plan: %s\n", ckt_fmha_last_error()); /* an instance, but the traits do not plan */
        }
    } else if (strcmp(what, "appendkv") == 0) {
        ckt_fmha_appendkv_args a = CKT_ZERO_INIT;
        a.dtype = dt;
        a.hdim_q = d;
        a.hdim_v = dv;
        ckt_fmha_appendkv_select_report(&a, report, sizeof report);
        fputs(report, stdout);
        found = ckt_fmha_appendkv_select(&a) != NULL;
    } else {
        fprintf(stderr, "-select: %s (fwd, bwd or appendkv)\n", what);
        return 2;
    }
    return found ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"json", "family", "select", "prec", "b", "h", "h_k", "s", "s_k", "d", "d_v",
                                        "mode", "page_block_size", "cache_batch_idx", "num_splits", "deterministic",
                                        NULL};
    for (int i = 1; i < argc; i++) {
        char *one[2] = {argv[0], argv[i]};
        if (strcmp(argv[i], "-json") != 0 && ckt_arg_unknown(2, one, known)) {
            fprintf(stderr, "fmha_registry: unknown option %s (see tools/fmha_registry.c)\n", argv[i]);
            return 2;
        }
    }
    const char *sel = ckt_arg_find(argc, argv, "select");
    if (sel)
        return select_call(sel, argc, argv);
    int family = -1;
    const char *fam = ckt_arg_find(argc, argv, "family");
    if (fam && (family = family_of(fam)) < 0) {
        fprintf(stderr, "-family: %s (fwd, fwd_kv, fwd_decode, appendkv or bwd)\n", fam);
        return 2;
    }
    if (flag(argc, argv, "json")) {
        const size_t n = ckt_fmha_registry_json_family(NULL, 0, family);
        char *buf = (char *)malloc(n + 1);
        if (!buf)
            return 2;
        ckt_fmha_registry_json_family(buf, n + 1, family);
        fputs(buf, stdout);
        free(buf);
    } else {
        print_table(family);
    }
    return 0;
}
