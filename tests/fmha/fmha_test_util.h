// tests/fmha/fmha_test_util.h — what the FMHA kernel tests share: a length
// list as a test-name fragment, and device buffers freed with the test.
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
