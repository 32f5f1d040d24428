/* ckt/host/status.h — status codes of every ckt host call.
 *
 * One X-macro table yields the enum and its messages. A failing call also
 * leaves a detail message for the calling thread, naming what was wrong:
 *
 *     ckt_status s = ckt_rt_malloc(&p, bytes);
 *     if (s != CKT_SUCCESS)
 *         fprintf(stderr, "%s: %s\n", ckt_status_string(s), ckt_last_error());
 *
 * The library never prints and never exits; the caller decides.
 */
#ifndef CKT_HOST_STATUS_H
#define CKT_HOST_STATUS_H

#include "ckt/arch/config.h" /* first: asks glibc for POSIX under -std=c11 */

#include <stdarg.h>
#include <stdio.h>

#define CKT_STATUS_TABLE(X)                                                                      \
    X(CKT_SUCCESS, "success")                                                                    \
    X(CKT_ERROR_INVALID_ARGUMENT, "invalid argument")                                            \
    X(CKT_ERROR_NULL_POINTER, "null pointer argument")                                           \
    X(CKT_ERROR_MISALIGNED, "misaligned pointer or stride")                                      \
    X(CKT_ERROR_UNSUPPORTED, "unsupported configuration")                                        \
    X(CKT_ERROR_NO_INSTANCE, "no compiled kernel instance fits the arguments")                   \
    X(CKT_ERROR_OUT_OF_MEMORY, "out of memory")                                                  \
    X(CKT_ERROR_NO_DEVICE, "no usable device")                                                   \
    X(CKT_ERROR_RUNTIME, "device runtime error")                                                 \
    X(CKT_ERROR_LAUNCH, "kernel launch failed")                                                  \
    X(CKT_ERROR_KERNEL, "kernel failed")                                                         \
    X(CKT_ERROR_MISMATCH, "results differ from the reference")

#define CKT__STATUS_ENUM(name, msg) name,
typedef enum ckt_status { CKT_STATUS_TABLE(CKT__STATUS_ENUM) CKT_STATUS_COUNT } ckt_status;
#undef CKT__STATUS_ENUM

static inline const char *ckt_status_string(ckt_status s)
{
#define CKT__STATUS_MSG(name, msg) msg,
    static const char *const msgs[] = {CKT_STATUS_TABLE(CKT__STATUS_MSG)};
#undef CKT__STATUS_MSG
    return (unsigned)s < (unsigned)CKT_STATUS_COUNT ? msgs[s] : "unknown status";
}

static inline const char *ckt_status_name(ckt_status s)
{
#define CKT__STATUS_NAME(name, msg) #name,
    static const char *const names[] = {CKT_STATUS_TABLE(CKT__STATUS_NAME)};
#undef CKT__STATUS_NAME
    return (unsigned)s < (unsigned)CKT_STATUS_COUNT ? names[s] : "CKT_STATUS_UNKNOWN";
}

/* Detail of the calling thread's last failure (shared by all translation
 * units through a weak definition). */
__attribute__((weak)) __thread char ckt__last_error[1024];

static inline const char *ckt_last_error(void) { return ckt__last_error; }

static inline void ckt_clear_error(void) { ckt__last_error[0] = 0; }

/* Records a detail message and returns s: `return ckt__fail(CKT_ERROR_..., "q: ...")`. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline ckt_status
ckt__fail(ckt_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ckt__last_error, sizeof ckt__last_error, fmt, ap);
    va_end(ap);
    return s;
}

#endif /* CKT_HOST_STATUS_H */
