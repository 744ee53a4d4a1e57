//! What `ramp bench --rails`'s samples saw (`Trace`: the sender's Mbit/s
//! per path every sample, the events), and the times issue 38's targets
//! ask for, read from it (`figures`): from a rail's link going down to the
//! other rail carrying at least half its rate (failover, target < 1 s);
//! from a link coming back to its rail carrying traffic again (rejoin,
//! < 2 s); from the first link's return after every link was down to new
//! data acknowledged again (resume, < 1 s). Each is measured from the
//! sample that saw the link event (`bench_links.rs`) to the first later
//! sample whose bytes cross the threshold: both are sample times, so a
//! figure is good to one sample period (50 ms by default). Shared by the
//! sampler (`bench_rails.rs`) and the plot (`bench_rails_plot.rs`).

use std::net::SocketAddr;

/// One path as the samples name it.
#[derive(Clone, Debug, PartialEq)]
pub struct PathKey {
    pub rail: u8,
    pub local: SocketAddr,
    pub remote: SocketAddr,
}

impl std::fmt::Display for PathKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rail {} {} -> {}",
            self.rail,
            self.local.ip(),
            self.remote.ip()
        )
    }
}

/// What the samples saw.
#[derive(Default)]
pub struct Trace {
    pub paths: Vec<PathKey>,
    /// (seconds since the start, Mbit/s sent per path of `paths`, total
    /// Mbit/s of new data acknowledged)
    pub rows: Vec<(f64, Vec<f64>, f64)>,
    /// (seconds since the start, what: "failed", "recovered",
    /// "partitioned", "rejoined", the path or "-"; or "link railK down",
    /// "link railK up", the interface)
    pub events: Vec<(f64, &'static str, String)>,
    /// The rails whose links are watched: (rail, interface).
    pub links: Vec<(u8, String)>,
    /// Mbit/s each watched link sent (the kernel's counters: what the
    /// path's bytes are not: a path goes out on the link the kernel routes
    /// its remote address to, not always its local rail's), row by row.
    pub link_rows: Vec<Vec<f64>>,
}

/// One measured time: `kind` ("failover", "rejoin", "resume") after the
/// link event of `rail` at `at` seconds; `ms` None when the threshold
/// (`threshold` Mbit/s) was not crossed before the next link event (for
/// rejoin and resume: before the next link going down) or the end.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub kind: &'static str,
    pub rail: u8,
    pub at: f64,
    pub ms: Option<f64>,
    pub threshold: f64,
}

/// A link event of the trace: (time, rail, up).
fn link_events(tr: &Trace) -> Vec<(f64, u8, bool)> {
    tr.events
        .iter()
        .filter_map(|(t, what, _)| {
            let rest = what.strip_prefix("link rail")?;
            let (k, dir) = rest.split_once(' ')?;
            Some((*t, k.parse().ok()?, dir == "up"))
        })
        .collect()
}

/// Mbit/s sent on each rail in each row: its link's (the kernel's
/// counters) where its link is watched, else the sum of the paths of the
/// rail.
fn rail_rows(tr: &Trace, rails: usize) -> Vec<Vec<f64>> {
    tr.rows
        .iter()
        .enumerate()
        .map(|(n, (_, row, _))| {
            let mut r = vec![0.0; rails];
            for (i, v) in row.iter().enumerate() {
                r[tr.paths[i].rail as usize] += v;
            }
            for (c, (rail, _)) in tr.links.iter().enumerate() {
                if let Some(&v) = tr.link_rows.get(n).and_then(|l| l.get(c)) {
                    r[*rail as usize] = v;
                }
            }
            r
        })
        .collect()
}

/// A rail's rate, Mbit/s: `given` when the caller knows it (the shaping),
/// else the 90th percentile of what it sent per sample.
fn rail_rate(per_rail: &[Vec<f64>], rail: usize, given: Option<f64>) -> f64 {
    if let Some(g) = given {
        return g;
    }
    let mut v: Vec<f64> = per_rail.iter().map(|r| r[rail]).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() * 9 / 10).copied().unwrap_or(0.0)
}

/// The failover, rejoin and resume times of `tr` (see the head of this
/// file), in the order of their link events; `rate`: each rail's rate in
/// Mbit/s when known (else measured). "Carrying" is at least half the
/// rate for failover (the target's words) and a tenth for rejoin and
/// resume (traffic: data, not probes). A link going down with every other
/// one following it within 1 s is a partition's start: no failover.
pub fn figures(tr: &Trace, rate: Option<f64>) -> Vec<Figure> {
    let links = link_events(tr);
    let rails = tr
        .paths
        .iter()
        .map(|p| p.rail as usize + 1)
        .chain(links.iter().map(|l| l.1 as usize + 1))
        .chain(tr.links.iter().map(|l| l.0 as usize + 1))
        .max()
        .unwrap_or(0);
    let per_rail = rail_rows(tr, rails);
    let rates: Vec<f64> = (0..rails).map(|k| rail_rate(&per_rail, k, rate)).collect();
    // the first row after `t` (strictly) up to `until` where `hit` holds
    let first = |t: f64, until: f64, hit: &dyn Fn(usize) -> bool| {
        (0..tr.rows.len())
            .filter(|&i| tr.rows[i].0 > t && tr.rows[i].0 <= until)
            .find(|&i| hit(i))
            .map(|i| (tr.rows[i].0 - t) * 1e3)
    };
    let end = tr.rows.last().map_or(0.0, |r| r.0);
    let mut up = vec![true; rails];
    let mut out = Vec::new();
    for (n, &(t, k, is_up)) in links.iter().enumerate() {
        let k_us = k as usize;
        let was_partitioned = up.iter().all(|u| !u);
        up[k_us] = is_up;
        let next = links.get(n + 1).map_or(end, |l| l.0);
        let next_down = links[n + 1..].iter().find(|l| !l.2).map_or(end, |l| l.0);
        if !is_up {
            let others: Vec<usize> = (0..rails).filter(|&j| j != k_us && up[j]).collect();
            if others.is_empty() {
                continue;
            }
            let half = |j: usize| rates[j] / 2.0;
            let ms = first(t, next, &|i| {
                others.iter().any(|&j| per_rail[i][j] >= half(j))
            });
            // every other link going down too (within 1 s, before any
            // comes back): a partition's start, not a failover
            let mut still_up = others.clone();
            for l in links[n + 1..].iter().take_while(|l| !l.2 && l.0 <= t + 1.0) {
                still_up.retain(|&j| j != l.1 as usize);
            }
            if !still_up.is_empty() {
                let threshold = others.iter().map(|&j| half(j)).fold(f64::MAX, f64::min);
                out.push(Figure {
                    kind: "failover",
                    rail: k,
                    at: t,
                    ms,
                    threshold,
                });
            }
            continue;
        }
        let tenth = rates[k_us] / 10.0;
        out.push(Figure {
            kind: "rejoin",
            rail: k,
            at: t,
            ms: first(t, next_down, &|i| per_rail[i][k_us] >= tenth),
            threshold: tenth,
        });
        if was_partitioned {
            out.push(Figure {
                kind: "resume",
                rail: k,
                at: t,
                ms: first(t, next_down, &|i| tr.rows[i].2 >= tenth),
                threshold: tenth,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rail: u8) -> PathKey {
        let a = |s: &str| s.parse().unwrap();
        PathKey {
            rail,
            local: a(&format!("10.0.{rail}.1:1")),
            remote: a(&format!("10.0.{rail}.2:1")),
        }
    }

    /// Samples every 50 ms: (rail 0, rail 1, acknowledged) Mbit/s.
    fn trace(rows: &[(f64, f64, f64)], events: &[(f64, &'static str)]) -> Trace {
        Trace {
            paths: vec![key(0), key(1)],
            rows: rows
                .iter()
                .enumerate()
                .map(|(i, &(a, b, t))| (0.05 * (i + 1) as f64, vec![a, b], t))
                .collect(),
            events: events.iter().map(|&(t, w)| (t, w, "x".into())).collect(),
            ..Trace::default()
        }
    }

    fn ms(f: &Figure) -> Option<i64> {
        f.ms.map(|m| m.round() as i64)
    }

    #[test]
    fn failover_rejoin_and_resume_from_the_link_events() {
        // rows at 0.05, 0.10, ...: both rails carry 100; rail 1 goes down
        // (seen at 0.10); rail 0 reaches 50 (half its given rate 100) at
        // 0.25; rail 1 up at 0.30, carries 10 (a tenth) at 0.40; both
        // down at 0.45 and 0.50, up at 0.60 and 0.65; data acknowledged
        // again at 0.75 (rail 1 still sends 60 at 0.50, when it goes down
        // too: the partition's start, no failover)
        let rows = [
            (100.0, 100.0, 200.0),
            (100.0, 0.0, 100.0), // 0.10
            (10.0, 0.0, 10.0),
            (40.0, 0.0, 40.0),
            (60.0, 0.0, 60.0), // 0.25
            (100.0, 0.0, 100.0),
            (100.0, 5.0, 100.0), // 0.35
            (100.0, 10.0, 110.0),
            (100.0, 50.0, 150.0), // 0.45
            (0.0, 60.0, 60.0),
            (0.0, 0.0, 0.0), // 0.55
            (0.0, 0.0, 0.0),
            (0.0, 0.0, 0.0), // 0.65
            (0.0, 20.0, 5.0),
            (50.0, 50.0, 100.0), // 0.75
        ];
        let ev = [
            (0.10, "link rail1 down"),
            (0.10, "failed"),
            (0.30, "link rail1 up"),
            (0.45, "link rail0 down"),
            (0.50, "link rail1 down"),
            (0.60, "link rail0 up"),
            (0.65, "link rail1 up"),
        ];
        let f = figures(&trace(&rows, &ev), Some(100.0));
        let got: Vec<(&str, u8, Option<i64>)> = f.iter().map(|f| (f.kind, f.rail, ms(f))).collect();
        assert_eq!(
            got,
            [
                ("failover", 1, Some(150)),
                ("rejoin", 1, Some(100)),
                // (rail 0 down, rail 1 down 50 ms later: a partition, no
                // failover)
                ("rejoin", 0, Some(150)),
                ("resume", 0, Some(150)),
                ("rejoin", 1, Some(50)),
            ]
        );
        assert_eq!((f[0].threshold, f[1].threshold), (50.0, 10.0));
    }

    #[test]
    fn a_threshold_never_crossed_is_none_and_rates_are_measured_when_not_given() {
        // rail 0 carries 80 for nine samples, 100 once, then 20 five
        // times: its 90th percentile (80) is its rate; after rail 1 goes
        // down it never reaches 40 again
        let mut rows = vec![(80.0, 80.0, 160.0); 9];
        rows.push((100.0, 80.0, 180.0));
        rows.extend([(20.0, 0.0, 20.0); 5]);
        let f = figures(&trace(&rows, &[(0.55, "link rail1 down")]), None);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].kind, f[0].ms, f[0].threshold),
            ("failover", None, 40.0)
        );
        assert!(figures(&trace(&rows, &[]), None).is_empty());
    }

    #[test]
    fn a_watched_links_counters_count_for_its_rail_not_the_paths() {
        // the paths say rail 0 carries nothing after rail 1 went down; its
        // link (the kernel routes rail 1's path to rail 0's remote address
        // over it) sends 60 from the second sample after
        let rows = [(0.0, 100.0, 100.0), (0.0, 0.0, 0.0), (0.0, 60.0, 60.0)];
        let mut tr = trace(&rows, &[(0.05, "link rail1 down")]);
        assert_eq!(figures(&tr, Some(100.0))[0].ms, None);
        tr.links = vec![(0, "eth0".into()), (1, "rail1".into())];
        tr.link_rows = vec![vec![0.0, 100.0], vec![10.0, 0.0], vec![60.0, 0.0]];
        let f = figures(&tr, Some(100.0));
        assert_eq!(
            (f[0].kind, f[0].rail, ms(&f[0])),
            ("failover", 1, Some(100))
        );
    }
}
