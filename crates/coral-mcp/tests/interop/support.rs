//! What the interoperability tests share: finding the original and Python, one directory that
//! both implementations open through one `coral_config.json`, and the seeded text generator.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

pub const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// The original Python Coral, where the workspace and CI keep it: `../shared/upstream/` beside
/// the workspace root. Missing is a failure, never a skip.
pub fn upstream() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/upstream/coral-memory-py");
        for file in ["three_dog_coral.py", "coral_mcp_server.py"] {
            assert!(
                dir.join(file).is_file(),
                "the original Python Coral is missing: {} does not exist; the interoperability \
                 tests need ../shared/upstream/coral-memory-py beside the workspace root (see \
                 ../shared/upstream/README.md)",
                dir.join(file).display()
            );
        }
        let dir = dir.canonicalize().expect("canonical upstream path");
        check_python();
        dir
    })
    .clone()
}

/// python3 runs and imports numpy 2, or the test fails saying what to install. (With numpy 1
/// the original has no `np.bitwise_count` and scores exact set Jaccard instead of the bitmap
/// Jaccard Coral computes, so rankings would differ for a reason of the test machine's.)
fn check_python() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, numpy; print(numpy.__version__); \
             sys.exit(int(numpy.__version__.split('.')[0]) < 2)",
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 cannot be started ({e}): the interoperability tests run the original \
                 Python Coral and need Python 3 with numpy on PATH"
            )
        });
    let said = String::from_utf8_lossy(if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    })
    .lines()
    .last()
    .unwrap_or("")
    .to_string();
    assert!(
        out.status.success(),
        "python3 has no numpy 2, which the original Python Coral needs (python3 says: {said}); \
         install it with `python3 -m pip install numpy==2.1.3` (.ci/run does)"
    );
}

/// `tests/interop/driver.py`: our script that runs the original's API.
pub fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/driver.py")
}

/// Environment variables that would point either implementation elsewhere (another config,
/// data directory or LLM endpoint) than the test's directory.
pub const FOREIGN_ENV: &[&str] = &[
    "CORAL_CONFIG_PATH",
    "CORAL_DATA_DIR",
    "CORAL_LLM_BASE_URL",
    "CORAL_LLM_API_KEY",
    "CORAL_LLM_MODEL",
    "DEEPSEEK_BASE_URL",
    "DEEPSEEK_API_KEY",
];

/// The config both read: the original's default file (`fixtures/compat/coral_default_config.json`,
/// paths `memory_data/...`), with hash vectors, Coral on the original's ranking
/// (`retrieval.mode = "weighted"`), and `min_score` 0 so that every query fills its top 10.
pub fn shared_config() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_default_config.json"
    );
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    config["embedding"]["embedder"] = json!("hash");
    config["retrieval"]["mode"] = json!("weighted");
    config["retrieval"]["min_score"] = json!(0.0);
    config
}

/// One directory with `coral_config.json` and its `memory_data/`.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new(config: &Value) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("coral_config.json"),
            serde_json::to_string_pretty(config).unwrap(),
        )
        .unwrap();
        Workspace { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn config(&self) -> PathBuf {
        self.path().join("coral_config.json")
    }

    /// A second workspace holding a copy of this one's files, for a reader that must see
    /// exactly what the writer left (searches count hits, and opening may tidy files).
    pub fn copy(&self) -> Workspace {
        let other = tempfile::tempdir().unwrap();
        copy_tree(self.path(), other.path());
        Workspace { dir: other }
    }

    /// `driver.py ARGS` run by python3 in this directory (the original resolves its paths
    /// from there).
    pub fn python(&self, args: &[&str]) -> Command {
        let mut c = Command::new("python3");
        c.arg(driver())
            .args(args)
            .current_dir(self.path())
            .env("PYTHONPATH", upstream())
            // Nothing may be written beside the original (CI's copy of shared/ is read-only).
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in FOREIGN_ENV {
            c.env_remove(var);
        }
        c
    }

    /// Run the driver with `input` on stdin; its JSON lines.
    pub fn python_lines(&self, args: &[&str], input: &str) -> Vec<Value> {
        let out = feed(self.python(args), input);
        check(&out, &format!("driver.py {args:?}"));
        json_lines(&out.stdout)
    }

    /// `coral --config <this> -q ARGS`.
    pub fn coral(&self, args: &[&str]) -> Command {
        let mut c = Command::new(CORAL);
        c.arg("--config")
            .arg(self.config())
            .arg("-q")
            .args(args)
            .current_dir(self.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in FOREIGN_ENV {
            c.env_remove(var);
        }
        c
    }

    /// Run coral with `input` on stdin; its stdout, checked for success.
    pub fn coral_out(&self, args: &[&str], input: &str) -> Vec<u8> {
        let out = feed(self.coral(args), input);
        check(&out, &format!("coral {args:?}"));
        out.stdout
    }

    pub fn coral_json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.coral_out(&a, "");
        serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("coral {a:?}: {e}: {}", String::from_utf8_lossy(&out)))
    }
}

/// What one implementation holds in a directory: each memory's tier, and its vector count.
pub struct Holdings {
    /// item_id -> "hot", "warm" or "cold".
    pub ids: BTreeMap<String, String>,
    pub vectors: u64,
}

impl Holdings {
    pub fn has(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    pub fn count(&self, tier: &str) -> usize {
        self.ids.values().filter(|t| *t == tier).count()
    }

    /// `468 memories (hot 0 / warm 250 / cold 218), 468 vectors`.
    pub fn describe(&self) -> String {
        format!(
            "{} memories (hot {} / warm {} / cold {}), {} vectors",
            self.ids.len(),
            self.count("hot"),
            self.count("warm"),
            self.count("cold"),
            self.vectors
        )
    }
}

/// Every memory Coral holds in `ws`, by tier (`coral export`), and its vectors (`coral stats`).
pub fn coral_holdings(ws: &Workspace) -> Holdings {
    let ids = json_lines(&ws.coral_out(&["export"], ""))
        .iter()
        .map(|m| {
            (
                m["item_id"].as_str().unwrap().to_string(),
                m["tier"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let stats = ws.coral_json(&["stats"]);
    Holdings {
        ids,
        vectors: stats["stats"]["vectors"].as_u64().unwrap(),
    }
}

/// Every memory the original holds after opening `ws`, by tier, and its vectors.
pub fn original_holdings(ws: &Workspace) -> Holdings {
    let contents = ws.python_lines(&["contents"], "").remove(0);
    let mut ids = BTreeMap::new();
    for tier in ["hot", "warm", "cold"] {
        for id in contents[tier].as_array().unwrap() {
            ids.insert(id.as_str().unwrap().to_string(), tier.to_string());
        }
    }
    Holdings {
        ids,
        vectors: contents["vectors"].as_u64().unwrap(),
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

pub fn feed(mut command: Command, input: &str) -> Output {
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    // Written from a thread: a child that answers as it reads would otherwise fill its
    // stdout pipe while we still write.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// splitmix64: the corpus is the same on every run and machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const PEOPLE_EN: &[&str] = &[
    "Alice", "Bob", "Carol", "Dmitri", "Erin", "Farah", "Gustavo", "Hana", "Ivan", "Jun",
];
const VERBS_EN: &[&str] = &[
    "reviewed",
    "deployed",
    "rewrote",
    "benchmarked",
    "documented",
    "debugged",
    "migrated",
    "profiled",
    "archived",
    "tested",
    "planned",
    "cancelled",
];
const ADJ_EN: &[&str] = &[
    "slow",
    "flaky",
    "new",
    "legacy",
    "shared",
    "encrypted",
    "nightly",
    "regional",
    "critical",
];
const OBJECTS_EN: &[&str] = &[
    "cache layer",
    "billing service",
    "search index",
    "login page",
    "vector store",
    "backup job",
    "release notes",
    "payment API",
    "onboarding guide",
    "GPU cluster",
    "coffee machine",
    "travel budget",
];
const CONTEXTS_EN: &[&str] = &[
    "before the Friday release",
    "after the outage",
    "for the Berlin office",
    "during the sprint review",
    "with the data team",
    "on the staging cluster",
    "ahead of the audit",
    "for the mobile app",
    "while the customer waited",
];
const PEOPLE_ZH: &[&str] = &[
    "张伟", "李娜", "王芳", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴倩",
];
const TIMES_ZH: &[&str] = &[
    "周一",
    "周五下午",
    "上个月",
    "昨天晚上",
    "季度末",
    "发布前",
    "凌晨",
    "年底",
    "春节后",
];
const VERBS_ZH: &[&str] = &[
    "部署了",
    "重写了",
    "评审了",
    "测试了",
    "优化了",
    "迁移了",
    "修复了",
    "记录了",
    "取消了",
];
const OBJECTS_ZH: &[&str] = &[
    "缓存服务",
    "支付接口",
    "搜索索引",
    "登录页面",
    "向量数据库",
    "备份任务",
    "用户手册",
    "推荐模型",
    "监控告警",
    "数据管道",
    "咖啡订单",
    "差旅预算",
];
const RESULTS_ZH: &[&str] = &[
    "延迟下降了百分之",
    "错误率降到",
    "用户反馈很好，评分",
    "还需要再验证，预计",
    "客户很满意，续约",
    "成本节省了万元",
    "吞吐提升了倍数",
    "会议决定继续推进，排期",
];
const PREFS_ZH: &[&str] = &["冰镇拿铁", "热美式", "乌龙茶", "燕麦奶", "无糖可乐", "绿茶"];

/// One memory for a writer: its text and how long ago it was made and last used.
pub struct Memory {
    pub content: String,
    pub importance: f64,
    pub age_seconds: f64,
    pub idle_seconds: f64,
    pub access_count: u32,
}

/// `n` varied memories, English, Chinese and mixed: about a third younger than a day (the hot
/// tier's TTL), the rest up to 45 days old, so both writers' tier rules put some in each tier.
pub fn memories(seed: u64, n: usize) -> Vec<Memory> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|i| {
            let num = 1 + r.below(97);
            let content = match r.below(10) {
                0..=3 => format!(
                    "{} {} the {} {} {} (ticket {}-{num})",
                    r.pick(PEOPLE_EN),
                    r.pick(VERBS_EN),
                    r.pick(ADJ_EN),
                    r.pick(OBJECTS_EN),
                    r.pick(CONTEXTS_EN),
                    i
                ),
                4..=7 => format!(
                    "{}在{}{}{}，{}{num}。编号{i}",
                    r.pick(PEOPLE_ZH),
                    r.pick(TIMES_ZH),
                    r.pick(VERBS_ZH),
                    r.pick(OBJECTS_ZH),
                    r.pick(RESULTS_ZH)
                ),
                8 => format!(
                    "{}说 {} 的 latency 是 {num} ms，{}{}要{} #{i}",
                    r.pick(PEOPLE_ZH),
                    r.pick(OBJECTS_EN),
                    r.pick(TIMES_ZH),
                    r.pick(OBJECTS_ZH),
                    r.pick(VERBS_ZH).trim_end_matches('了')
                ),
                _ => format!(
                    "用户喜欢{}，{} prefers it {} ({i})",
                    r.pick(PREFS_ZH),
                    r.pick(PEOPLE_EN),
                    r.pick(CONTEXTS_EN)
                ),
            };
            let age_seconds = if r.below(3) == 0 {
                r.unit() * 20.0 * 3600.0
            } else {
                86_400.0 * (1.0 + r.unit() * 44.0)
            };
            let importance = [0.0, 0.0, 0.0, 0.3, 0.8, 1.0][r.below(6)];
            Memory {
                content,
                importance,
                age_seconds,
                idle_seconds: age_seconds * r.unit(),
                access_count: 1 + r.below(30) as u32,
            }
        })
        .collect()
}

/// About 30 queries: English, Chinese and mixed keywords, and verbatim texts of some of
/// the memories (whose own memory should rank first).
pub fn queries(memories: &[Memory]) -> Vec<String> {
    let mut q: Vec<String> = [
        "cache layer latency",
        "billing service outage",
        "Alice deployed",
        "vector store migrated",
        "release notes Friday",
        "GPU cluster benchmarked",
        "login page debugged",
        "nightly backup job",
        "缓存服务 延迟",
        "张伟 部署",
        "支付接口 错误率",
        "向量数据库 迁移",
        "用户手册",
        "推荐模型 优化",
        "季度末 成本 节省",
        "监控告警 凌晨",
        "李娜 cache layer",
        "latency 优化",
        "search index 评审",
        "Berlin office 客户",
        "用户喜欢冰镇拿铁",
        "coffee machine 咖啡订单",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let step = memories.len() / 8;
    q.extend((0..8).map(|i| memories[i * step + 3].content.clone()));
    q
}
