//! Choosing the addresses an endpoint binds to: its name
//! (`RAMP_INTERFACE`) and its rails (`RAMP_RAILS`).

use std::io;
use std::net::{IpAddr, Ipv4Addr};

use crate::sys as os;

/// `spec` is an IP address, an interface name, or None for the default: the
/// first address of an interface that is up and not loopback (IPv4 first),
/// and loopback when there is none.
pub fn choose_bind_address(spec: Option<&str>) -> io::Result<IpAddr> {
    let addrs = os::interface_addresses();
    match spec {
        Some(s) => {
            if let Ok(ip) = s.parse::<IpAddr>() {
                return Ok(ip);
            }
            let mine: Vec<&os::IfAddr> = addrs.iter().filter(|a| a.name == s).collect();
            mine.iter()
                .find(|a| a.ip.is_ipv4())
                .or_else(|| mine.first())
                .map(|a| a.ip)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!(
                            "{}={s:?}: no such interface or address on this host",
                            crate::config::INTERFACE
                        ),
                    )
                })
        }
        None => {
            let usable = |a: &&os::IfAddr| a.up && !a.ip.is_loopback() && !is_link_local(a.ip);
            Ok(addrs
                .iter()
                .filter(usable)
                .find(|a| a.ip.is_ipv4())
                .or_else(|| addrs.iter().find(usable))
                .map(|a| a.ip)
                .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)))
        }
    }
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => v.is_link_local(),
        // fe80::/10 needs a scope id to be reachable: skip it by default
        IpAddr::V6(v) => (v.segments()[0] & 0xffc0) == 0xfe80,
    }
}

/// The addresses of the endpoint's rails, rail 0 (its name) first, from
/// `RAMP_RAILS` when set (each an interface name or an address of this
/// host, up; loopback addresses as named), else the name
/// `choose_bind_address` gives plus every other up, non-loopback,
/// non-link-local IPv4 address of this host (none when the name is
/// loopback or IPv6), at most `MAX_RAILS` in all.
pub fn choose_rails(cfg: &crate::config::Config) -> io::Result<Vec<IpAddr>> {
    let addrs = os::interface_addresses();
    match &cfg.rails {
        Some(names) => resolve_rails(&addrs, names),
        None => {
            let name = choose_bind_address(cfg.interface.as_deref())?;
            Ok(default_rails(&addrs, name))
        }
    }
}

/// `RAMP_RAILS`'s names (well formed, `config::variables`) as addresses
/// of `addrs`, or an error naming the first that is not an up address
/// of this host, or is one named before.
fn resolve_rails(addrs: &[os::IfAddr], names: &[String]) -> io::Result<Vec<IpAddr>> {
    use crate::config::{MAX_RAILS, RAILS};
    let refuse = |kind, why: String| Err(io::Error::new(kind, format!("{RAILS}: {why}")));
    if names.is_empty() || names.len() > MAX_RAILS {
        return refuse(
            io::ErrorKind::InvalidInput,
            format!("expected 1 to {MAX_RAILS} rails, not {}", names.len()),
        );
    }
    let mut out: Vec<IpAddr> = Vec::new();
    for n in names {
        let ip = match n.parse::<IpAddr>() {
            Ok(ip) if ip.is_ipv4() && ip.is_loopback() => ip,
            Ok(ip) if ip.is_ipv4() => match addrs.iter().find(|a| a.ip == ip) {
                Some(a) if a.up => ip,
                Some(a) => {
                    let why = format!("{n} is on {}, which is down", a.name);
                    return refuse(io::ErrorKind::NotConnected, why);
                }
                None => {
                    let why = format!("{n} is no address of this host");
                    return refuse(io::ErrorKind::AddrNotAvailable, why);
                }
            },
            Ok(_) => {
                let why = format!("{n}: a rail is an IPv4 address or an interface name");
                return refuse(io::ErrorKind::InvalidInput, why);
            }
            Err(_) => {
                let mine: Vec<&os::IfAddr> = addrs.iter().filter(|a| &a.name == n).collect();
                match mine.iter().find(|a| a.ip.is_ipv4()) {
                    Some(a) if a.up => a.ip,
                    Some(_) => {
                        let why = format!("interface {n} is down");
                        return refuse(io::ErrorKind::NotConnected, why);
                    }
                    None if mine.is_empty() => {
                        let why = format!("no interface {n} on this host");
                        return refuse(io::ErrorKind::NotFound, why);
                    }
                    None => {
                        let why = format!("interface {n} has no IPv4 address");
                        return refuse(io::ErrorKind::AddrNotAvailable, why);
                    }
                }
            }
        };
        if let Some(k) = out.iter().position(|&o| o == ip) {
            let why = format!("{n} is {ip}, which rail {k} ({}) is already", names[k]);
            return refuse(io::ErrorKind::InvalidInput, why);
        }
        out.push(ip);
    }
    Ok(out)
}

/// The default rails: `name`, then every other up, non-loopback,
/// non-link-local IPv4 address of `addrs` (none when `name` is loopback
/// or IPv6: a loopback name reaches no other host), `MAX_RAILS` at most.
fn default_rails(addrs: &[os::IfAddr], name: IpAddr) -> Vec<IpAddr> {
    let mut out = vec![name];
    if name.is_loopback() || name.is_ipv6() {
        return out;
    }
    for a in addrs {
        let usable = a.up && a.ip.is_ipv4() && !a.ip.is_loopback() && !is_link_local(a.ip);
        if usable && !out.contains(&a.ip) && out.len() < crate::config::MAX_RAILS {
            out.push(a.ip);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<os::IfAddr> {
        let a = |name: &str, ip: &str, up| os::IfAddr {
            name: name.into(),
            ip: ip.parse().unwrap(),
            up,
        };
        vec![
            a("lo", "127.0.0.1", true),
            a("eth0", "fe80::1", true),
            a("eth0", "10.0.0.1", true),
            a("eth1", "10.1.0.1", true),
            a("eth2", "10.2.0.1", false),
            a("ib0", "169.254.3.3", true),
            a("v6only", "2001:db8::1", true),
        ]
    }

    fn rails(names: &[&str]) -> io::Result<Vec<IpAddr>> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        resolve_rails(&host(), &names)
    }

    fn ips(v: &[&str]) -> Vec<IpAddr> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn named_rails_are_addresses_of_up_interfaces_in_order() {
        let r = rails(&["eth1", "10.0.0.1", "127.0.0.2", "127.0.0.1"]).unwrap();
        assert_eq!(r, ips(&["10.1.0.1", "10.0.0.1", "127.0.0.2", "127.0.0.1"]));
    }

    #[test]
    fn a_missing_down_or_repeated_rail_is_refused_clearly() {
        let why = |names: &[&str]| rails(names).unwrap_err().to_string();
        assert_eq!(why(&["eth9"]), "RAMP_RAILS: no interface eth9 on this host");
        assert_eq!(why(&["eth0", "eth2"]), "RAMP_RAILS: interface eth2 is down");
        assert_eq!(
            why(&["10.2.0.1"]),
            "RAMP_RAILS: 10.2.0.1 is on eth2, which is down"
        );
        assert_eq!(
            why(&["10.9.9.9"]),
            "RAMP_RAILS: 10.9.9.9 is no address of this host"
        );
        assert_eq!(
            why(&["v6only"]),
            "RAMP_RAILS: interface v6only has no IPv4 address"
        );
        assert_eq!(
            why(&["eth0", "10.0.0.1"]),
            "RAMP_RAILS: 10.0.0.1 is 10.0.0.1, which rail 0 (eth0) is already"
        );
        assert!(why(&["a", "b", "c", "d", "e"]).contains("1 to 4 rails, not 5"));
    }

    #[test]
    fn the_default_adds_other_up_ipv4_interfaces_to_a_routable_name() {
        let addrs = host();
        let name: IpAddr = "10.1.0.1".parse().unwrap();
        // not loopback, not down, not link-local, not IPv6, not the name again
        assert_eq!(default_rails(&addrs, name), ips(&["10.1.0.1", "10.0.0.1"]));
        // a loopback or IPv6 name: itself alone (today's single rail)
        for n in ["127.0.0.1", "2001:db8::1"] {
            let n: IpAddr = n.parse().unwrap();
            assert_eq!(default_rails(&addrs, n), vec![n]);
        }
        // at most MAX_RAILS
        let many: Vec<os::IfAddr> = (1..10)
            .map(|k| os::IfAddr {
                name: format!("e{k}"),
                ip: IpAddr::V4(Ipv4Addr::new(10, k, 0, 1)),
                up: true,
            })
            .collect();
        let r = default_rails(&many, many[0].ip);
        assert_eq!(r.len(), crate::config::MAX_RAILS);
        assert_eq!(r[0], many[0].ip);
    }
}
