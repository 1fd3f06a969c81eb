use coral_ann::{AnnIndex, Filter, Params, Query};
use std::time::Instant;
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn normal(&mut self) -> f32 {
        (0..4)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
            .sum::<f32>()
            - 2.0
    }
}
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse::<f64>()
        .unwrap()
        / 1e9
}
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (n, dim, clusters, efc, m) = (args[0], args[1], args[2], args[3], args[4]);
    let mut rng = Rng(1);
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dim).map(|_| rng.normal()).collect())
        .collect();
    let data: Vec<Vec<f32>> = (0..n + 200)
        .map(|_| {
            let c = &centres[(rng.next() % clusters as u64) as usize];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.8 * rng.normal()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect();
    let (base, queries) = data.split_at(n);
    let mut index = AnnIndex::new(
        dim,
        Params {
            m,
            ef_construction: efc,
            seed: 1,
        },
    )
    .unwrap();
    let t = Instant::now();
    let c0 = cpu();
    for (l, v) in base.iter().enumerate() {
        index.insert(l as u32, v).unwrap();
    }
    let build = t.elapsed().as_secs_f64();
    let bc = cpu() - c0;
    println!(
        "build {n}: {:.2}s cpu {:.2}s ({:.0} us/insert cpu) mem {} MB",
        build,
        bc,
        bc * 1e6 / n as f64,
        index.memory_bytes() / 1_000_000
    );
    for ef in [16, 32, 64, 128, 256] {
        let mut total = 0.0;
        let mut time = 0.0;
        for q in queries {
            let score = |l: u32| dot(&base[l as usize], q);
            let t = Instant::now();
            let got = index.search(
                &Query {
                    vector: q,
                    k: 10,
                    ef,
                    filter: Filter::All,
                    exact_below: 0,
                },
                &score,
            );
            time += t.elapsed().as_secs_f64();
            let mut all: Vec<f32> = base.iter().map(|v| dot(v, q)).collect();
            all.sort_by(|a, b| b.total_cmp(a));
            let kth = all[9];
            total += got.iter().filter(|h| h.score >= kth - 1e-6).count().min(10) as f64 / 10.0;
        }
        println!(
            "ef {ef}: recall {:.4} search {:.3} ms",
            total / queries.len() as f64,
            time * 1e3 / queries.len() as f64
        );
    }
}
