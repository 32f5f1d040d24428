// tests/fmha/registry_test.cc — libckt_fmha's registry, select reports, plans
// and instance sets (ckt/fmha/registry.h, ckt/fmha/plan.h):
//   every registry entry is selected by a call built from its own fields;
//   a miss says why (dtype, head dims, decode lengths, the KV cache, the set);
//   the JSON export parses and lists every entry;
//   the plans' stages and workspace sizes match the dispatcher's figures.
// Built against the library of the build's set (registry_test, _cdna) and
// against the fixed inference and training sets (registry_inference_test,
// registry_training_test: -DCKT_TEST_FMHA_SET=inference | training).
#include "ckt/fmha.h"
#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#define CKT_TEST_STR2(x) #x
#define CKT_TEST_STR(x) CKT_TEST_STR2(x)

namespace {

std::string last_error() { return ckt_fmha_last_error(); }

bool has(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// A call of the forward family f with e's type and head dims.
ckt_fmha_fwd_args fwd_call(const ckt_fmha_registry_entry *e, int32_t *stand_in)
{
    ckt_fmha_fwd_args a = CKT_ZERO_INIT;
    a.dtype = e->dtype;
    if (e->family != CKT_FMHA_FAMILY_BWD && e->family != CKT_FMHA_FAMILY_APPENDKV) // fp8: the instance's output type
        a.o_dtype = ((const ckt_fmha_fwd_instance *)e->instance)->o_dtype;
    a.batch = 1;
    a.nhead_q = 8;
    a.nhead_k = 2;
    a.seqlen_q = e->family == CKT_FMHA_FAMILY_FWD_DECODE ? 1 : 128;
    a.seqlen_k = 1024;
    a.hdim_q = e->hdim;
    a.hdim_v = e->hdim_v;
    if (e->family == CKT_FMHA_FAMILY_FWD_KV) {
        a.page_size = 16; // paged: only the KV cache's instances take it
        a.num_pages = 64;
    }
    if (e->family == CKT_FMHA_FAMILY_FWD_DECODE)
        a.cache_batch_idx = stand_in; // never read by select
    return a;
}

ckt_fmha_bwd_traits bwd_traits(ckt_dtype dt, int d, int dv)
{
    ckt_fmha_bwd_traits t = CKT_ZERO_INIT;
    t.dtype = dt;
    t.batch = 2;
    t.nhead_q = 4;
    t.nhead_k = 2;
    t.max_seqlen_q = 64;
    t.max_seqlen_k = 512;
    t.hdim_q = d;
    t.hdim_v = dv;
    return t;
}

std::string fwd_report(const ckt_fmha_fwd_args &a)
{
    const size_t n = ckt_fmha_fwd_select_report(&a, nullptr, 0);
    std::string s(n + 1, '\0');
    EXPECT_EQ(ckt_fmha_fwd_select_report(&a, &s[0], s.size()), n);
    s.resize(n);
    return s;
}

std::string bwd_report(const ckt_fmha_bwd_traits &t)
{
    const size_t n = ckt_fmha_bwd_select_report(&t, nullptr, 0);
    std::string s(n + 1, '\0');
    EXPECT_EQ(ckt_fmha_bwd_select_report(&t, &s[0], s.size()), n);
    s.resize(n);
    return s;
}

std::string registry_json(int family = -1)
{
    const size_t n = ckt_fmha_registry_json_family(nullptr, 0, family);
    std::string s(n + 1, '\0');
    EXPECT_EQ(ckt_fmha_registry_json_family(&s[0], s.size(), family), n);
    s.resize(n);
    return s;
}

// >>a small JSON checker: the grammar of RFC 8259, values counted by key

struct Json {
    const std::string s; // a copy: callers pass temporaries
    size_t i = 0;
    std::vector<std::string> names; // every "name" member's string value
    explicit Json(const std::string &text) : s(text) {}
    void ws()
    {
        while (i < s.size() && isspace((unsigned char)s[i]))
            i++;
    }
    bool str(std::string *out)
    {
        if (i >= s.size() || s[i] != '"')
            return false;
        for (i++; i < s.size() && s[i] != '"'; i++) {
            if ((unsigned char)s[i] < 0x20)
                return false;
            if (s[i] == '\\')
                i++;
            if (out)
                out->push_back(s[i]);
        }
        return i++ < s.size();
    }
    bool value()
    {
        ws();
        if (i >= s.size())
            return false;
        if (s[i] == '{') {
            i++;
            ws();
            if (i < s.size() && s[i] == '}')
                return ++i, true;
            for (;;) {
                std::string key, v;
                ws();
                if (!str(&key))
                    return false;
                ws();
                if (i >= s.size() || s[i++] != ':')
                    return false;
                ws();
                if (key == "name" && i < s.size() && s[i] == '"') {
                    if (!str(&v))
                        return false;
                    names.push_back(v);
                } else if (!value()) {
                    return false;
                }
                ws();
                if (i < s.size() && s[i] == ',') {
                    i++;
                    continue;
                }
                return i < s.size() && s[i++] == '}';
            }
        }
        if (s[i] == '[') {
            i++;
            ws();
            if (i < s.size() && s[i] == ']')
                return ++i, true;
            for (;;) {
                if (!value())
                    return false;
                ws();
                if (i < s.size() && s[i] == ',') {
                    i++;
                    continue;
                }
                return i < s.size() && s[i++] == ']';
            }
        }
        if (s[i] == '"')
            return str(nullptr);
        for (const char *lit : {"true", "false", "null"})
            if (s.compare(i, strlen(lit), lit) == 0)
                return i += strlen(lit), true;
        const size_t start = i;
        if (s[i] == '-')
            i++;
        while (i < s.size() && (isdigit((unsigned char)s[i]) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                                s[i] == '+' || s[i] == '-'))
            i++;
        return i > start;
    }
    bool document()
    {
        if (!value())
            return false;
        ws();
        return i == s.size();
    }
};

// >>the registry

TEST(Registry, DescribesEveryCompiledInstance)
{
    int fwd = 0, bwd = 0, akv = 0;
    while (ckt_fmha_fwd_instance_at(fwd))
        fwd++;
    while (ckt_fmha_bwd_instance_at(bwd))
        bwd++;
    while (ckt_fmha_appendkv_instance_at(akv))
        akv++;
    ASSERT_EQ(ckt_fmha_registry_count(), fwd + bwd + akv);
    EXPECT_EQ(ckt_fmha_registry_at(ckt_fmha_registry_count()), nullptr);
    EXPECT_EQ(ckt_fmha_registry_at(-1), nullptr);
    std::set<std::string> names;
    for (int i = 0; i < ckt_fmha_registry_count(); i++) {
        const ckt_fmha_registry_entry *e = ckt_fmha_registry_at(i);
        EXPECT_TRUE(names.insert(e->name).second) << e->name << " twice";
        EXPECT_EQ(ckt_fmha_registry_find(e->name), e);
        EXPECT_TRUE(e->dtype == CKT_F16 || e->dtype == CKT_BF16 ||
                    (e->dtype == CKT_FP8_E4M3 && e->family == CKT_FMHA_FAMILY_FWD))
            << e->name;
        EXPECT_GE(e->hdim, 32) << e->name;
        EXPECT_LE(e->hdim, e->family == CKT_FMHA_FAMILY_FWD ? 576 : e->family == CKT_FMHA_FAMILY_BWD ? 512 : 256)
            << e->name; // fwd: d512, MLA's 576/512; bwd: d512
        EXPECT_GT(e->block_m, 0) << e->name;
        EXPECT_STREQ(e->instance_set, ckt_fmha_instance_set());
        EXPECT_STREQ(e->arch, ckt_fmha_target_arch());
        // the name says the family and the dims
        const std::string n = e->name;
        switch (e->family) {
        case CKT_FMHA_FAMILY_FWD:
            EXPECT_TRUE(has(n, "ckt_fmha_fwd_") && !has(n, "_kv_") && !has(n, "decode")) << n;
            EXPECT_EQ(e->num_stages, 1);
            EXPECT_STREQ(e->stages[0], "attention");
            EXPECT_EQ(e->features & CKT_FMHA_FEATURE_PAGED, 0u) << n;
            break;
        case CKT_FMHA_FAMILY_FWD_KV:
            EXPECT_TRUE(has(n, "ckt_fmha_fwd_kv_")) << n;
            EXPECT_NE(e->features & CKT_FMHA_FEATURE_SPLIT_KV, 0u) << n;
            ASSERT_EQ(e->num_stages, 2);
            EXPECT_STREQ(e->stages[1], "combine");
            break;
        case CKT_FMHA_FAMILY_FWD_DECODE:
            EXPECT_TRUE(has(n, "ckt_fmha_fwd_decode_")) << n;
            EXPECT_NE(e->features & CKT_FMHA_FEATURE_PACKED_GQA, 0u) << n;
            break;
        case CKT_FMHA_FAMILY_APPENDKV:
            EXPECT_TRUE(has(n, "ckt_fmha_appendkv_")) << n;
            EXPECT_NE(e->features & CKT_FMHA_FEATURE_ROTARY, 0u) << n;
            break;
        case CKT_FMHA_FAMILY_BWD:
            EXPECT_TRUE(has(n, "ckt_fmha_bwd_")) << n;
            EXPECT_NE(e->features & CKT_FMHA_FEATURE_DETERMINISTIC, 0u) << n;
            ASSERT_EQ(e->num_stages, 3);
            EXPECT_STREQ(e->stages[0], "dot_do_o");
            EXPECT_STREQ(e->stages[1], "dq_dk_dv");
            EXPECT_STREQ(e->stages[2], "convert_dq");
            break;
        default:
            ADD_FAILURE() << n << ": family " << e->family;
        }
        if (e->family != CKT_FMHA_FAMILY_APPENDKV) {
            EXPECT_TRUE(has(n, "_d" + std::to_string(e->hdim))) << n;
        }
    }
    EXPECT_STREQ(ckt_fmha_family_name(CKT_FMHA_FAMILY_FWD_KV), "fwd_kv");
    EXPECT_STREQ(ckt_fmha_feature_name(8), "split_kv");
    EXPECT_STREQ(ckt_fmha_feature_name(12), "sink");
    EXPECT_EQ(ckt_fmha_feature_name(31), nullptr);
}

TEST(Registry, EveryEntryIsSelectable)
{
    int32_t stand_in = 0;
    for (int i = 0; i < ckt_fmha_registry_count(); i++) {
        const ckt_fmha_registry_entry *e = ckt_fmha_registry_at(i);
        SCOPED_TRACE(e->name);
        switch (e->family) {
        case CKT_FMHA_FAMILY_FWD:
        case CKT_FMHA_FAMILY_FWD_KV:
        case CKT_FMHA_FAMILY_FWD_DECODE: {
            const ckt_fmha_fwd_args a = fwd_call(e, &stand_in);
            if (e->runnable) {
                EXPECT_EQ(ckt_fmha_fwd_select(&a), e->instance) << last_error();
                EXPECT_TRUE(has(fwd_report(a), std::string(e->name) + ": chosen\n")) << fwd_report(a);
            } else { // compiled, declined on this target (CDNA: 576/512)
                EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
                EXPECT_TRUE(has(fwd_report(a), std::string(e->name) + ": rejected: its fits() declines the call"))
                    << fwd_report(a);
            }
            break;
        }
        case CKT_FMHA_FAMILY_APPENDKV: {
            ckt_fmha_appendkv_args a = CKT_ZERO_INIT;
            a.dtype = e->dtype;
            a.hdim_q = e->hdim;
            a.hdim_v = e->hdim_v;
            EXPECT_EQ(ckt_fmha_appendkv_select(&a), e->instance) << last_error();
            a.hdim_q = a.hdim_v = 64; // generic over head dims
            EXPECT_EQ(ckt_fmha_appendkv_select(&a), e->instance) << last_error();
            break;
        }
        case CKT_FMHA_FAMILY_BWD: {
            const ckt_fmha_bwd_traits t = bwd_traits(e->dtype, e->hdim, e->hdim_v);
            if (e->runnable) {
                EXPECT_EQ(ckt_fmha_bwd_select(&t), e->instance) << last_error();
                EXPECT_TRUE(has(bwd_report(t), std::string(e->name) + ": chosen\n")) << bwd_report(t);
            } else { // compiled, declined on this target: select says so
                EXPECT_EQ(ckt_fmha_bwd_select(&t), nullptr);
                EXPECT_TRUE(has(last_error(), "this target")) << last_error();
                EXPECT_TRUE(has(bwd_report(t), std::string(e->name) + ": rejected: this target declines it"))
                    << bwd_report(t);
            }
            break;
        }
        default:
            ADD_FAILURE();
        }
    }
}

TEST(Registry, JsonParsesAndListsEveryEntry)
{
    const std::string js = registry_json();
    Json p(js);
    ASSERT_TRUE(p.document()) << "bad JSON near byte " << p.i << ": " << js.substr(p.i < 40 ? 0 : p.i - 40, 80);
    ASSERT_EQ((int)p.names.size(), ckt_fmha_registry_count());
    for (int i = 0; i < ckt_fmha_registry_count(); i++)
        EXPECT_EQ(p.names[i], ckt_fmha_registry_at(i)->name);
    EXPECT_TRUE(has(js, std::string("\"instance_set\": \"") + ckt_fmha_instance_set() + "\""));
    EXPECT_TRUE(has(js, "\"inference\": [\"fwd\", \"fwd_kv\", \"fwd_decode\", \"appendkv\"]")) << js.substr(0, 300);
    // one instance a line: grep finds it
    const ckt_fmha_registry_entry *e = ckt_fmha_registry_at(0);
    const size_t at = js.find(std::string("\"name\": \"") + e->name + "\"");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(js.rfind('\n', at), js.rfind("\n  {", at)) << "an instance does not start its line";
    // snprintf-style: truncated and terminated, the full length returned
    char small[16];
    EXPECT_EQ(ckt_fmha_registry_json(small, sizeof small), js.size());
    EXPECT_EQ(std::string(small), js.substr(0, 15));
    // one family
    for (int f = 0; f < CKT_FMHA_FAMILY_COUNT; f++) {
        Json q(registry_json(f));
        ASSERT_TRUE(q.document()) << ckt_fmha_family_name(f);
        int n = 0;
        for (int i = 0; i < ckt_fmha_registry_count(); i++)
            n += (int)ckt_fmha_registry_at(i)->family == f;
        EXPECT_EQ((int)q.names.size(), n) << ckt_fmha_family_name(f);
    }
}

// >>misses explain themselves

TEST(Select, MissesSayWhy)
{
    if (!ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD))
        GTEST_SKIP() << "no plain forward in this set";
    ckt_fmha_registry_entry probe = *ckt_fmha_registry_at(0);
    probe.family = CKT_FMHA_FAMILY_FWD;
    ckt_fmha_fwd_args a = fwd_call(&probe, nullptr);
    a.dtype = CKT_F16;
    a.hdim_q = a.hdim_v = 584; // past every head dim
    EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
    EXPECT_TRUE(has(last_error(), "no instance for fp16 hdim_q=584 hdim_v=584: head dims go up to 576 (q/k) and 512 (v)")) << last_error();
    std::string r = fwd_report(a);
    EXPECT_TRUE(has(r, "ckt_fmha_fwd_f16_d128: rejected: head dims: it takes up to 128/128, the call has 584/584"))
        << r;
    EXPECT_TRUE(has(r, "no instance: ckt_fmha_fwd: no instance for fp16")) << r;
    EXPECT_FALSE(has(r, "chosen")) << r;

    a.hdim_q = a.hdim_v = 128;
    r = fwd_report(a); // the other dtype's instances
    EXPECT_TRUE(has(r, "ckt_fmha_fwd_bf16_d128: rejected: dtype: it takes bf16, the call has fp16")) << r;
    EXPECT_TRUE(has(r, "ckt_fmha_fwd_f16_d128: chosen")) << r;
    EXPECT_TRUE(has(r, "ckt_fmha_fwd_f16_d256: fits, but ckt_fmha_fwd_f16_d128 is cheaper")) << r;

    a.hdim_v = 60;
    EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
    EXPECT_TRUE(has(last_error(), "hdim_v is not a multiple of 8")) << last_error();
    EXPECT_TRUE(has(fwd_report(a), "ckt_fmha_fwd_f16_d128: rejected: head dims 128/60: not multiples of 8"));

    a.hdim_v = 128;
    a.dtype = CKT_F32;
    EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
    EXPECT_TRUE(has(last_error(), "dtype: fp32")) << last_error();
    EXPECT_EQ(fwd_report(a), "no instance: " + last_error() + "\n");

    if (ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_DECODE)) {
        a.dtype = CKT_F16;
        r = fwd_report(a); // 128 queries: not a decode call
        EXPECT_TRUE(has(r, "ckt_fmha_fwd_decode_f16_d128: rejected: decode instance: seqlen_q 128 > "
                           "CKT_FMHA_DECODE_MAX_Q 16"))
            << r;
    }
    if (ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_KV)) {
        a.dtype = CKT_F16;
        a.page_size = 16;
        r = fwd_report(a);
        EXPECT_TRUE(has(r, "ckt_fmha_fwd_f16_d128: rejected: compiled without the KV cache; the call sets page_size"))
            << r;
        EXPECT_TRUE(has(r, "ckt_fmha_fwd_kv_f16_d128: chosen")) << r;
    }
    EXPECT_EQ(ckt_fmha_fwd_select_report(nullptr, nullptr, 0), strlen("no instance: ckt_fmha_fwd: args is NULL\n"));

    ckt_fmha_appendkv_args k = CKT_ZERO_INIT;
    k.dtype = CKT_BF16;
    k.hdim_q = k.hdim_v = 264;
    EXPECT_EQ(ckt_fmha_appendkv_select(&k), nullptr);
    if (ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_APPENDKV)) {
        EXPECT_TRUE(has(last_error(), "no instance for bf16 hdim_q=264 hdim_v=264: head dims: it takes up to 256"))
            << last_error();
        char buf[1024];
        ckt_fmha_appendkv_select_report(&k, buf, sizeof buf);
        EXPECT_TRUE(has(buf, "ckt_fmha_appendkv_f16: rejected: dtype: it takes fp16, the call has bf16")) << buf;
    }
}

TEST(Select, BackwardMissesSayWhy)
{
    if (!ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_BWD))
        GTEST_SKIP() << "no backward in this set (RegistrySet checks the message)";
    ckt_fmha_bwd_traits t = bwd_traits(CKT_BF16, 520, 520);
    EXPECT_EQ(ckt_fmha_bwd_select(&t), nullptr);
    EXPECT_TRUE(has(last_error(), "ckt_fmha_bwd: no instance for bf16 hdim_q=520 hdim_v=520: head dims go up to 512"))
        << last_error();
    const std::string r = bwd_report(t);
    EXPECT_TRUE(has(r, "ckt_fmha_bwd_f16_d32: rejected: dtype: it takes fp16, the call has bf16")) << r;
    EXPECT_TRUE(has(r, "ckt_fmha_bwd_bf16_d32: rejected: head dims: it takes up to 32/32, the call has 520/520")) << r;
    EXPECT_TRUE(has(r, "no instance: ")) << r;
}

// >>plans

ckt_fmha_fwd_args split_args(int splits)
{
    ckt_fmha_fwd_args a = CKT_ZERO_INIT;
    a.dtype = CKT_BF16;
    a.batch = 2;
    a.nhead_q = 8;
    a.nhead_k = 8;
    a.seqlen_q = 32;
    a.seqlen_k = 4096;
    a.hdim_q = a.hdim_v = 128;
    a.num_splits = splits;
    return a;
}

TEST(Plan, ForwardStagesAndWorkspace)
{
    ckt_fmha_fwd_plan p;
    ckt_fmha_stage st[CKT_FMHA_MAX_STAGES];
    // unsplit
    ckt_fmha_fwd_args a = split_args(1);
    ASSERT_EQ(ckt_fmha_fwd_plan_init(&p, &a), CKT_SUCCESS) << last_error();
    EXPECT_EQ(p.instance, ckt_fmha_fwd_select(&a));
    EXPECT_EQ(p.num_splits, 1);
    EXPECT_EQ(p.workspace_bytes, 0u);
    EXPECT_EQ(p.workspace_bytes, ckt_fmha_fwd_workspace_bytes(&a));
    ASSERT_EQ(ckt_fmha_fwd_plan_stages(&p, st, CKT_FMHA_MAX_STAGES), 1);
    EXPECT_EQ(st[0], CKT_FMHA_STAGE_ATTENTION);
    EXPECT_STREQ(ckt_fmha_stage_name(st[0]), "attention");

    if (!ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_KV)) {
        a = split_args(4); // no instance splits: the call runs unsplit
        EXPECT_EQ(ckt_fmha_fwd_plan_init(&p, &a), CKT_ERROR_NO_INSTANCE);
        EXPECT_TRUE(has(last_error(), "instance set")) << last_error();
        return;
    }
    // four splits: partials, then the combine; the workspace of
    // ckt/fmha/splitkv.h: lse_acc 4 x 2 x 8 x 32 floats, o_acc x 128 more
    a = split_args(4);
    ASSERT_EQ(ckt_fmha_fwd_plan_init(&p, &a), CKT_SUCCESS) << last_error();
    EXPECT_EQ(p.num_splits, 4);
    EXPECT_EQ(p.instance->kv_cache, 1) << p.instance->name << ": plain instances do not split";
    EXPECT_EQ(p.workspace_bytes, (size_t)(4 * 2 * 8 * 32) * 4 * (1 + 128));
    EXPECT_EQ(p.workspace_bytes, ckt_fmha_fwd_workspace_bytes(&a));
    ASSERT_EQ(ckt_fmha_fwd_plan_stages(&p, st, CKT_FMHA_MAX_STAGES), 2);
    EXPECT_EQ(st[0], CKT_FMHA_STAGE_ATTENTION_PARTIALS);
    EXPECT_EQ(st[1], CKT_FMHA_STAGE_COMBINE);
    char js[512];
    ckt_fmha_fwd_plan_json(&p, js, sizeof js);
    EXPECT_TRUE(has(js, "\"num_splits\": 4, \"workspace_bytes\": 1056768, \"stages\": [\"attention_partials\", "
                        "\"combine\"]"))
        << js;
    EXPECT_TRUE(Json(js).document()) << js;

    // automatic (0): what the heuristic picks with a workspace, and its bytes
    a = split_args(0);
    a.batch = 1;
    a.nhead_q = a.nhead_k = 1;
    ASSERT_EQ(ckt_fmha_fwd_plan_init(&p, &a), CKT_SUCCESS) << last_error();
    EXPECT_EQ(p.workspace_bytes, ckt_fmha_fwd_workspace_bytes(&a));
    ckt_fmha_fwd_args with_ws = a;
    with_ws.workspace = &with_ws;
    EXPECT_EQ(p.num_splits, ckt_fmha_fwd_num_splits(&with_ws));
    EXPECT_EQ(p.num_stages, p.num_splits > 1 ? 2 : 1);
    EXPECT_EQ(ckt_fmha_fwd_plan_stages(nullptr, st, 3), 0);
}

// The plan runs what ckt_fmha_fwd runs: the same bits (2 splits, on the device).
TEST(Plan, ForwardRunMatchesTheDispatcher)
{
    if (!ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_KV))
        GTEST_SKIP() << "no split-KV instance in this set";
    const int b = 1, h = 2, sq = 16, sk = 80, d = 64;
    std::vector<uint16_t> q(b * h * sq * d), kv(b * h * sk * d);
    for (size_t i = 0; i < q.size(); i++)
        ckt_store_f32(q.data(), CKT_BF16, i, (float)((i * 37) % 17) / 17.0f - 0.5f);
    for (size_t i = 0; i < kv.size(); i++)
        ckt_store_f32(kv.data(), CKT_BF16, i, (float)((i * 53) % 23) / 23.0f - 0.5f);
    FmhaDeviceBuffers buf;
    ckt_fmha_fwd_args a = CKT_ZERO_INIT;
    a.dtype = CKT_BF16;
    a.batch = b;
    a.nhead_q = a.nhead_k = h;
    a.seqlen_q = sq;
    a.seqlen_k = sk;
    a.hdim_q = a.hdim_v = d;
    a.q = buf.dev(q.data(), q.size() * 2);
    a.k = buf.dev(kv.data(), kv.size() * 2);
    a.v = buf.dev(kv.data(), kv.size() * 2);
    ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, h, sq, d);
    ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 1, h, sk, d);
    ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 1, h, sk, d);
    ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, 1, h, sq, d);
    a.num_splits = 2;
    ckt_fmha_fwd_plan p;
    ASSERT_EQ(ckt_fmha_fwd_plan_init(&p, &a), CKT_SUCCESS) << last_error();
    ASSERT_EQ(p.num_splits, 2);
    a.workspace = buf.dev(nullptr, p.workspace_bytes);
    a.workspace_bytes = p.workspace_bytes;
    std::vector<uint16_t> o1(q.size()), o2(q.size(), 1);
    a.o = buf.dev(nullptr, q.size() * 2);
    ASSERT_EQ(ckt_fmha_fwd_run(&p, &a, nullptr), CKT_SUCCESS) << last_error();
    ASSERT_EQ(ckt_rt_memcpy(o1.data(), a.o, o1.size() * 2, CKT_D2H), CKT_SUCCESS);
    a.o = buf.dev(nullptr, q.size() * 2);
    ASSERT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_SUCCESS) << last_error();
    ASSERT_EQ(ckt_rt_memcpy(o2.data(), a.o, o2.size() * 2, CKT_D2H), CKT_SUCCESS);
    EXPECT_EQ(o1, o2);
    EXPECT_NE(o1, std::vector<uint16_t>(o1.size(), 0));
}

TEST(Plan, BackwardStagesAndWorkspace)
{
    if (!ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_BWD))
        GTEST_SKIP() << "no backward in this set";
    ckt_fmha_stage st[CKT_FMHA_MAX_STAGES];
    size_t ws[2];
    for (int det = 0; det < 2; det++) {
        SCOPED_TRACE(det ? "deterministic" : "atomic dQ");
        ckt_fmha_bwd_traits t = bwd_traits(CKT_F16, 128, 128);
        t.deterministic = det;
        t.multiprocessors = 4;
        ckt_fmha_bwd_plan p;
        ASSERT_EQ(ckt_fmha_bwd_plan_init(&p, &t), CKT_SUCCESS) << last_error();
        const ckt_fmha_bwd_instance *in = (const ckt_fmha_bwd_instance *)p.instance;
        ASSERT_EQ(in, ckt_fmha_bwd_select(&t));
        ASSERT_EQ(ckt_fmha_bwd_plan_stages(&p, st, CKT_FMHA_MAX_STAGES), 3);
        EXPECT_EQ(st[0], CKT_FMHA_STAGE_DOT_DO_O);
        EXPECT_EQ(st[1], CKT_FMHA_STAGE_DQ_DK_DV);
        EXPECT_EQ(st[2], CKT_FMHA_STAGE_CONVERT_DQ);
        // the grid: one block per unit (2 entries x 2 kv heads x key tiles), or persistent
        const int units = 2 * 2 * ((512 + in->block_n - 1) / in->block_n);
        EXPECT_EQ(p.grid, det ? 4 * in->blocks_per_mp : units);
        // the workspace the dispatcher's one-call path asks for, from args
        ckt_fmha_bwd_args a = CKT_ZERO_INIT;
        a.dtype = t.dtype;
        a.batch = t.batch;
        a.nhead_q = t.nhead_q;
        a.nhead_k = t.nhead_k;
        a.seqlen_q = t.max_seqlen_q;
        a.seqlen_k = t.max_seqlen_k;
        a.hdim_q = t.hdim_q;
        a.hdim_v = t.hdim_v;
        a.deterministic = det;
        ckt_fmha_bwd_traits t0 = t;
        t0.multiprocessors = 0; // as ckt_fmha_bwd plans: the device's
        ckt_fmha_bwd_plan p0;
        ASSERT_EQ(ckt_fmha_bwd_plan_init(&p0, &t0), CKT_SUCCESS);
        ws[det] = ckt_fmha_bwd_workspace_upper_bound(&p0);
        EXPECT_EQ(ws[det], ckt_fmha_bwd_workspace_bytes(&a));
        char js[512];
        ckt_fmha_bwd_plan_json(&p0, js, sizeof js);
        EXPECT_TRUE(Json(js).document()) << js;
        EXPECT_TRUE(has(js, "\"workspace_bytes\": " + std::to_string(ws[det]) + ",")) << js;
        EXPECT_TRUE(has(js, "\"stages\": [\"dot_do_o\", \"dq_dk_dv\", \"convert_dq\"]")) << js;
        if (!det) { // meta, dQ fp32 (2 x 4 heads x 64 rows x 128), D fp32 (2 x 4 x 64)
            EXPECT_EQ(ws[det], p0.meta_bytes + (size_t)2 * 4 * 64 * 128 * 4 + (size_t)2 * 4 * 64 * 4);
        }
    }
    EXPECT_GE(ws[1], ws[0]); // deterministic: one dQ slot per block that shares a head
    // attention sinks: their gradient is a fourth stage, launched last, and costs no workspace
    ckt_fmha_bwd_args a = CKT_ZERO_INIT;
    a.dtype = CKT_F16;
    a.batch = 2;
    a.nhead_q = 4;
    a.nhead_k = 2;
    a.seqlen_q = 64;
    a.seqlen_k = 512;
    a.hdim_q = a.hdim_v = 128;
    float sink[4] = {0}, dsink[4] = {0};
    a.sink = sink;
    a.dsink = dsink;
    const ckt_fmha_bwd_traits ts = ckt_fmha_bwd_traits_of(&a);
    EXPECT_EQ(ts.dsink, 1);
    ckt_fmha_bwd_plan ps;
    ASSERT_EQ(ckt_fmha_bwd_plan_init(&ps, &ts), CKT_SUCCESS) << last_error();
    ASSERT_EQ(ckt_fmha_bwd_plan_stages(&ps, st, CKT_FMHA_MAX_STAGES), 4);
    EXPECT_EQ(st[2], CKT_FMHA_STAGE_CONVERT_DQ);
    EXPECT_EQ(st[3], CKT_FMHA_STAGE_DSINK);
    EXPECT_STREQ(ckt_fmha_stage_name(st[3]), "dsink");
    EXPECT_EQ(ckt_fmha_bwd_workspace_upper_bound(&ps), ws[0]);
    char js[512];
    ckt_fmha_bwd_plan_json(&ps, js, sizeof js);
    EXPECT_TRUE(has(js, "\"stages\": [\"dot_do_o\", \"dq_dk_dv\", \"convert_dq\", \"dsink\"]")) << js;
    a.sink = nullptr; // no gradient asked: three stages
    a.dsink = nullptr;
    const ckt_fmha_bwd_traits tn = ckt_fmha_bwd_traits_of(&a);
    ASSERT_EQ(ckt_fmha_bwd_plan_init(&ps, &tn), CKT_SUCCESS);
    EXPECT_EQ(ckt_fmha_bwd_plan_stages(&ps, st, CKT_FMHA_MAX_STAGES), 3);
    // a dbias broadcast over the entries: dbias_reduce after dq_dk_dv, and its dS section in the workspace
    uint16_t bias_dbias[2] = {0, 0};
    a.bias = bias_dbias;
    a.dbias = bias_dbias + 1;
    a.dbias_stride_s = a.seqlen_k;
    a.dbias_stride_h = (int64_t)a.seqlen_q * a.seqlen_k;
    a.dbias_stride_b = 0;
    const ckt_fmha_bwd_traits tr = ckt_fmha_bwd_traits_of(&a);
    EXPECT_EQ(tr.dbias_reduce, 1);
    ASSERT_EQ(ckt_fmha_bwd_plan_init(&ps, &tr), CKT_SUCCESS) << last_error();
    ASSERT_EQ(ckt_fmha_bwd_plan_stages(&ps, st, CKT_FMHA_MAX_STAGES), 4);
    EXPECT_EQ(st[2], CKT_FMHA_STAGE_DBIAS_REDUCE);
    EXPECT_STREQ(ckt_fmha_stage_name(st[2]), "dbias_reduce");
    EXPECT_EQ(ps.dbias_bytes, (size_t)2 * 2 * 4 * 64 * 512);
    EXPECT_EQ(ckt_fmha_bwd_workspace_upper_bound(&ps), ps.dbias_offset + ps.dbias_bytes);
    EXPECT_GE(ps.dbias_offset, ws[0]); // past the sections the plain plan needs
}

// >>instance sets

#ifdef CKT_TEST_FMHA_SET
TEST(RegistrySet, NamesTheSetAndItsMisses)
{
    const std::string set = CKT_TEST_STR(CKT_TEST_FMHA_SET);
    EXPECT_EQ(ckt_fmha_instance_set(), set);
    EXPECT_TRUE(has(registry_json(), "\"instance_set\": \"" + set + "\""));
    if (set == "inference") {
        EXPECT_FALSE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_BWD));
        EXPECT_TRUE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_KV));
        EXPECT_TRUE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_DECODE));
        EXPECT_TRUE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_APPENDKV));
        EXPECT_EQ(ckt_fmha_bwd_instance_at(0), nullptr);
        EXPECT_FALSE(has(registry_json(), "\"family\": \"bwd\""));
        ckt_fmha_bwd_traits t = bwd_traits(CKT_F16, 128, 128);
        ckt_fmha_bwd_plan p;
        EXPECT_EQ(ckt_fmha_bwd_plan_init(&p, &t), CKT_ERROR_NO_INSTANCE);
        EXPECT_EQ(last_error(), "ckt_fmha_bwd: no backward instance in instance set 'inference' (build with "
                                "--define=ckt_fmha_set=all or training)");
        EXPECT_EQ(bwd_report(t), "no instance: " + last_error() + "\n");
        ckt_fmha_bwd_args a = CKT_ZERO_INIT;
        a.dtype = CKT_F16;
        a.hdim_q = a.hdim_v = 64;
        EXPECT_EQ(ckt_fmha_bwd(&a, nullptr), CKT_ERROR_NO_INSTANCE);
        EXPECT_TRUE(has(last_error(), "instance set 'inference'")) << last_error();
    } else if (set == "training") {
        EXPECT_TRUE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_BWD));
        EXPECT_TRUE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD));
        EXPECT_FALSE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_FWD_KV));
        EXPECT_FALSE(ckt_fmha_registry_has_family(CKT_FMHA_FAMILY_APPENDKV));
        // the KV cache needs a family this set leaves out
        ckt_fmha_fwd_args a = split_args(1);
        a.page_size = 16;
        EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
        EXPECT_TRUE(has(last_error(), "no compiled instance with the KV cache (paged, split-KV, cache_batch_idx) "
                                      "covers it; instance set 'training' has no fwd_kv instance for it (build with "
                                      "--define=ckt_fmha_set=all or inference)"))
            << last_error();
        a.seqlen_q = 1; // a decode call: the decode family is missing too
        EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
        EXPECT_TRUE(has(last_error(), "has no fwd_kv or fwd_decode instance for it")) << last_error();
        ckt_fmha_appendkv_args k = CKT_ZERO_INIT;
        k.dtype = CKT_F16;
        k.hdim_q = k.hdim_v = 64;
        EXPECT_EQ(ckt_fmha_appendkv_select(&k), nullptr);
        EXPECT_EQ(ckt_fmha_appendkv(&k, nullptr), CKT_ERROR_NO_INSTANCE);
        EXPECT_EQ(last_error(), "ckt_fmha_appendkv: no append-KV instance in instance set 'training' (build with "
                                "--define=ckt_fmha_set=all or inference)");
        // head dims no set has: no set hint
        a = split_args(1);
        a.hdim_q = a.hdim_v = 584;
        EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
        EXPECT_FALSE(has(last_error(), "instance set")) << last_error();
    }
}
#else
TEST(RegistrySet, TheDefaultBuildHasEveryFamily)
{
    if (std::string(ckt_fmha_instance_set()) != "all")
        GTEST_SKIP() << "built with --define=ckt_fmha_set=" << ckt_fmha_instance_set();
    for (int f = 0; f < CKT_FMHA_FAMILY_COUNT; f++)
        EXPECT_TRUE(ckt_fmha_registry_has_family(f)) << ckt_fmha_family_name(f);
    // head-dim pairs x 2 dtypes: 7 for fwd_kv, 8 for bwd (d512), 9 for fwd (d512, 576/512); 3 x 2 decode; 2 append-KV;
    // fp8 fwd: 2 head dims x 2 output types
    EXPECT_EQ(ckt_fmha_registry_count(), 14 + 16 + 18 + 6 + 2 + 4);
}
#endif

} // namespace
