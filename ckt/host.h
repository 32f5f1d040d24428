/* ckt/host.h — the host layer: runtime wrapper, status codes, dtypes, random
 * init, timers and comparison. Plain C; see each header for its API. */
#ifndef CKT_HOST_H
#define CKT_HOST_H

#include "ckt/host/args.h"
#include "ckt/host/compare.h"
#include "ckt/host/dtype.h"
#include "ckt/host/random.h"
#include "ckt/host/ref_gemm.h"
#include "ckt/host/runtime.h"
#include "ckt/host/status.h"
#include "ckt/host/timer.h"

#endif /* CKT_HOST_H */
