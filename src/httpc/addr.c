/* SPDX-License-Identifier: MIT */
/*
 * addr.c: which socket addresses a webhook delivery may connect to. Pure: no I/O, no globals
 * beyond the constant tables.
 *
 * DESIGN: a delivery goes to a URL a client chose, from inside our network, so the server must
 * not become a way to reach what only it can reach (SSRF): itself (loopback, and 0.0.0.0, which
 * Linux connects to itself), the private networks around it, link-local (cloud metadata at
 * 169.254.169.254, fe80::), multicast and broadcast, carrier-grade NAT space, and the ranges
 * IANA sets aside as not globally reachable (RFC 6890 and its registries). Two tables list the
 * ranges, first match wins; IPv6 outside the global unicast 2000::/3 is reserved as a whole, so
 * a range IANA assigns later is refused until it is listed here as public.
 *
 * IPv6 forms that carry an IPv4 address are judged by that address, since that is where the
 * packets end up: IPv4-mapped ::ffff:a.b.c.d (a dual-stack socket connects to a.b.c.d), the
 * NAT64 well-known prefix 64:ff9b::/96 (a DNS64 resolver maps every IPv4 answer into it; a
 * NAT64 gateway forwards to the embedded address) and 6to4 2002:AABB:CCDD::/48. Other
 * translation forms (the NAT64 local-use 64:ff9b:1::/48, SIIT ::ffff:0:a.b.c.d, deprecated
 * IPv4-compatible ::a.b.c.d, Teredo 2001::/32) are reserved outright: their target is not
 * written in the address, and nothing legitimate needs them as a webhook target.
 */
#include "hook.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

struct range {
    unsigned char prefix[16];
    unsigned bits;
    enum httpc_addr_class cls;
};

/* IPv4, first match wins (RFC 6890, IANA IPv4 Special-Purpose Address Registry). */
static const struct range v4_ranges[] = {
    {{255, 255, 255, 255}, 32, HTTPC_ADDR_BROADCAST},
    {{0}, 8, HTTPC_ADDR_UNSPECIFIED},          /* "this network"; 0.0.0.0 reaches the host */
    {{10}, 8, HTTPC_ADDR_PRIVATE},             /* RFC 1918 */
    {{100, 64}, 10, HTTPC_ADDR_SHARED},        /* RFC 6598 carrier-grade NAT */
    {{127}, 8, HTTPC_ADDR_LOOPBACK},           /* the host itself */
    {{169, 254}, 16, HTTPC_ADDR_LINK_LOCAL},   /* cloud metadata lives here */
    {{172, 16}, 12, HTTPC_ADDR_PRIVATE},       /* RFC 1918 */
    {{192, 0, 0}, 24, HTTPC_ADDR_RESERVED},    /* IETF protocol assignments (DS-Lite, NAT64) */
    {{192, 0, 2}, 24, HTTPC_ADDR_RESERVED},    /* TEST-NET-1 */
    {{192, 88, 99}, 24, HTTPC_ADDR_RESERVED},  /* 6to4 relay anycast (deprecated) */
    {{192, 168}, 16, HTTPC_ADDR_PRIVATE},      /* RFC 1918 */
    {{198, 18}, 15, HTTPC_ADDR_RESERVED},      /* benchmarking, often internal in practice */
    {{198, 51, 100}, 24, HTTPC_ADDR_RESERVED}, /* TEST-NET-2 */
    {{203, 0, 113}, 24, HTTPC_ADDR_RESERVED},  /* TEST-NET-3 */
    {{224}, 4, HTTPC_ADDR_MULTICAST},          /* 224/4 */
    {{240}, 4, HTTPC_ADDR_RESERVED},           /* future use */
    {{0}, 0, HTTPC_ADDR_PUBLIC},               /* everything else */
};

/* IPv6, first match wins (IANA IPv6 Special-Purpose Address Registry); the embedded-IPv4
 * forms are taken care of before this table. */
static const struct range v6_ranges[] = {
    {{0}, 128, HTTPC_ADDR_UNSPECIFIED},                                           /* :: */
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, HTTPC_ADDR_LOOPBACK}, /* ::1 */
    {{0xfc}, 7, HTTPC_ADDR_PRIVATE},                                              /* unique local */
    {{0xfe, 0x80}, 10, HTTPC_ADDR_LINK_LOCAL},                                    /* fe80::/10 */
    {{0xfe, 0xc0}, 10, HTTPC_ADDR_PRIVATE},              /* site-local (deprecated) */
    {{0xff}, 8, HTTPC_ADDR_MULTICAST},                   /* ff00::/8 */
    {{0x20, 0x01, 0x00, 0x00}, 23, HTTPC_ADDR_RESERVED}, /* IETF protocol assignments, Teredo */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, HTTPC_ADDR_RESERVED}, /* documentation */
    {{0x3f, 0xff}, 20, HTTPC_ADDR_RESERVED},             /* documentation (RFC 9637) */
    {{0x20}, 3, HTTPC_ADDR_PUBLIC},                      /* global unicast */
    {{0}, 0, HTTPC_ADDR_RESERVED}, /* the rest of the space: unassigned or special */
};

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
static const unsigned char nat64_wkp[12] = {0, 0x64, 0xff, 0x9b};

/* True when the first 'bits' bits of 'a' are those of 'prefix'. */
static bool in_prefix(const unsigned char *a, const unsigned char *prefix, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, prefix, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    return ((a[whole] ^ prefix[whole]) & (0xff00 >> rest)) == 0;
}

/* The class of 'a' by the first range of 'table' it falls in. The last row matches all. */
static enum httpc_addr_class lookup(const struct range *table, const unsigned char *a)
{
    for (;; table++) {
        if (in_prefix(a, table->prefix, table->bits))
            return table->cls;
    }
}

/* See hook.h. */
enum httpc_addr_class httpc_addr_classify(const struct sockaddr *sa, size_t len)
{
    sa_family_t family;
    if (!sa || len < sizeof(family))
        return HTTPC_ADDR_UNKNOWN;
    memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(family));
    if (family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof(in));
        return lookup(v4_ranges, (const unsigned char *)&in.sin_addr);
    }
    if (family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        const unsigned char *a;
        memcpy(&in6, sa, sizeof(in6));
        a = in6.sin6_addr.s6_addr;
        if (memcmp(a, v4_mapped, 12) == 0 || memcmp(a, nat64_wkp, 12) == 0)
            return lookup(v4_ranges, a + 12);
        if (a[0] == 0x20 && a[1] == 0x02)
            return lookup(v4_ranges, a + 2); /* 6to4: 2002:AABB:CCDD::/48 */
        return lookup(v6_ranges, a);
    }
    return HTTPC_ADDR_UNKNOWN;
}

/* See hook.h. IPv4 link-local is where clouds serve instance metadata (169.254.169.254, and
 * 169.254.170.2 for containers); AWS serves it over IPv6 at fd00:ec2::254, inside the unique
 * local range, so that prefix is listed on its own. */
bool httpc_addr_metadata(const struct sockaddr *sa, size_t len)
{
    static const unsigned char link_local[] = {169, 254};
    static const unsigned char aws_v6[] = {0xfd, 0x00, 0x0e, 0xc2};
    sa_family_t family;
    const unsigned char *a;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;

    if (!sa || len < sizeof(family))
        return false;
    memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(family));
    if (family == AF_INET && len >= sizeof(in)) {
        memcpy(&in, sa, sizeof(in));
        return in_prefix((const unsigned char *)&in.sin_addr, link_local, 16);
    }
    if (family != AF_INET6 || len < sizeof(in6))
        return false;
    memcpy(&in6, sa, sizeof(in6));
    a = in6.sin6_addr.s6_addr;
    if (memcmp(a, v4_mapped, 12) == 0 || memcmp(a, nat64_wkp, 12) == 0)
        return in_prefix(a + 12, link_local, 16);
    if (a[0] == 0x20 && a[1] == 0x02)
        return in_prefix(a + 2, link_local, 16);
    return in_prefix(a, aws_v6, 32);
}

/* See hook.h. */
const char *httpc_addr_class_desc(enum httpc_addr_class c)
{
    static const char *const desc[] = {
        [HTTPC_ADDR_PUBLIC] = "a public address",
        [HTTPC_ADDR_LOOPBACK] = "a loopback address",
        [HTTPC_ADDR_UNSPECIFIED] = "an unspecified address",
        [HTTPC_ADDR_PRIVATE] = "a private address",
        [HTTPC_ADDR_SHARED] = "a shared (carrier-grade NAT) address",
        [HTTPC_ADDR_LINK_LOCAL] = "a link-local address",
        [HTTPC_ADDR_MULTICAST] = "a multicast address",
        [HTTPC_ADDR_BROADCAST] = "a broadcast address",
        [HTTPC_ADDR_RESERVED] = "a reserved address",
        [HTTPC_ADDR_UNKNOWN] = "not an IP address",
    };
    if ((unsigned)c >= sizeof(desc) / sizeof(desc[0]))
        return desc[HTTPC_ADDR_UNKNOWN];
    return desc[c];
}

/* See hook.h. 'n' >= INET6_ADDRSTRLEN holds any address. */
void httpc_addr_format(const struct sockaddr *sa, size_t len, char *out, size_t n)
{
    sa_family_t family;
    const char *ok = NULL;

    if (n == 0)
        return;
    if (sa && len >= sizeof(family)) {
        memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(family));
        if (family == AF_INET && len >= sizeof(struct sockaddr_in)) {
            struct sockaddr_in in;
            memcpy(&in, sa, sizeof(in));
            ok = inet_ntop(AF_INET, &in.sin_addr, out, (socklen_t)n);
        } else if (family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
            struct sockaddr_in6 in6;
            memcpy(&in6, sa, sizeof(in6));
            ok = inet_ntop(AF_INET6, &in6.sin6_addr, out, (socklen_t)n);
        }
    }
    if (!ok)
        snprintf(out, n, "?");
}
