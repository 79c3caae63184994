//! Who the client is, and which origin it asked for, when quizd may sit behind reverse
//! proxies (docs/development.md, Guarantees).
//!
//! `Forwarded`, `X-Forwarded-For`, `X-Forwarded-Host` and `X-Forwarded-Proto` are only words
//! that anyone can send. They are believed only when the TCP peer is a configured trusted
//! proxy (`--trusted-proxy`); otherwise the peer is the client and the request's own `Host`
//! and scheme are the origin. Without this, one client could rotate `X-Forwarded-For` to slip
//! the per-address sign-in limit, or set `X-Forwarded-Host` to have quizd build its LTI URLs
//! on a host of the client's choosing.
//!
//! A trusted proxy must set (not pass on from its client) the headers quizd reads:
//! `X-Forwarded-For` is read in preference to `Forwarded`, so a proxy that sets only
//! `Forwarded` must drop a client's `X-Forwarded-For`.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderMap};
use ipnet::IpNet;

/// The networks whose peers' forwarded headers are believed. Empty by default: nobody's.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
}

/// A CIDR (`10.0.0.0/8`, `fd00::/8`) or a single address (`127.0.0.1`), for clap.
pub fn parse_cidr(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map(|n| n.trunc())
        .map_err(|_| format!("`{s}` is not a CIDR (e.g. 10.0.0.0/8) or an IP address"))
}

/// An IPv4 peer on a dual-stack socket shows as `::ffff:a.b.c.d`; judge it as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// One address of a forwarding header: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]:4711`, quoted or not. `unknown` and obfuscated identifiers are `None`.
fn node_ip(value: &str) -> Option<IpAddr> {
    let v = value.trim().trim_matches('"');
    if let Some(rest) = v.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok().map(canonical);
    }
    if let Ok(ip) = v.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    // IPv4 with a port (a bare IPv6 address parsed above).
    let (host, port) = v.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// The values of a comma-separated header over all its lines, in order.
fn list<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .get_all(name)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The `param=` values of the `Forwarded` elements (RFC 7239), in order; an element without
/// the parameter gives `None`.
fn forwarded<'a>(headers: &'a HeaderMap, param: &'a str) -> impl Iterator<Item = Option<&'a str>> {
    list(headers, "forwarded").map(move |element| {
        element.split(';').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case(param)
                .then(|| v.trim().trim_matches('"'))
        })
    })
}

/// A host as a URL authority may carry it: a name or address and an optional port.
fn plausible_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 255
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b))
}

impl TrustedProxies {
    pub fn new(nets: Vec<IpNet>) -> Self {
        Self { nets }
    }

    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets.iter().any(|n| n.contains(&ip))
    }

    /// Whether this request's forwarded headers are to be believed.
    fn believed(&self, req: &HttpRequest) -> bool {
        !self.nets.is_empty() && req.peer_addr().is_some_and(|p| self.trusts(p.ip()))
    }

    /// The client's address: the TCP peer, or, when the peer is a trusted proxy, the
    /// right-most address of `X-Forwarded-For` (else `Forwarded`) that is not a trusted proxy
    /// itself. Addresses left of that one were written by the client and prove nothing. A
    /// trusted proxy that says it does not know (`unknown`, garbage) leaves the client as that
    /// proxy.
    pub fn client_ip(&self, req: &HttpRequest) -> Option<IpAddr> {
        let peer = canonical(req.peer_addr()?.ip());
        if !self.believed(req) {
            return Some(peer);
        }
        let headers = req.headers();
        let chain: Vec<&str> = if headers.contains_key("x-forwarded-for") {
            list(headers, "x-forwarded-for").collect()
        } else {
            forwarded(headers, "for").map(|v| v.unwrap_or("")).collect()
        };
        Some(self.client_of_chain(peer, &chain))
    }

    fn client_of_chain(&self, peer: IpAddr, chain: &[&str]) -> IpAddr {
        let mut client = peer;
        for hop in chain.iter().rev() {
            match node_ip(hop) {
                Some(ip) => {
                    client = ip;
                    if !self.trusts(ip) {
                        break;
                    }
                }
                None => break,
            }
        }
        client
    }

    /// The scheme and host the client asked for: the request's own (`Host`, the connection's
    /// TLS), or, from a trusted proxy, what it forwards (`X-Forwarded-Proto`/`-Host`, else
    /// `Forwarded`; the right-most value, which the nearest proxy wrote).
    pub fn origin(&self, req: &HttpRequest) -> (String, String) {
        let headers = req.headers();
        let own_scheme = if req.app_config().secure() {
            "https"
        } else {
            "http"
        };
        let own_host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|h| plausible_host(h))
            .map(str::to_string)
            .or_else(|| req.uri().authority().map(|a| a.to_string()))
            .unwrap_or_else(|| req.app_config().host().to_string());
        if !self.believed(req) {
            return (own_scheme.to_string(), own_host);
        }
        let scheme = list(headers, "x-forwarded-proto")
            .last()
            .or_else(|| forwarded(headers, "proto").flatten().last())
            .map(str::to_ascii_lowercase)
            .filter(|s| s == "http" || s == "https")
            .unwrap_or_else(|| own_scheme.to_string());
        let host = list(headers, "x-forwarded-host")
            .last()
            .or_else(|| forwarded(headers, "host").flatten().last())
            .filter(|h| plausible_host(h))
            .map(str::to_string)
            .unwrap_or(own_host);
        (scheme, host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn proxies(cidrs: &[&str]) -> TrustedProxies {
        TrustedProxies::new(cidrs.iter().map(|c| parse_cidr(c).unwrap()).collect())
    }

    fn from(peer: &str, headers: &[(&str, &str)]) -> HttpRequest {
        let mut req = TestRequest::default()
            .peer_addr(peer.parse().unwrap())
            .insert_header(("host", "quiz.internal:8080"));
        for h in headers {
            req = req.append_header(*h);
        }
        req.to_http_request()
    }

    #[test]
    fn cidrs_and_single_addresses_parse_and_nonsense_does_not() {
        assert_eq!(parse_cidr("10.1.2.3/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(
            parse_cidr(" 127.0.0.1 ").unwrap().to_string(),
            "127.0.0.1/32"
        );
        assert_eq!(parse_cidr("::1").unwrap().to_string(), "::1/128");
        assert!(parse_cidr("10.0.0.0/33").is_err());
        assert!(parse_cidr("proxy.example").is_err());
    }

    #[test]
    fn forwarded_headers_from_an_untrusted_peer_change_nothing() {
        let p = proxies(&["10.0.0.0/8"]);
        let req = from(
            "203.0.113.9:5000",
            &[
                ("x-forwarded-for", "198.51.100.1"),
                (
                    "forwarded",
                    "for=198.51.100.2;host=evil.example;proto=https",
                ),
                ("x-forwarded-host", "evil.example"),
                ("x-forwarded-proto", "https"),
            ],
        );
        assert_eq!(p.client_ip(&req), Some("203.0.113.9".parse().unwrap()));
        assert_eq!(
            p.origin(&req),
            ("http".to_string(), "quiz.internal:8080".to_string())
        );
        // Nobody is trusted by default.
        let none = TrustedProxies::default();
        let req = from("10.0.0.1:5000", &[("x-forwarded-for", "198.51.100.1")]);
        assert_eq!(none.client_ip(&req), Some("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn the_client_is_the_right_most_address_that_is_not_a_trusted_proxy() {
        let p = proxies(&["10.0.0.0/8", "fd00::/8"]);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        // What the client wrote itself (left) is ignored.
        let req = from(
            "10.0.0.2:1",
            &[("x-forwarded-for", "1.1.1.1, 198.51.100.7, 10.0.0.5")],
        );
        assert_eq!(p.client_ip(&req), ip("198.51.100.7"));
        // Several header lines are one list.
        let req = from(
            "10.0.0.2:1",
            &[
                ("x-forwarded-for", "1.1.1.1"),
                ("x-forwarded-for", "198.51.100.7:4711"),
            ],
        );
        assert_eq!(p.client_ip(&req), ip("198.51.100.7"));
        // Forwarded, when there is no X-Forwarded-For; IPv6 in brackets, mapped IPv4.
        let req = from(
            "[fd00::1]:1",
            &[(
                "forwarded",
                "for=1.1.1.1, for=\"[2001:db8::17]:4711\";proto=https, for=10.9.9.9",
            )],
        );
        assert_eq!(p.client_ip(&req), ip("2001:db8::17"));
        let req = from("[::ffff:10.0.0.3]:1", &[("x-forwarded-for", "192.0.2.4")]);
        assert_eq!(p.client_ip(&req), ip("192.0.2.4"));
        // Only proxies: the farthest one. A proxy that does not know: that proxy.
        let req = from("10.0.0.2:1", &[("x-forwarded-for", "10.0.0.9, 10.0.0.8")]);
        assert_eq!(p.client_ip(&req), ip("10.0.0.9"));
        let req = from("10.0.0.2:1", &[("x-forwarded-for", "1.1.1.1, unknown")]);
        assert_eq!(p.client_ip(&req), ip("10.0.0.2"));
        let req = from("10.0.0.2:1", &[("forwarded", "for=_hidden")]);
        assert_eq!(p.client_ip(&req), ip("10.0.0.2"));
        // No header: the proxy itself.
        assert_eq!(p.client_ip(&from("10.0.0.2:1", &[])), ip("10.0.0.2"));
    }

    #[test]
    fn a_trusted_proxy_names_the_origin_with_its_own_last_word() {
        let p = proxies(&["127.0.0.1"]);
        let req = from(
            "127.0.0.1:1",
            &[
                ("x-forwarded-host", "spoofed.example, quiz.example.org"),
                ("x-forwarded-proto", "HTTPS"),
            ],
        );
        assert_eq!(
            p.origin(&req),
            ("https".to_string(), "quiz.example.org".to_string())
        );
        let req = from(
            "127.0.0.1:1",
            &[(
                "forwarded",
                "for=1.2.3.4;host=\"quiz.example.org:8443\";proto=https",
            )],
        );
        assert_eq!(
            p.origin(&req),
            ("https".to_string(), "quiz.example.org:8443".to_string())
        );
        // A host that could not be an authority, or an odd scheme, is not taken.
        let req = from(
            "127.0.0.1:1",
            &[
                ("x-forwarded-host", "evil.example/path?"),
                ("x-forwarded-proto", "javascript"),
            ],
        );
        assert_eq!(
            p.origin(&req),
            ("http".to_string(), "quiz.internal:8080".to_string())
        );
    }
}
