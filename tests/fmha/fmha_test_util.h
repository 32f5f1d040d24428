// tests/fmha/fmha_test_util.h — what the FMHA kernel tests share: a length
// list as a test-name fragment, device buffers freed with the test, and the
// emulator schedules of the reproducibility tests.
#ifndef CKT_TESTS_FMHA_TEST_UTIL_H
#define CKT_TESTS_FMHA_TEST_UTIL_H

#include "ckt/host/runtime.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

// {1, 3, 55} -> "1_3_55"
inline std::string fmha_test_list(const std::vector<int> &v)
{
    std::string s;
    for (size_t i = 0; i < v.size(); i++)
        s += (i ? "_" : "") + std::to_string(v[i]);
    return s;
}

// An emulator schedule (ckt_emu_set_schedule: 0 forward, 1 reverse, 2
// shuffled by seed) and OS-thread count (CKT_EMU_THREADS) for the runs of a
// reproducibility test; on a GPU the runs simply repeat.
// fmha_emu_schedule_reset() restores the defaults after the last run.
struct FmhaEmuSchedule {
    int schedule;
    uint64_t seed;
    const char *threads;
};

inline void fmha_emu_schedule_set(const FmhaEmuSchedule &s)
{
#if defined(CKT_BACKEND_CPU)
    setenv("CKT_EMU_THREADS", s.threads, 1);
    ckt_emu_set_schedule(s.schedule, s.seed);
#else
    (void)s;
#endif
}

inline void fmha_emu_schedule_reset()
{
#if defined(CKT_BACKEND_CPU)
    ckt_emu_set_schedule(-1, 0);
    unsetenv("CKT_EMU_THREADS");
#endif
}

// Device copies of host data (or uninitialized when src is NULL), freed on destruction.
struct FmhaDeviceBuffers {
    std::vector<void *> allocs;
    FmhaDeviceBuffers() = default;
    FmhaDeviceBuffers(const FmhaDeviceBuffers &) = delete;
    FmhaDeviceBuffers &operator=(const FmhaDeviceBuffers &) = delete;
    ~FmhaDeviceBuffers()
    {
        for (void *p : allocs)
            ckt_rt_free(p);
    }
    void *dev(const void *src, size_t bytes)
    {
        void *p = nullptr;
        EXPECT_EQ(ckt_rt_malloc(&p, bytes ? bytes : 16), CKT_SUCCESS);
        if (p && src && bytes) {
            EXPECT_EQ(ckt_rt_memcpy(p, src, bytes, CKT_H2D), CKT_SUCCESS);
        }
        allocs.push_back(p);
        return p;
    }
};

#endif
