// The copy and transpose kernels of examples/copy (built from the tile layer)
// over ragged shapes, every variant and layout, 16-bit and fp32, with leading
// dimensions larger than the rows: the result must match the host and nothing
// outside the destination matrix may be written.
#include "examples/copy/copy.h"
#include "tests/tile/tile_test_util.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace tile_test;

// Runs one operation on an m x n matrix; ld_pad extra elements per row.
void check(ckt_dtype dt, bool transpose, int variant, int64_t m, int64_t n, int64_t ld_pad)
{
    const int64_t drows = transpose ? n : m, dcols = transpose ? m : n;
    const int64_t ld_src = n + ld_pad, ld_dst = dcols + ld_pad;
    const size_t es = ckt_dtype_size(dt);
    // 32-bit words hold either type: 16-bit data as two elements per word
    const size_t src_elems = (size_t)(m * ld_src), dst_elems = (size_t)(drows * ld_dst);
    std::vector<uint8_t> src(src_elems * es + 4), dst(dst_elems * es + 4, 0xC3);
    for (size_t i = 0; i < src.size(); i++)
        src[i] = (uint8_t)(i * 131 + 7);
    std::vector<uint8_t> want = dst;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const int64_t d = transpose ? j * ld_dst + i : i * ld_dst + j;
            memcpy(&want[d * es], &src[(i * ld_src + j) * es], es);
        }
    DevBuf<uint8_t> dsrc(src.size()), ddst(dst.size());
    dsrc.upload(src);
    ddst.upload(dst);
    const ckt_status s =
        transpose ? transpose_launch(dt, variant, dsrc.p, ld_src, ddst.p, ld_dst, m, n, NULL)
                  : copy_launch(dt, variant, dsrc.p, ld_src, ddst.p, ld_dst, m, n, NULL);
    ASSERT_EQ(s, CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    const std::vector<uint8_t> got = ddst.download();
    for (size_t i = 0; i < got.size(); i++)
        ASSERT_EQ(got[i], want[i]) << (transpose ? "transpose " : "copy ") << ckt_dtype_name(dt)
                                   << " variant " << variant << " m " << m << " n " << n
                                   << " ld_pad " << ld_pad << ": byte " << i << " (element "
                                   << i / es << ")";
}

const int64_t kSizes[] = {0, 1, 7, 31, 64, 65, 130};

TEST(CopyExample, CopyRaggedShapes)
{
    for (ckt_dtype dt : {CKT_F16, CKT_F32})
        for (int vecs : {2, 4, 8})
            for (int64_t m : kSizes)
                for (int64_t n : {0, 1, 9, 255, 256, 300})
                    check(dt, false, vecs, m, n, m % 2 ? 8 : 0);
}

TEST(CopyExample, TransposeRaggedShapes)
{
    for (ckt_dtype dt : {CKT_BF16, CKT_F32})
        for (int layout : {CKT_SMEM_ROW_MAJOR, CKT_SMEM_PADDED, CKT_SMEM_SWIZZLE_T})
            for (int64_t m : kSizes)
                for (int64_t n : kSizes)
                    check(dt, true, layout, m, n, n % 2 ? 8 : 0);
}

TEST(CopyExample, RejectsBadArguments)
{
    EXPECT_EQ(copy_launch(CKT_F16, 3, NULL, 1, NULL, 1, 1, 1, NULL), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(copy_launch(CKT_F16, 4, NULL, 1, NULL, 1, 1, 2, NULL), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(transpose_launch(CKT_F32, CKT_SMEM_SWIZZLE, NULL, 1, NULL, 1, 1, 1, NULL),
              CKT_ERROR_INVALID_ARGUMENT);
}

} // namespace
