//! The pieces of a 1 MiB put and get between two processes over shared
//! memory, each beside memcpy in the same run: memcpy (hot, as `ramp bench
//! --loggp` measures it), `process_vm_readv`/`writev` of 1 MiB alone, one
//! put or get waited for at a time, and 16 outstanding (as the loggp
//! bench; the gets into destinations written once before, as memcpy's, or
//! into freshly allocated ones), with both processes' context switches
//! (a waiter that sleeps shows as voluntary ones).
//! `cargo run --release --example rma_pieces [ROUNDS]` (default 64);
//! `RMA_PIECES_WRAP="strace -f -tt -o FILE"` runs the target under a tool;
//! `RMA_PIECES_ALLOC=1` makes the target's region with `alloc_region`
//! (mapped by this process: one memcpy per put or get).
//! The pieces and what they showed: `docs/rma-shm-design.md`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, BundleMode, EndpointName, Message, VecSegment, REGION_READ, REGION_WRITE};

const TAG: u64 = 0x9e7;
const MIB: usize = 1 << 20;
const WINDOW: usize = 16;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> EndpointName {
    let mut n = [0u8; 32];
    for (i, b) in n.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    EndpointName(n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// MiB/s of `n` calls of `f` moving `bytes` each: the median of 5.
fn bw(n: usize, bytes: usize, mut f: impl FnMut(usize)) -> f64 {
    median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                for i in 0..n {
                    f(i);
                }
                (n * bytes) as f64 / t.elapsed().as_secs_f64() / MIB as f64
            })
            .collect(),
    )
}

fn server() {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    e.set_handler(
        20,
        am::handler(|h| am::reply(h.token, &Message::short(21, &[])).unwrap()),
    );
    // RMA_PIECES_ALLOC=1: the region is memory ramp allocates, which the
    // client maps (its puts and gets are then one memcpy each)
    let (r, base) = if std::env::var("RMA_PIECES_ALLOC").is_ok_and(|v| v == "1") {
        let (r, base, _) = e.alloc_region(2 * MIB, REGION_READ | REGION_WRITE).unwrap();
        (r, base)
    } else {
        let mem = VecSegment::new(2 * MIB);
        let base = am::SegmentMemory::base(&*mem);
        (
            e.register_region(mem, REGION_READ | REGION_WRITE).unwrap(),
            base,
        )
    };
    let mut l = String::new();
    std::io::stdin().read_line(&mut l).unwrap();
    e.map(0, unhex(l.trim()), TAG).unwrap();
    e.set_expected_resources(1, 32).unwrap();
    println!("{} {r} {} {base}", hex(&e.name().0), std::process::id());
    std::io::stdout().flush().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        s.store(true, Ordering::Relaxed);
    });
    while !stop.load(Ordering::Relaxed) {
        b.poll().unwrap();
    }
}

/// (voluntary, involuntary) context switches of process `pid` so far.
fn switches(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let get = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    (
        get("voluntary_ctxt_switches"),
        get("nonvoluntary_ctxt_switches"),
    )
}

fn cma(pid: u32, remote: usize, local: usize, write: bool) {
    let l = libc::iovec {
        iov_base: local as *mut libc::c_void,
        iov_len: MIB,
    };
    let r = libc::iovec {
        iov_base: remote as *mut libc::c_void,
        iov_len: MIB,
    };
    // SAFETY: a benchmark: `local` is a 1 MiB buffer of ours, `remote` the
    // server's 2 MiB region.
    let n = unsafe {
        if write {
            libc::process_vm_writev(pid as i32, &l, 1, &r, 1, 0)
        } else {
            libc::process_vm_readv(pid as i32, &l, 1, &r, 1, 0)
        }
    };
    assert_eq!(n, MIB as isize);
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("server") {
        return server();
    }
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    e.set_handler(21, am::handler(|_| {}));
    let wrap = std::env::var("RMA_PIECES_WRAP").unwrap_or_default();
    let mut words: Vec<String> = wrap.split_whitespace().map(String::from).collect();
    words.push(std::env::current_exe().unwrap().display().to_string());
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .arg("server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", hex(&e.name().0)).unwrap();
    let mut l = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut l)
        .unwrap();
    let v: Vec<&str> = l.split_whitespace().collect();
    let (region, pid, base): (u32, u32, usize) = (
        v[1].parse().unwrap(),
        v[2].parse().unwrap(),
        v[3].parse().unwrap(),
    );
    e.map(1, unhex(v[0]), TAG).unwrap();
    e.set_expected_resources(1, 32).unwrap();
    while !e.ring_ready(1) {
        let _ = e.request(1, &Message::short(20, &[]), true);
        for _ in 0..100 {
            b.poll().unwrap();
        }
    }
    // an allocated region's file comes after a first operation to it
    let t0 = std::time::Instant::now();
    let alloc = std::env::var("RMA_PIECES_ALLOC").is_ok_and(|v| v == "1");
    while alloc && e.rma_shared_counts()[1] == 0 && t0.elapsed().as_secs() < 2 {
        let h = e.put(1, region, 0, &[0u8; 8], None, true).unwrap();
        e.wait_op(h).unwrap();
        b.wait_for_activity(1);
    }
    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let touched = |_: usize| {
        let d = VecSegment::new(MIB);
        am::SegmentMemory::write(&*d, 0, &src);
        d
    };
    let mut dsts: Vec<_> = (0..WINDOW + 1).map(touched).collect();
    let one = touched(0);
    let mut ops = std::collections::VecDeque::new();
    // kind 0 put, 1 get into touched destinations, 2 get into fresh ones
    let mut windowed = |kind: u8, i: usize| {
        if kind == 2 && i == 0 {
            dsts = (0..WINDOW + 1).map(|_| VecSegment::new(MIB)).collect();
        }
        if ops.len() == WINDOW {
            assert_eq!(e.wait_op(ops.pop_front().unwrap()).unwrap(), 0);
        }
        let off = ((i % 2) * MIB) as u64;
        ops.push_back(if kind > 0 {
            e.get(1, region, off, dsts[i % dsts.len()].clone(), true)
                .unwrap()
        } else {
            e.put(1, region, off, &src, None, true).unwrap()
        });
        if i + 1 == rounds {
            while let Some(op) = ops.pop_front() {
                assert_eq!(e.wait_op(op).unwrap(), 0);
            }
        }
    };
    let memcpy = bw(rounds, MIB, |_| {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    });
    let (me, mut last) = (
        std::process::id(),
        (switches(std::process::id()), switches(pid)),
    );
    let mut phase = |what: &str, x: f64| {
        let now = (switches(me), switches(pid));
        println!(
            "{what:38} {x:9.0} MiB/s  {:.3} of memcpy  (context switches: client {}+{}, server {}+{}, voluntary+not)",
            x / memcpy,
            now.0 .0 - last.0 .0,
            now.0 .1 - last.0 .1,
            now.1 .0 - last.1 .0,
            now.1 .1 - last.1 .1
        );
        last = now;
    };
    phase("memcpy (hot)", memcpy);
    let x = bw(rounds, MIB, |i| {
        cma(pid, base + (i % 2) * MIB, dst.as_mut_ptr() as usize, false)
    });
    phase("process_vm_readv", x);
    let x = bw(rounds, MIB, |i| {
        cma(pid, base + (i % 2) * MIB, src.as_ptr() as usize, true)
    });
    phase("process_vm_writev", x);
    let x = bw(rounds, MIB, |i| {
        e.put(1, region, ((i % 2) * MIB) as u64, &src, None, false)
            .unwrap();
    });
    phase("put, one at a time", x);
    let x = bw(rounds, MIB, |i| {
        let h = e
            .get(1, region, ((i % 2) * MIB) as u64, one.clone(), true)
            .unwrap();
        e.wait_op(h).unwrap();
    });
    phase("get, one at a time", x);
    let x = bw(rounds, MIB, |i| windowed(0, i));
    phase("put, 16 outstanding", x);
    let x = bw(rounds, MIB, |i| windowed(1, i));
    phase("get, 16 outstanding, 17 touched dsts", x);
    let x = bw(rounds, MIB, |i| windowed(2, i));
    phase("get, 16 outstanding, 17 fresh dsts", x);
    println!("direct counts {:?}", e.rma_direct_counts());
    println!(
        "through a mapping (ops, mappings made, files given, held) {:?}",
        e.rma_shared_counts()
    );
    drop(stdin);
    let _ = child.wait();
}
