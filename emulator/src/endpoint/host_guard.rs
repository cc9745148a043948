//! Which requests an endpoint listening on loopback answers: those addressed to a loopback name.
//!
//! A browser sends a page's requests to whatever address its name resolves to. A page on
//! `attacker.example` whose name is made to resolve to 127.0.0.1 (DNS rebinding) is same-origin
//! to the browser with the emulator's endpoint, and could publish, reshard, replay and read
//! every stream while the developer browses. Its requests still carry its own name in `Host`,
//! so an endpoint on loopback answers only requests whose `Host` is a loopback name or address
//! (as Jupyter and Vite guard their local servers). An endpoint listening on another address
//! (a container, a probe) was placed there on purpose, is reached by names the emulator cannot
//! know, and is not guarded.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether requests must be addressed to a loopback name: when the endpoint listens on a
/// loopback address.
pub(crate) fn guards(listening: SocketAddr) -> bool {
    is_loopback(listening.ip())
}

/// Why a request addressed to `host` (its `Host` header, or its URI's authority) is refused
/// by an endpoint on loopback; `None` when it is answered. A request that names no host (no
/// browser sends one) is answered: the guard is against browsers.
pub(crate) fn refusal(host: Option<&[u8]>) -> Option<String> {
    let host = host?;
    let text = std::str::from_utf8(host).ok();
    if text.is_some_and(is_loopback_host) {
        return None;
    }
    let shown = text.map_or_else(
        || "that is not text".to_owned(),
        |text| format!("`{}`", text.escape_debug()),
    );
    Some(format!(
        "kinesis-esm refused the request: it listens on loopback and answers only requests \
         addressed to localhost, 127.0.0.1 or [::1], and this one's Host is {shown} (a guard \
         against DNS rebinding; see docs/live-page.md)"
    ))
}

/// Whether `host` (`name` or `name:port`, an IPv6 address in brackets) names this machine's
/// loopback: `localhost` and its subdomains (RFC 6761 keeps them on loopback), or a loopback
/// address.
fn is_loopback_host(host: &str) -> bool {
    let Some(name) = without_port(host) else {
        return false;
    };
    if let Some(inside) = name.strip_prefix('[') {
        return inside
            .strip_suffix(']')
            .and_then(|address| address.parse::<Ipv6Addr>().ok())
            .is_some_and(|address| is_loopback(IpAddr::V6(address)));
    }
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    // Only the dotted quad: a browser reads `127.1` or `2130706433` too, but resolves it as
    // the same loopback address, which a name can never turn into.
    name.parse::<Ipv4Addr>()
        .is_ok_and(|address| is_loopback(IpAddr::V4(address)))
}

/// `host` without its `:port`; `None` when what follows the name is not a port.
fn without_port(host: &str) -> Option<&str> {
    let (name, port) = match host.rfind(':') {
        // A colon inside brackets belongs to an IPv6 address.
        Some(colon) if !host[colon..].contains(']') => (&host[..colon], Some(&host[colon + 1..])),
        _ => (host, None),
    };
    match port {
        Some(port) if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) => None,
        _ if name.is_empty() => None,
        _ => Some(name),
    }
}

fn is_loopback(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(host: &str, answered: bool) {
        assert_eq!(refusal(Some(host.as_bytes())).is_none(), answered, "{host}");
    }

    #[test]
    fn loopback_names_and_addresses_are_answered_with_or_without_a_port() {
        for host in [
            "localhost",
            "localhost:4566",
            "LocalHost:4566",
            "localhost.:4566",
            "page.localhost:4566",
            "127.0.0.1",
            "127.0.0.1:4566",
            "127.8.9.10:80",
            "[::1]",
            "[::1]:4566",
            "[::ffff:127.0.0.1]:4566",
        ] {
            check(host, true);
        }
    }

    #[test]
    fn any_other_name_or_address_is_refused() {
        for host in [
            "attacker.example:4566",
            "attacker.example",
            "localhost.attacker.example:4566",
            "notlocalhost:4566",
            "0.0.0.0:4566",
            "192.168.1.10:4566",
            "[::]:4566",
            "[2001:db8::1]:4566",
            "127.0.0.1.attacker.example",
            "localhost:port",
            "localhost:",
            ":4566",
            "",
            "[::1",
        ] {
            check(host, false);
        }
    }

    #[test]
    fn the_refusal_names_the_host_and_why_in_one_line() {
        let reason = refusal(Some(b"attacker.example:4566")).expect("refused");
        assert!(reason.contains("`attacker.example:4566`"), "{reason}");
        assert!(reason.contains("DNS rebinding"), "{reason}");
        let odd = refusal(Some(b"a\nb")).expect("refused");
        assert!(!odd.contains('\n'), "{odd}");
        let binary = refusal(Some(b"\xff")).expect("refused");
        assert!(binary.contains("that is not text"), "{binary}");
    }

    #[test]
    fn a_request_without_a_host_is_answered() {
        assert_eq!(refusal(None), None);
    }

    #[test]
    fn only_an_endpoint_on_loopback_is_guarded() {
        assert!(guards("127.0.0.1:4566".parse().unwrap()));
        assert!(guards("[::1]:4566".parse().unwrap()));
        assert!(!guards("0.0.0.0:4566".parse().unwrap()));
        assert!(!guards("192.168.1.10:4566".parse().unwrap()));
    }
}
