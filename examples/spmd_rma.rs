//! One-sided remote memory in an SPMD job: every rank registers a region,
//! the ids are all-gathered, every rank puts a block (more than one chunk)
//! into its slot of every other rank's region, fences, and after a barrier
//! checks what arrived; then it gets its blocks back from every peer, and a
//! put past a region's end is refused with EBADSEGOFF.
//! Run: ramp-run -n 4 target/release/examples/spmd_rma

use ramp::am::{VecSegment, REGION_READ, REGION_WRITE};
use ramp::error::ReturnStatus;
use ramp::spmd::{self, Role};

const BLOCK: usize = (1 << 20) + 17;

fn pattern(from: usize, to: usize) -> Vec<u8> {
    (0..BLOCK)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add((from * 7 + to * 13) as u32) as u8
        })
        .collect()
}

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        _ => {
            eprintln!("spmd_rma: start me with ramp-run -n N");
            std::process::exit(2);
        }
    };
    let (_bundle, ep, _) = spmd::start_worker(boot, 0).expect("start-up");
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());
    let mem = VecSegment::new(size * BLOCK);
    let id = ep
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .expect("register");
    let ids: Vec<u32> = spmd::allgather(&id.to_be_bytes())
        .expect("allgather")
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
        .collect();
    let t0 = std::time::Instant::now();
    for peer in (0..size).filter(|&p| p != rank) {
        let off = (rank * BLOCK) as u64;
        ep.put(
            peer as u32,
            ids[peer],
            off,
            &pattern(rank, peer),
            None,
            false,
        )
        .expect("put");
    }
    ep.fence().expect("every put succeeded");
    let put_time = t0.elapsed();
    spmd::barrier().expect("barrier");
    let snap = mem.snapshot();
    for from in (0..size).filter(|&p| p != rank) {
        assert!(
            snap[from * BLOCK..(from + 1) * BLOCK] == pattern(from, rank)[..],
            "rank {rank}: the block from rank {from} is wrong"
        );
    }
    let t1 = std::time::Instant::now();
    let mut ops = Vec::new();
    for peer in (0..size).filter(|&p| p != rank) {
        let dst = VecSegment::new(BLOCK);
        let op = ep
            .get(
                peer as u32,
                ids[peer],
                (rank * BLOCK) as u64,
                dst.clone(),
                true,
            )
            .expect("get");
        ops.push((peer, op, dst));
    }
    for (peer, op, dst) in ops {
        assert_eq!(ep.wait_op(op).expect("wait"), 0, "get from rank {peer}");
        assert!(
            dst.snapshot() == pattern(rank, peer),
            "rank {rank}: the block got back from rank {peer} is wrong"
        );
    }
    let get_time = t1.elapsed();
    let peer = (rank + 1) % size;
    let op = ep
        .put(
            peer as u32,
            ids[peer],
            (size * BLOCK) as u64 - 2,
            &[1, 2, 3],
            None,
            true,
        )
        .expect("put");
    assert_eq!(
        ep.wait_op(op).expect("wait"),
        ReturnStatus::BadSegOff as u8,
        "a put past the end was not refused"
    );
    spmd::barrier().expect("barrier");
    if rank == 0 {
        println!(
            "spmd_rma: {size} processes: puts and gets of {BLOCK} bytes between every pair ok \
             (rank 0: puts {} ms, gets {} ms)",
            put_time.as_millis(),
            get_time.as_millis()
        );
    }
    spmd::barrier().expect("barrier");
    let _ = spmd::exit(0);
}
