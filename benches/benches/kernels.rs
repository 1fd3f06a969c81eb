//! Micro-benchmarks of Coral's scoring and text kernels on fixed, deterministic inputs.

use coral_embed::{HashEmbedder, tokenize};
use coral_score::{
    BITMAP_WORDS, Bitmap, Query, ScanRows, Scored, TopK, Weights, bitmap_jaccard, dot, scan,
};
use criterion::{BenchmarkId, Criterion};
use std::hint::black_box;

const DIM: usize = 384;
const CHINESE: &str =
    "请把这段技术文档翻译成英文：接口 42 在首次调用时会建立连接池，超时设为 30 秒";
const ENGLISH: &str =
    "The connection pool is created on the first call to endpoint 42; the timeout is 30 seconds.";

/// xorshift64: a tiny deterministic generator, so every run benches the same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    fn vector(&mut self, dim: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dim).map(|_| self.unit()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }

    /// A bitmap with `tokens` random bits, like a short text.
    fn bitmap(&mut self, tokens: usize) -> Bitmap {
        let mut map = [0u64; BITMAP_WORDS];
        for _ in 0..tokens {
            let bit = (self.next() % 2048) as usize;
            map[bit / 64] |= 1 << (bit % 64);
        }
        map
    }
}

fn bench_dot(c: &mut Criterion) {
    let mut rng = Rng(1);
    let mut group = c.benchmark_group("dot");
    for dim in [384, 512] {
        let (a, b) = (rng.vector(dim), rng.vector(dim));
        let expected: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        assert!((f64::from(dot(&a, &b)) - expected).abs() < 1e-5);
        group.bench_function(BenchmarkId::from_parameter(dim), |bench| {
            bench.iter(|| dot(black_box(&a), black_box(&b)))
        });
    }
    group.finish();
}

fn bench_bitmap_jaccard(c: &mut Criterion) {
    let mut rng = Rng(2);
    let (a, b) = (rng.bitmap(30), rng.bitmap(30));
    let inter: u32 = a.iter().zip(&b).map(|(x, y)| (x & y).count_ones()).sum();
    let union: u32 = a.iter().zip(&b).map(|(x, y)| (x | y).count_ones()).sum();
    assert_eq!(bitmap_jaccard(&a, &b), f64::from(inter) / f64::from(union));
    c.bench_function("bitmap_jaccard", |bench| {
        bench.iter(|| bitmap_jaccard(black_box(&a), black_box(&b)))
    });
}

fn bench_topk(c: &mut Criterion) {
    let mut rng = Rng(3);
    let hits: Vec<Scored> = (0..20_000)
        .map(|row| Scored {
            row,
            score: f64::from(rng.unit()),
            vector: 0.0,
            jaccard: 0.0,
            time: 0.0,
        })
        .collect();
    let collect = |hits: &[Scored]| {
        let mut top = TopK::new(10);
        for &hit in hits {
            top.push(hit);
        }
        top.into_sorted_vec()
    };
    let best = hits
        .iter()
        .map(|h| h.score)
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(collect(&hits)[0].score, best);
    c.bench_function("topk_20k_k10", |bench| {
        bench.iter(|| collect(black_box(&hits)))
    });
}

fn bench_tokenize(c: &mut Criterion) {
    assert_eq!(tokenize(CHINESE).len(), 38);
    assert_eq!(tokenize(ENGLISH).len(), 17);
    let mut group = c.benchmark_group("tokenize");
    group.bench_function("chinese", |bench| {
        bench.iter(|| tokenize(black_box(CHINESE)))
    });
    group.bench_function("english", |bench| {
        bench.iter(|| tokenize(black_box(ENGLISH)))
    });
    group.finish();
}

fn bench_hash_embed(c: &mut Criterion) {
    let embedder = HashEmbedder::new(DIM).expect("384 is a valid dimension");
    let row = embedder.embed_text(ENGLISH);
    assert!((row.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
    c.bench_function("hash_embed_384_english", |bench| {
        bench.iter(|| embedder.embed_text(black_box(ENGLISH)))
    });
}

/// Owned pool arrays for the scan benches.
struct Data {
    vectors: Vec<f32>,
    bitmaps: Vec<Bitmap>,
    timestamps: Vec<f64>,
    tiebreak: Vec<u64>,
}

impl Data {
    fn random(rows: usize, rng: &mut Rng) -> Self {
        Data {
            vectors: (0..rows).flat_map(|_| rng.vector(DIM)).collect(),
            bitmaps: (0..rows).map(|_| rng.bitmap(20)).collect(),
            timestamps: (0..rows)
                .map(|_| (rng.next() % (30 * 86_400)) as f64)
                .collect(),
            tiebreak: (0..rows).map(|_| rng.next()).collect(),
        }
    }

    fn pool(&self) -> ScanRows<'_> {
        ScanRows {
            dim: DIM,
            vectors: &self.vectors,
            sparse: None,
            bitmaps: &self.bitmaps,
            timestamps: &self.timestamps,
            tiebreak: &self.tiebreak,
        }
    }
}

fn bench_scan(c: &mut Criterion) {
    let mut group = c.benchmark_group("scan");
    for rows in [2_000, 20_000] {
        let mut rng = Rng(4);
        let data = Data::random(rows, &mut rng);
        // The query is a planted row's own vector and bitmap, so that row must come first.
        let planted = rows / 3;
        let query_vector = data.vectors[planted * DIM..(planted + 1) * DIM].to_vec();
        let query_bitmap = data.bitmaps[planted];
        let query = Query {
            vector: Some(&query_vector),
            bitmap: &query_bitmap,
            now: 30.0 * 86_400.0,
            tau_days: 7.0,
            weights: Weights::default(),
            min_score: 0.0,
            k: 5,
            allow: None,
            boost: None,
        };
        let pool = data.pool();
        let hits = scan(&pool, &query);
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].row as usize, planted);
        assert_eq!(hits[0].jaccard, 1.0);
        group.bench_function(BenchmarkId::from_parameter(rows), |bench| {
            bench.iter(|| scan(black_box(&pool), black_box(&query)))
        });
    }
    group.finish();
}

// Written out instead of `criterion_group!`, which generates an undocumented `pub fn`.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_dot(&mut c);
    bench_bitmap_jaccard(&mut c);
    bench_topk(&mut c);
    bench_tokenize(&mut c);
    bench_hash_embed(&mut c);
    bench_scan(&mut c);
    c.final_summary();
}
