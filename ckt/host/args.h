/* ckt/host/args.h — CK-style command-line options for examples and benchmarks:
 * `-name=value` (also `-name value` is NOT accepted: one token per option).
 *
 *   long long m = ckt_arg_int(argc, argv, "m", 3328);
 *   const char *prec = ckt_arg_str(argc, argv, "prec", "fp16");
 *   if (ckt_arg_unknown(argc, argv, known)) ...   // names not in the list
 */
#ifndef CKT_HOST_ARGS_H
#define CKT_HOST_ARGS_H

#include "ckt/arch/config.h" /* first: asks glibc for POSIX under -std=c11 */

#include <stdlib.h>
#include <string.h>

/* The value of -name=value, or NULL. The last occurrence wins. */
static inline const char *ckt_arg_find(int argc, char **argv, const char *name)
{
    size_t len = strlen(name);
    const char *found = NULL;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && strncmp(argv[i] + 1, name, len) == 0 && argv[i][1 + len] == '=')
            found = argv[i] + 2 + len;
    return found;
}

static inline const char *ckt_arg_str(int argc, char **argv, const char *name, const char *fallback)
{
    const char *v = ckt_arg_find(argc, argv, name);
    return v ? v : fallback;
}

static inline long long ckt_arg_int(int argc, char **argv, const char *name, long long fallback)
{
    const char *v = ckt_arg_find(argc, argv, name);
    return v ? strtoll(v, NULL, 10) : fallback;
}

static inline double ckt_arg_double(int argc, char **argv, const char *name, double fallback)
{
    const char *v = ckt_arg_find(argc, argv, name);
    return v ? strtod(v, NULL) : fallback;
}

/* Index of the first argument that is not -name=value with a name from
 * `known` (a NULL-terminated list), or 0 if all are known. */
static inline int ckt_arg_unknown(int argc, char **argv, const char *const *known)
{
    for (int i = 1; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        int ok = 0;
        if (argv[i][0] == '-' && eq)
            for (const char *const *k = known; *k && !ok; k++)
                ok = strlen(*k) == (size_t)(eq - argv[i] - 1) && strncmp(argv[i] + 1, *k, strlen(*k)) == 0;
        if (!ok)
            return i;
    }
    return 0;
}

#endif /* CKT_HOST_ARGS_H */
