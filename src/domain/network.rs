//! Which network addresses webhook deliveries to console subscribers may
//! reach (docs/src/integration/webhooks.md, Which receivers are allowed
//! (SSRF)).
//!
//! An operator types a subscriber's URL; the service then POSTs to it and
//! shows what came back. Without a rule, that is a way to reach (and scan)
//! the service's own host and network: `127.0.0.1`, the cloud metadata
//! address `169.254.169.254`, private ranges. [`forbidden`] says which
//! addresses are not public; [`check`] lets an address through when it is
//! public or inside a network of `COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS`
//! ([`parse_networks`]). Pure: resolving names is the service's part.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// Why an address is not a public one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Forbidden {
    /// `0.0.0.0/8` ("this network"; `0.0.0.0` reaches the host itself), `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `169.254.0.0/16` (the cloud metadata address among them), `fe80::/10`.
    LinkLocal,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), unique local
    /// `fc00::/7` and the old site-local `fec0::/10`.
    Private,
    /// `100.64.0.0/10`, the carrier-grade NAT shared address space.
    SharedAddressSpace,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`,
    /// `3fff::/20`.
    Documentation,
    /// Everything else that is not globally routed unicast: `192.0.0/24`,
    /// `192.88.99/24`, `198.18/15`, `240/4`, IPv6 outside `2000::/3`,
    /// `2001::/23`, ...
    Reserved,
}

impl Forbidden {
    /// Lower-case name, for data attributes and logs.
    pub fn code(self) -> &'static str {
        match self {
            Forbidden::Unspecified => "unspecified",
            Forbidden::Loopback => "loopback",
            Forbidden::LinkLocal => "link_local",
            Forbidden::Private => "private",
            Forbidden::SharedAddressSpace => "shared",
            Forbidden::Multicast => "multicast",
            Forbidden::Broadcast => "broadcast",
            Forbidden::Documentation => "documentation",
            Forbidden::Reserved => "reserved",
        }
    }

    /// "a loopback address", for English logs and errors (pages use
    /// [`Forbidden::message_key`]).
    pub fn en(self) -> &'static str {
        match self {
            Forbidden::Unspecified => "an unspecified address (this host)",
            Forbidden::Loopback => "a loopback address (this host)",
            Forbidden::LinkLocal => "a link-local address (such as the cloud metadata service)",
            Forbidden::Private => "a private network address",
            Forbidden::SharedAddressSpace => "a carrier-grade NAT address (100.64.0.0/10)",
            Forbidden::Multicast => "a multicast address",
            Forbidden::Broadcast => "the broadcast address",
            Forbidden::Documentation => "a documentation address",
            Forbidden::Reserved => "a reserved address",
        }
    }

    /// The catalog key of the kind's name, for people.
    pub fn message_key(self) -> &'static str {
        match self {
            Forbidden::Unspecified => "forbidden-address-unspecified",
            Forbidden::Loopback => "forbidden-address-loopback",
            Forbidden::LinkLocal => "forbidden-address-link_local",
            Forbidden::Private => "forbidden-address-private",
            Forbidden::SharedAddressSpace => "forbidden-address-shared",
            Forbidden::Multicast => "forbidden-address-multicast",
            Forbidden::Broadcast => "forbidden-address-broadcast",
            Forbidden::Documentation => "forbidden-address-documentation",
            Forbidden::Reserved => "forbidden-address-reserved",
        }
    }
}

impl std::fmt::Display for Forbidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.en())
    }
}

/// Why `ip` is not a public address, or `None` when it is one.
pub fn forbidden(ip: IpAddr) -> Option<Forbidden> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<Forbidden> {
    use Forbidden::*;
    let ranges: [([u8; 4], u32, Forbidden); 16] = [
        ([0, 0, 0, 0], 8, Unspecified),
        ([10, 0, 0, 0], 8, Private),
        ([100, 64, 0, 0], 10, SharedAddressSpace),
        ([127, 0, 0, 0], 8, Loopback),
        ([169, 254, 0, 0], 16, LinkLocal),
        ([172, 16, 0, 0], 12, Private),
        ([192, 0, 0, 0], 24, Reserved),
        ([192, 0, 2, 0], 24, Documentation),
        ([192, 88, 99, 0], 24, Reserved),
        ([192, 168, 0, 0], 16, Private),
        ([198, 18, 0, 0], 15, Reserved),
        ([198, 51, 100, 0], 24, Documentation),
        ([203, 0, 113, 0], 24, Documentation),
        ([224, 0, 0, 0], 4, Multicast),
        ([255, 255, 255, 255], 32, Broadcast),
        ([240, 0, 0, 0], 4, Reserved),
    ];
    ranges
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, kind)| *kind)
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    (u128::from(ip) & mask) == (u128::from(Ipv6Addr::from(net)) & mask)
}

/// The IPv4 address in the low 32 bits.
fn low_v4(ip: Ipv6Addr) -> Ipv4Addr {
    Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<Forbidden> {
    use Forbidden::*;
    if ip.is_unspecified() {
        return Some(Unspecified);
    }
    if ip.is_loopback() {
        return Some(Loopback);
    }
    // IPv4-mapped `::ffff:a.b.c.d`: the IPv4 host itself.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    // IPv4-compatible `::a.b.c.d` (deprecated, never routed): refused,
    // with the embedded address's reason when it has one.
    if in_v6(ip, [0; 8], 96) {
        return Some(forbidden_v4(low_v4(ip)).unwrap_or(Reserved));
    }
    // NAT64 `64:ff9b::a.b.c.d` reaches the embedded address from the
    // translator.
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return forbidden_v4(low_v4(ip));
    }
    // 6to4 `2002:aabb:ccdd::/48` reaches a.b.c.d's network.
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let embedded = Ipv4Addr::from(((u128::from(ip) >> 80) & 0xffff_ffff) as u32);
        return forbidden_v4(embedded);
    }
    let ranges: [([u16; 8], u32, Forbidden); 8] = [
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, LinkLocal),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, Private),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, Private),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, Multicast),
        ([0x2001, 0x0db8, 0, 0, 0, 0, 0, 0], 32, Documentation),
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, Documentation),
        // IETF protocol assignments: Teredo, benchmarking, ORCHID, ...
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, Reserved),
        ([0x0064, 0xff9b, 0x0001, 0, 0, 0, 0, 0], 48, Reserved),
    ];
    if let Some((_, _, kind)) = ranges
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
    {
        return Some(*kind);
    }
    // Only 2000::/3 is global unicast.
    if !in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return Some(Reserved);
    }
    None
}

/// Whether `ip` is inside one of `allow` (an IPv4-mapped IPv6 address
/// counts as its IPv4 address).
pub fn allowed(ip: IpAddr, allow: &[IpNet]) -> bool {
    let mapped = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    allow
        .iter()
        .any(|net| net.contains(&ip) || mapped.is_some_and(|m| net.contains(&m)))
}

/// `Ok` when a delivery may go to `ip`: a public address, or one inside a
/// network of `allow`; otherwise why not.
pub fn check(ip: IpAddr, allow: &[IpNet]) -> Result<(), Forbidden> {
    match forbidden(ip) {
        Some(kind) if !allowed(ip, allow) => Err(kind),
        _ => Ok(()),
    }
}

/// The first of `addrs` a delivery may not go to, with why. A host is
/// refused when any of its addresses is: which one a connection would take
/// is not ours to choose.
pub fn first_forbidden(addrs: &[IpAddr], allow: &[IpNet]) -> Option<(IpAddr, Forbidden)> {
    addrs
        .iter()
        .find_map(|ip| check(*ip, allow).err().map(|kind| (*ip, kind)))
}

/// `localhost`, `localhost.` and every name under `.localhost`: loopback
/// whatever a resolver says (RFC 6761), so never looked up.
pub fn is_localhost_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// The addresses a `localhost` name stands for.
pub const LOCALHOST_ADDRS: [IpAddr; 2] = [
    IpAddr::V4(Ipv4Addr::LOCALHOST),
    IpAddr::V6(Ipv6Addr::LOCALHOST),
];

/// Parses `COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS`: comma-separated networks
/// in CIDR form (`10.0.0.0/8,fd00::/8`); a bare address is that one host.
/// A network with host bits set (`10.1.2.3/8`) is refused rather than
/// widened silently.
pub fn parse_networks(raw: &str) -> Result<Vec<IpNet>, String> {
    let mut out = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let net = match entry.parse::<IpNet>() {
            Ok(net) => net,
            Err(_) => match entry.parse::<IpAddr>() {
                Ok(ip) => IpNet::from(ip),
                Err(_) => {
                    return Err(format!(
                        "{entry:?} is not a network in CIDR form (e.g. 10.0.0.0/8 or fd00::/8)"
                    ));
                }
            },
        };
        if net != net.trunc() {
            return Err(format!(
                "{entry:?} has host bits set; did you mean {}?",
                net.trunc()
            ));
        }
        if !out.contains(&net) {
            out.push(net);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect(s)
    }

    fn nets(s: &str) -> Vec<IpNet> {
        parse_networks(s).expect(s)
    }

    #[test]
    fn every_non_public_ipv4_range_is_refused_with_its_reason() {
        use Forbidden::*;
        for (addr, want) in [
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("169.254.169.254", LinkLocal),
            ("169.254.0.1", LinkLocal),
            ("10.0.0.5", Private),
            ("10.255.255.255", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("100.64.0.1", SharedAddressSpace),
            ("100.127.255.255", SharedAddressSpace),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("255.255.255.255", Broadcast),
            ("192.0.2.10", Documentation),
            ("198.51.100.7", Documentation),
            ("203.0.113.200", Documentation),
            ("192.0.0.170", Reserved),
            ("192.88.99.1", Reserved),
            ("198.18.0.1", Reserved),
            ("198.19.255.255", Reserved),
            ("240.0.0.1", Reserved),
            ("255.255.255.254", Reserved),
        ] {
            assert_eq!(forbidden(ip(addr)), Some(want), "{addr}");
            assert_eq!(check(ip(addr), &[]), Err(want), "{addr}");
        }
    }

    #[test]
    fn public_ipv4_addresses_next_to_the_ranges_pass() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
        ] {
            assert_eq!(forbidden(ip(addr)), None, "{addr}");
            assert_eq!(check(ip(addr), &[]), Ok(()), "{addr}");
        }
    }

    #[test]
    fn every_non_public_ipv6_range_is_refused_with_its_reason() {
        use Forbidden::*;
        for (addr, want) in [
            ("::", Unspecified),
            ("::1", Loopback),
            ("fe80::1", LinkLocal),
            ("febf:ffff::1", LinkLocal),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fec0::1", Private),
            ("ff02::1", Multicast),
            ("ff0e::1", Multicast),
            ("2001:db8::1", Documentation),
            ("3fff::1", Documentation),
            ("2001::1", Reserved),
            ("2001:2::1", Reserved),
            ("64:ff9b:1::1", Reserved),
            ("100::1", Reserved),
            ("5f00::1", Reserved),
            ("4000::1", Reserved),
            ("::ffff:0:7f00:1", Reserved),
        ] {
            assert_eq!(forbidden(ip(addr)), Some(want), "{addr}");
        }
        for addr in [
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "2400:cb00::1",
        ] {
            assert_eq!(forbidden(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn ipv4_in_ipv6_forms_are_judged_by_their_ipv4_address() {
        use Forbidden::*;
        for (addr, want) in [
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:7f00:1", Some(Loopback)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::ffff:10.0.0.5", Some(Private)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("::ffff:8.8.8.8", None),
            // IPv4-compatible: never routed, refused even for a public one.
            ("::127.0.0.1", Some(Loopback)),
            ("::10.0.0.5", Some(Private)),
            ("::8.8.8.8", Some(Reserved)),
            // NAT64 and 6to4 reach the embedded address.
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("64:ff9b::8.8.8.8", None),
            ("2002:7f00:1::1", Some(Loopback)),
            ("2002:c0a8:101::1", Some(Private)),
            ("2002:808:808::1", None),
        ] {
            assert_eq!(forbidden(ip(addr)), want, "{addr}");
        }
    }

    #[test]
    fn the_allow_list_lets_its_networks_through_and_nothing_else() {
        let allow = nets("127.0.0.0/8, 10.0.0.0/8,fd00::/8");
        assert_eq!(check(ip("127.0.0.1"), &allow), Ok(()));
        assert_eq!(check(ip("10.20.30.40"), &allow), Ok(()));
        assert_eq!(check(ip("fd12::1"), &allow), Ok(()));
        // The mapped form of an allowed IPv4 address is the same host.
        assert_eq!(check(ip("::ffff:127.0.0.1"), &allow), Ok(()));
        assert_eq!(check(ip("::ffff:10.0.0.5"), &allow), Ok(()));
        // Outside the listed networks: still refused.
        assert_eq!(
            check(ip("169.254.169.254"), &allow),
            Err(Forbidden::LinkLocal)
        );
        assert_eq!(check(ip("192.168.0.1"), &allow), Err(Forbidden::Private));
        assert_eq!(check(ip("::1"), &allow), Err(Forbidden::Loopback));
        assert_eq!(check(ip("fc00::1"), &allow), Err(Forbidden::Private));
        // A single host.
        let one = nets("169.254.169.254");
        assert_eq!(check(ip("169.254.169.254"), &one), Ok(()));
        assert_eq!(
            check(ip("169.254.169.253"), &one),
            Err(Forbidden::LinkLocal)
        );
        // Public addresses need no entry.
        assert_eq!(check(ip("8.8.8.8"), &[]), Ok(()));
    }

    #[test]
    fn a_host_is_refused_when_any_of_its_addresses_is() {
        let addrs = [ip("93.184.216.34"), ip("10.0.0.1")];
        assert_eq!(
            first_forbidden(&addrs, &[]),
            Some((ip("10.0.0.1"), Forbidden::Private))
        );
        assert_eq!(first_forbidden(&addrs, &nets("10.0.0.0/24")), None);
        assert_eq!(first_forbidden(&[ip("93.184.216.34")], &[]), None);
        assert_eq!(first_forbidden(&[], &[]), None);
    }

    #[test]
    fn localhost_names_are_loopback_without_a_lookup() {
        for name in [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "a.localhost",
            "x.y.localhost.",
        ] {
            assert!(is_localhost_name(name), "{name}");
        }
        for name in ["localhost.example.com", "notlocalhost", "example.com"] {
            assert!(!is_localhost_name(name), "{name}");
        }
        assert_eq!(
            first_forbidden(&LOCALHOST_ADDRS, &[]),
            Some((ip("127.0.0.1"), Forbidden::Loopback))
        );
        assert_eq!(
            first_forbidden(&LOCALHOST_ADDRS, &nets("127.0.0.0/8")),
            Some((ip("::1"), Forbidden::Loopback))
        );
        assert_eq!(
            first_forbidden(&LOCALHOST_ADDRS, &nets("127.0.0.0/8,::1/128")),
            None
        );
    }

    #[test]
    fn allow_networks_parse_as_cidrs_and_a_bad_entry_says_which() {
        assert_eq!(parse_networks("").expect("empty"), vec![]);
        assert_eq!(parse_networks(" , ").expect("blank entries"), vec![]);
        let got = nets("10.0.0.0/8, fd00::/8,10.0.0.0/8,192.0.2.1");
        let want: Vec<IpNet> = ["10.0.0.0/8", "fd00::/8", "192.0.2.1/32"]
            .iter()
            .map(|s| s.parse().expect(s))
            .collect();
        assert_eq!(got, want);
        for (bad, says) in [
            ("10.0.0.0/33", "not a network"),
            ("ten", "not a network"),
            ("10.0.0.0/8;fd00::/8", "not a network"),
            ("10.1.2.3/8", "did you mean 10.0.0.0/8"),
            ("fd00::1/8", "did you mean fd00::/8"),
        ] {
            let e = parse_networks(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
