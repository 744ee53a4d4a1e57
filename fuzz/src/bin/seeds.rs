//! Writes the seed inputs of the fuzz targets into `in/` (run from `fuzz/`:
//! `cargo run --release --bin seeds`): real packets of every type, PMI
//! replies, launcher frames.
use ramp::wire::{self, Category, Common, Integrity, MsgKind, MsgMeta};

fn main() {
    let i = Integrity::Crc32c;
    let c = Common {
        vtag: 0x1122_3344_5566_7788,
        channel: 1,
        seq: 7,
        ..Default::default()
    };
    let mut pk: Vec<Vec<u8>> = Vec::new();
    for cat in [Category::Short, Category::Medium, Category::Long] {
        let m = MsgMeta::new(MsgKind::User, cat, 9, &[1, 2, 3]);
        let mut d = Vec::new();
        wire::encode_data(&mut d, &i, &c, &m, 16, 0, &[0xAB; 16]);
        pk.push(d);
    }
    // a later fragment: the short header (wire version 5)
    let mut d = Vec::new();
    wire::encode_more(&mut d, &i, &c, 16, &[0xCD; 16]);
    pk.push(d);
    let mut d = Vec::new();
    wire::encode_ack(&mut d, &i, &c, 5);
    pk.push(d);
    let mut d = Vec::new();
    wire::encode_init(&mut d, &i, 42);
    pk.push(d);
    let mut d = Vec::new();
    wire::encode_cookie_echo(&mut d, &i, 43, &[7; 48]);
    pk.push(d);
    let w = |dir: &str, n: usize, b: &[u8]| {
        std::fs::create_dir_all(format!("in/{dir}")).unwrap();
        std::fs::write(format!("in/{dir}/{n}"), b).unwrap();
    };
    for (n, p) in pk.iter().enumerate() {
        // decode: flag 0 = as is; flag 1 = resealed (the trailer dropped)
        let mut a = vec![0u8];
        a.extend_from_slice(p);
        w("decode", 2 * n, &a);
        let mut b = vec![1u8];
        b.extend_from_slice(&p[..p.len() - 4]);
        w("decode", 2 * n + 1, &b);
        // protocol: one datagram to node 1 from node 0, resealed
        let body = &p[..p.len() - 4];
        let mut r = vec![3u8, 0];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        w("protocol", n, &r);
    }
    for (n, s) in [
        "cmd=get_result rc=0 msg=success value=a\\ b",
        "cmd=kvs-get-response;found=TRUE;value=0a1b;rc=0;",
    ]
    .iter()
    .enumerate()
    {
        w("pmi", n, s.as_bytes());
    }
    let mut f = vec![7u8];
    for k in 1..=7u8 {
        f.extend_from_slice(&4u32.to_be_bytes());
        f.push(k);
        f.extend_from_slice(&[k; 3]);
    }
    w("frames", 0, &f);
}
