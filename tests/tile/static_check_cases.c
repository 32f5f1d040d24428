/* Tile shapes that the compile-time checks must reject, one per macro
 * (tests/tile/static_check_test.sh compiles this file once per case and
 * expects the message after "expect:"). Without a case macro it compiles. */
#include "ckt/tile/regs.h"
#include "ckt/tile/rows.h"
#include "ckt/tile/smem.h"

#if defined(BAD_COLS) /* expect: C (columns) must be a multiple of V */
CKT_ROWS_CHECK(8, 60, 8, 32, 2);
#elif defined(BAD_VECTOR) /* expect: a vector of V elements must be 4, 8 or 16 bytes */
CKT_ROWS_CHECK(8, 64, 8, 32, 4);
#elif defined(BAD_SPLIT) /* expect: must split evenly over the T threads */
CKT_ROWS_CHECK(3, 64, 8, 32, 2);
#elif defined(BAD_SWIZZLE) /* expect: a swizzled row must be a multiple of 128 bytes */
CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE, 32, 2);
#elif defined(BAD_REDUCE) /* expect: must be a power of 2 */
CKT_ROWS_REDUCE_CHECK(2, 48, 8, 6);
#else
CKT_ROWS_CHECK(8, 64, 8, 32, 2);
CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE_T, 64, 2);
CKT_ROWS_REDUCE_CHECK(8, 64, 8, 32);
#endif
