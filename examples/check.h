/* examples/check.h — how the example programs stop on an error: print the
 * failed call, its status and the library's detail message, and exit with
 * status 2. (Example code only: the library itself never prints or exits.)
 * exit() rather than `return` from main: the buffers main holds stay on its
 * stack, so LeakSanitizer (--config=asan) does not report the error path,
 * which does not free them, as leaks.
 *
 *   CHECK(ckt_rt_malloc(&p, bytes));
 */
#ifndef CKT_EXAMPLES_CHECK_H
#define CKT_EXAMPLES_CHECK_H

#include "ckt/host/status.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                               \
    do {                                                                                          \
        ckt_status check_status_ = (call);                                                        \
        if (check_status_ != CKT_SUCCESS) {                                                       \
            fprintf(stderr, "error: %s: %s (%s)\n", #call, ckt_status_string(check_status_),      \
                    ckt_last_error());                                                            \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

#endif /* CKT_EXAMPLES_CHECK_H */
