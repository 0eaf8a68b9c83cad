//! What `web_fetch` may reach, as Gemini CLI 0.61 decides it: no
//! loopback, private, link-local or otherwise non-public address, checked
//! after DNS resolution (every address a name resolves to must be public)
//! and again for every redirect hop and at connect time; and at most 10
//! fetches per host in any 60 seconds. The setting
//! `geminid.webFetch.allowPrivateNetwork` lifts the address check.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Whether `ip` is not a public unicast address (the ranges ipaddr.js,
/// which the reference uses, does not call `unicast`, plus 198.18/15).
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => private_v4(v4),
            None => private_v6(v6),
        },
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let in_net = |net: [u8; 4], bits: u32| {
        let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
        u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
    };
    a == 0
        || a == 10
        || a == 127
        || a >= 224
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 88 && c == 99)
        || in_net([198, 18, 0, 0], 15)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
}

fn private_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    ip.is_unspecified()
        || ip.is_loopback()
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0]) // NAT64
        || s[0] == 0x2002 // 6to4
        || (s[0] == 0x2001 && s[1] == 0) // Teredo
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || s[..5] == [0, 0, 0, 0, 0] // IPv4-compatible and the like
}

/// Names refused before any lookup.
pub fn blocked_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.ends_with(".local")
        || host.ends_with(".internal")
}

/// Why a URL may not be fetched, if it may not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A private, loopback or non-public host (or one that did not
    /// resolve, which cannot be shown to be public).
    BlockedHost(String),
    RateLimited,
}

/// Checks the host of `url`: by name, then every address it resolves to
/// (`lookup` is `tokio::net::lookup_host` in the daemon). Returns the
/// addresses found, all public.
pub async fn vet<F, Fut>(
    url: &reqwest::Url,
    allow_private: bool,
    lookup: F,
) -> Result<Vec<SocketAddr>, Refusal>
where
    F: FnOnce(String, u16) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<Vec<SocketAddr>>>,
{
    let Some(host) = url.host_str() else {
        return Err(Refusal::BlockedHost("the URL has no host".to_owned()));
    };
    let port = url.port_or_known_default().unwrap_or(80);
    // The URL parser has already turned every spelling of an IPv4 address
    // (`127.1`, `0x7f.1`, `2130706433`) into dotted form.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return vet_ip(ip, port, allow_private);
    }
    let name = host.to_owned();
    if allow_private {
        return Ok(Vec::new());
    }
    if blocked_name(&name) {
        return Err(Refusal::BlockedHost(format!(
            "access to internal host {name} is blocked"
        )));
    }
    let addrs = lookup(name.clone(), port).await.map_err(|e| {
        Refusal::BlockedHost(format!(
            "{name} cannot be resolved ({e}), so it cannot be shown to be public"
        ))
    })?;
    if addrs.is_empty() {
        return Err(Refusal::BlockedHost(format!(
            "{name} resolves to no address"
        )));
    }
    if let Some(bad) = addrs.iter().find(|a| is_private(a.ip())) {
        return Err(Refusal::BlockedHost(format!(
            "access to private IP {} (resolved from {name}) is blocked",
            bad.ip()
        )));
    }
    Ok(addrs)
}

fn vet_ip(ip: IpAddr, port: u16, allow_private: bool) -> Result<Vec<SocketAddr>, Refusal> {
    if !allow_private && is_private(ip) {
        return Err(Refusal::BlockedHost(format!(
            "access to private IP {ip} is blocked"
        )));
    }
    Ok(vec![SocketAddr::new(ip, port)])
}

/// The system resolver, as [`vet`] wants it.
pub async fn system_lookup(host: String, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    Ok(tokio::net::lookup_host((host.as_str(), port))
        .await?
        .collect())
}

/// A resolver for the HTTP client that refuses private addresses at
/// connect time too, so a name that resolved to a public address when it
/// was vetted cannot be switched to a private one for the connection (DNS
/// rebinding).
pub struct PublicOnlyResolver;

impl reqwest::dns::Resolve for PublicOnlyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = system_lookup(host.clone(), 0).await?;
            if let Some(bad) = addrs.iter().find(|a| is_private(a.ip())) {
                return Err(format!(
                    "access to private IP {} (resolved from {host}) is blocked",
                    bad.ip()
                )
                .into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// How many fetches per host a window allows, and the window.
pub const RATE_LIMIT: usize = 10;
pub const RATE_WINDOW: Duration = Duration::from_secs(60);
/// Hosts remembered at most (the reference keeps an LRU of 1000).
const MAX_HOSTS: usize = 1000;

/// Fetches per host in the last [`RATE_WINDOW`], shared by every session
/// of the daemon. Only fetches that were let through count.
#[derive(Clone, Default)]
pub struct RateLimits {
    hosts: Arc<Mutex<HashMap<String, VecDeque<Instant>>>>,
}

impl RateLimits {
    /// Takes one fetch for `host` at `now`, or refuses it.
    pub fn take(&self, host: &str, now: Instant) -> Result<(), Refusal> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        if hosts.len() >= MAX_HOSTS && !hosts.contains_key(host) {
            // Forget the hosts whose last fetch is oldest.
            hosts.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < RATE_WINDOW)
            });
            if hosts.len() >= MAX_HOSTS {
                let oldest = hosts
                    .iter()
                    .min_by_key(|(_, times)| times.back().copied())
                    .map(|(h, _)| h.clone());
                if let Some(h) = oldest {
                    hosts.remove(&h);
                }
            }
        }
        let times = hosts.entry(host.to_owned()).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= RATE_WINDOW)
        {
            times.pop_front();
        }
        if times.len() >= RATE_LIMIT {
            return Err(Refusal::RateLimited);
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges() {
        for ip in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2002::1",
            "2001::1",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "100.128.0.1",
            "172.32.0.1",
            "198.20.0.1",
            "192.0.3.1",
            "2606:4700::1111",
            "2a00:1450::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    fn url(s: &str) -> reqwest::Url {
        reqwest::Url::parse(s).unwrap()
    }

    async fn fake(host: String, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match host.as_str() {
            "public.example" => Ok(vec![SocketAddr::new(
                "93.184.216.34".parse().unwrap(),
                port,
            )]),
            "rebind.example" => Ok(vec![
                SocketAddr::new("93.184.216.34".parse().unwrap(), port),
                SocketAddr::new("127.0.0.1".parse().unwrap(), port),
            ]),
            "meta.example" => Ok(vec![SocketAddr::new(
                "169.254.169.254".parse().unwrap(),
                port,
            )]),
            _ => Err(std::io::Error::other("no such host")),
        }
    }

    #[tokio::test]
    async fn hosts_are_vetted_after_resolution() {
        let blocked =
            |r: Result<Vec<SocketAddr>, Refusal>| matches!(r, Err(Refusal::BlockedHost(_)));
        assert!(
            vet(&url("https://public.example/x"), false, fake)
                .await
                .is_ok()
        );
        for u in [
            "http://127.0.0.1:8080/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:7f00:1]/",
            "http://localhost/",
            "http://x.localhost/",
            "http://printer.local/",
            "http://db.internal/",
            "http://rebind.example/",
            "http://meta.example/latest/meta-data",
            "http://unknown.example/",
            "http://10.0.0.1/",
        ] {
            assert!(blocked(vet(&url(u), false, fake).await), "{u}");
        }
        // The setting lets private hosts through, unresolved.
        assert!(vet(&url("http://127.0.0.1:9/"), true, fake).await.is_ok());
        assert!(vet(&url("http://localhost/"), true, fake).await.is_ok());
    }

    /// The connection's own resolver refuses a name that resolves to a
    /// private address (here `localhost`, from /etc/hosts), so a check
    /// passed earlier cannot be undone by a second, different answer.
    #[tokio::test]
    async fn the_client_resolver_refuses_private_answers() {
        use reqwest::dns::Resolve;
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        let err = PublicOnlyResolver.resolve(name).await.err().unwrap();
        assert!(err.to_string().contains("is blocked"), "{err}");
    }

    #[test]
    fn ten_per_host_per_minute() {
        let limits = RateLimits::default();
        let t0 = Instant::now();
        for _ in 0..RATE_LIMIT {
            assert_eq!(limits.take("a.example", t0), Ok(()));
        }
        assert_eq!(limits.take("a.example", t0), Err(Refusal::RateLimited));
        assert_eq!(limits.take("b.example", t0), Ok(()));
        let later = t0 + RATE_WINDOW;
        assert_eq!(limits.take("a.example", later), Ok(()));
    }
}
