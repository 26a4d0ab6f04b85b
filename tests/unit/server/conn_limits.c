/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet API's connection admission (src/server/conn.c, issue 26 item 6): IPv6 sources counted per /64, and
 * a full table makes room by closing the oldest connection not authorized instead of refusing the new one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "server/server-internal.h"

static void key6(const char *addr, char ret[API_SOURCE_KEY_MAX]) {
        struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
        assert_int_equal(inet_pton(AF_INET6, addr, &sa.sin6_addr), 1);
        api_source_key((struct sockaddr *) &sa, sizeof(sa), ret);
}

static void test_source_key(void **state) {
        struct sockaddr_in sa = { .sin_family = AF_INET };
        char k[API_SOURCE_KEY_MAX], k2[API_SOURCE_KEY_MAX];
        (void) state;

        assert_int_equal(inet_pton(AF_INET, "10.1.2.3", &sa.sin_addr), 1);
        api_source_key((struct sockaddr *) &sa, sizeof(sa), k);
        assert_string_equal(k, "10.1.2.3");
        key6("2001:db8:1:2:aaaa:bbbb:cccc:dddd", k);
        assert_string_equal(k, "2001:db8:1:2::/64");
        key6("2001:db8:1:2::1", k2);
        assert_string_equal(k, k2); /* one /64: one source */
        key6("2001:db8:1:3::1", k2);
        assert_string_equal(k2, "2001:db8:1:3::/64");
        key6("::ffff:10.1.2.3", k);
        assert_string_equal(k, "10.1.2.3"); /* IPv4-mapped: the IPv4 address */
        api_source_key(NULL, 0, k);
        assert_string_equal(k, "?");
        api_source_key((struct sockaddr *) &sa, 2, k); /* truncated */
        assert_string_equal(k, "?");
}

static void test_admit(void **state) {
        const struct api_conn_limits lim = { .max_total = 4, .max_per_source = 2 };
        struct api_conn_view open[4] = {
                { .key = "10.0.0.1", .authorized = true },
                { .key = "10.0.0.2", .authorized = false }, /* the oldest not authorized */
                { .key = "10.0.0.3", .authorized = false },
                { .key = "10.0.0.4", .authorized = false },
        };
        size_t victim = 99;
        (void) state;

        assert_int_equal(api_conn_admit(open, 0, "10.0.0.9", true, &lim, &victim), API_ADMIT);
        assert_int_equal(api_conn_admit(open, 3, "10.0.0.9", true, &lim, &victim), API_ADMIT);
        /* full: before, the new connection was refused; now the oldest unauthorized one makes room */
        assert_int_equal(api_conn_admit(open, 4, "10.0.0.9", true, &lim, &victim), API_ADMIT_EVICTING);
        assert_int_equal(victim, 1);
        /* all authorized: refused */
        for (size_t i = 0; i < 4; i++)
                open[i].authorized = true;
        assert_int_equal(api_conn_admit(open, 4, "10.0.0.9", true, &lim, &victim), API_REFUSE_FULL);
        /* the per-source cap counts only unauthorized ones on the TLS port, all of them on the plain ports */
        open[2] = (struct api_conn_view) { .key = "10.0.0.9", .authorized = true };
        open[3] = (struct api_conn_view) { .key = "10.0.0.9", .authorized = true };
        assert_int_equal(api_conn_admit(open, 3 + 1, "10.0.0.9", true, &lim, &victim), API_REFUSE_FULL);
        assert_int_equal(api_conn_admit(open, 4, "10.0.0.9", false, &lim, &victim), API_REFUSE_SOURCE);
        open[2].authorized = open[3].authorized = false;
        assert_int_equal(api_conn_admit(open, 4, "10.0.0.9", true, &lim, &victim), API_REFUSE_SOURCE);
}

/* a /64 of pending handshakes from many addresses counts as one source, and cannot lock out another client */
static void test_ipv6_flood(void **state) {
        const struct api_conn_limits lim = { .max_total = 8, .max_per_source = 2 };
        char keys[8][API_SOURCE_KEY_MAX], k[API_SOURCE_KEY_MAX];
        struct api_conn_view open[8];
        size_t n = 0, victim = 0;
        (void) state;

        for (unsigned i = 0; i < 8; i++) {
                char addr[64];
                snprintf(addr, sizeof(addr), "2001:db8:0:1::%x", i + 1);
                key6(addr, keys[n]);
                switch (api_conn_admit(open, n, keys[n], true, &lim, &victim)) {
                case API_ADMIT:
                        open[n] = (struct api_conn_view) { .key = keys[n] };
                        n++;
                        break;
                case API_REFUSE_SOURCE:
                        break;
                default:
                        fail_msg("connection %u: unexpected admission", i);
                }
        }
        assert_int_equal(n, 2); /* eight addresses, one /64: two slots */
        /* fill the rest from other sources, none authorized; an authorized client still gets in by eviction */
        for (unsigned i = 0; n < 8; i++) {
                snprintf(keys[n], sizeof(keys[n]), "10.0.0.%u", i);
                assert_int_equal(api_conn_admit(open, n, keys[n], true, &lim, &victim), API_ADMIT);
                open[n] = (struct api_conn_view) { .key = keys[n] };
                n++;
        }
        key6("2001:db8:0:2::1", k);
        assert_int_equal(api_conn_admit(open, n, k, true, &lim, &victim), API_ADMIT_EVICTING);
        assert_int_equal(victim, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_source_key),
                cmocka_unit_test(test_admit),
                cmocka_unit_test(test_ipv6_flood),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
