/* tests/downstream/hello.c — a cc_binary on @ckt//:ckt: prints the device. */
#include "ckt/host.h"

#include <stdio.h>

int main(void)
{
    ckt_device_props props;
    ckt_status s = ckt_rt_device_props(&props);
    if (s != CKT_SUCCESS) {
        fprintf(stderr, "ckt_rt_device_props: %s (%s)\n", ckt_status_string(s), ckt_last_error());
        return 1;
    }
    printf("hello from ckt: %s [backend %s, warp %d]\n", props.name, props.backend,
           props.warp_size);
    return 0;
}
