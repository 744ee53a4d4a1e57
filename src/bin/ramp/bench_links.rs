//! The links under `ramp bench --rails`'s rails as this host sees them
//! (issue 38 item 7): at every sample the sender reads the state of each
//! of its rails' interfaces (`/sys/class/net/IFACE/operstate`, and
//! `carrier` when the operstate says nothing: loopback's is "unknown");
//! a change is an event, "link rail1 down" or "link rail1 up", beside the
//! path events, so the plot shows the cut and the protocol's reaction.
//! A rail whose address no interface holds, or whose state cannot be
//! read, is not watched.

use std::net::IpAddr;
use std::path::PathBuf;

/// The events' names, rail by rail (`Trace::events` holds static names).
const DOWN: [&str; 8] = [
    "link rail0 down",
    "link rail1 down",
    "link rail2 down",
    "link rail3 down",
    "link rail4 down",
    "link rail5 down",
    "link rail6 down",
    "link rail7 down",
];
const UP: [&str; 8] = [
    "link rail0 up",
    "link rail1 up",
    "link rail2 up",
    "link rail3 up",
    "link rail4 up",
    "link rail5 up",
    "link rail6 up",
    "link rail7 up",
];

/// Whether a link is up, from its `operstate` and `carrier` files'
/// contents (None: unreadable): "up" is up; "down", "lowerlayerdown"
/// (a veth whose peer is down), "notpresent" and "dormant" are down;
/// otherwise ("unknown", "testing") the carrier says: 1 up, 0 down.
/// None when nothing tells.
pub fn link_up(operstate: Option<&str>, carrier: Option<&str>) -> Option<bool> {
    match operstate.map(str::trim) {
        Some("up") => return Some(true),
        Some("down" | "lowerlayerdown" | "notpresent" | "dormant") => return Some(false),
        _ => {}
    }
    match carrier.map(str::trim) {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => None,
    }
}

/// The watched rails: (rail, interface, state at the last sample).
pub struct Links {
    root: PathBuf,
    rails: Vec<(u8, String, Option<bool>)>,
}

impl Links {
    /// The rails at `addrs` (rail k at k), each on the interface that
    /// holds its address, under `root` (`/sys/class/net`).
    pub fn new(
        root: impl Into<PathBuf>,
        addrs: &[IpAddr],
        iface: impl Fn(IpAddr) -> Option<String>,
    ) -> Links {
        let rails = addrs
            .iter()
            .enumerate()
            .filter_map(|(k, &ip)| Some((k as u8, iface(ip)?, None)))
            .collect();
        Links {
            root: root.into(),
            rails,
        }
    }

    /// The host's: this endpoint's rails on the machine's interfaces.
    pub fn of(ep: &ramp::am::Endpoint) -> Links {
        let addrs: Vec<IpAddr> = ep.rail_statistics().iter().map(|r| r.addr.ip()).collect();
        Links::new("/sys/class/net", &addrs, ramp::am::interface_of)
    }

    /// The rails watched: (rail, interface).
    pub fn watched(&self) -> Vec<(u8, &str)> {
        self.rails.iter().map(|r| (r.0, r.1.as_str())).collect()
    }

    /// The bytes each watched link has sent (its `statistics/tx_bytes`;
    /// 0 where unreadable), in the order of `watched`.
    pub fn tx_bytes(&self) -> Vec<u64> {
        self.rails
            .iter()
            .map(|(_, name, _)| {
                let f = self.root.join(name).join("statistics/tx_bytes");
                std::fs::read_to_string(f)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0)
            })
            .collect()
    }

    /// Reads every rail's link at `t` (seconds): a change from the last
    /// known state is pushed on `events` as (t, "link railK down|up",
    /// the interface). The first reading is no event.
    pub fn sample(&mut self, t: f64, events: &mut Vec<(f64, &'static str, String)>) {
        for (rail, name, last) in self.rails.iter_mut() {
            let dir = self.root.join(&*name);
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            let Some(up) = link_up(read("operstate").as_deref(), read("carrier").as_deref()) else {
                continue;
            };
            if last.is_some_and(|was| was != up) {
                let k = (*rail as usize).min(DOWN.len() - 1);
                let what = if up { UP[k] } else { DOWN[k] };
                events.push((t, what, name.clone()));
            }
            *last = Some(up);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operstate_and_carrier_say_up_or_down() {
        let cases = [
            (Some("up\n"), None, Some(true)),
            (Some("down\n"), Some("0"), Some(false)),
            (Some("lowerlayerdown\n"), None, Some(false)),
            (Some("dormant"), Some("1"), Some(false)),
            (Some("unknown\n"), Some("1\n"), Some(true)),
            (Some("unknown\n"), Some("0\n"), Some(false)),
            (Some("unknown\n"), None, None),
            (None, Some("1"), Some(true)),
            (None, None, None),
            (Some("garbage"), Some("x"), None),
        ];
        for (op, carrier, want) in cases {
            assert_eq!(link_up(op, carrier), want, "{op:?} {carrier:?}");
        }
    }

    #[test]
    fn a_link_going_down_and_up_is_an_event_each_time() {
        let root = std::env::temp_dir().join(format!("ramp-links-{}", std::process::id()));
        let set = |iface: &str, op: &str, carrier: Option<&str>| {
            let d = root.join(iface);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("operstate"), format!("{op}\n")).unwrap();
            match carrier {
                Some(c) => std::fs::write(d.join("carrier"), format!("{c}\n")).unwrap(),
                None => {
                    let _ = std::fs::remove_file(d.join("carrier"));
                }
            }
        };
        set("eth0", "up", Some("1"));
        set("rail1", "up", Some("1"));
        let addrs: Vec<IpAddr> = ["10.0.0.1", "10.1.0.1", "10.9.9.9"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let iface = |ip: IpAddr| match ip.to_string().as_str() {
            "10.0.0.1" => Some("eth0".to_string()),
            "10.1.0.1" => Some("rail1".to_string()),
            _ => None,
        };
        let mut links = Links::new(&root, &addrs, iface);
        assert_eq!(links.watched(), [(0, "eth0"), (1, "rail1")]);
        // the links' counters: rail1's readable, eth0's not (0)
        std::fs::create_dir_all(root.join("rail1/statistics")).unwrap();
        std::fs::write(root.join("rail1/statistics/tx_bytes"), "12345\n").unwrap();
        assert_eq!(links.tx_bytes(), [0, 12345]);
        let mut ev = Vec::new();
        links.sample(0.0, &mut ev);
        assert_eq!(ev, [], "the first reading is no event");
        // the peer's end goes down (veth: lowerlayerdown), then ours
        // (down, the carrier unreadable), then up again
        set("rail1", "lowerlayerdown", Some("0"));
        links.sample(0.05, &mut ev);
        set("rail1", "down", None);
        links.sample(0.10, &mut ev);
        set("rail1", "up", Some("1"));
        links.sample(0.15, &mut ev);
        set("eth0", "unknown", Some("0"));
        links.sample(0.20, &mut ev);
        let got: Vec<(f64, &str, &str)> = ev.iter().map(|e| (e.0, e.1, e.2.as_str())).collect();
        assert_eq!(
            got,
            [
                (0.05, "link rail1 down", "rail1"),
                (0.15, "link rail1 up", "rail1"),
                (0.20, "link rail0 down", "eth0"),
            ]
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
