//! Finding the ONNX runtime library (`libonnxruntime.so`) and, with feature `onnx`, loading it.
//!
//! Looked for in order: `embedding.ort_library`, `$ORT_DYLIB_PATH`, the `onnxruntime` Python
//! package (asked of `python3`, then found by scanning the usual site-packages directories), and
//! the system library directories. The Python wheel ships only a versioned name
//! (`onnxruntime/capi/libonnxruntime.so.1.32.0`), so any `libonnxruntime.so*` counts.
//!
//! ort's own fallback, when nothing is configured, is to `dlopen("libonnxruntime.so")` and panic
//! if that fails; Coral therefore always resolves a path first and hands ort only a file that
//! exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Result};

/// Where to look for the runtime. [`RuntimeSearch::from_env`] fills it from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeSearch {
    /// `embedding.ort_library`: when set, the only place looked at.
    pub configured: Option<PathBuf>,
    /// `$ORT_DYLIB_PATH`: when set (and nothing is configured), the only place looked at.
    pub env: Option<PathBuf>,
    /// Ask `python3` where its `onnxruntime` package is.
    pub ask_python: bool,
    /// Directories scanned for `onnxruntime/capi/libonnxruntime.so*` (site-packages) and
    /// `libonnxruntime.so*` (library directories).
    pub scan: Vec<PathBuf>,
}

impl RuntimeSearch {
    /// `configured` (empty = none), `$ORT_DYLIB_PATH`, `python3`, and the usual directories.
    pub fn from_env(configured: Option<PathBuf>) -> RuntimeSearch {
        RuntimeSearch {
            configured: configured.filter(|p| !p.as_os_str().is_empty()),
            env: std::env::var_os("ORT_DYLIB_PATH")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            ask_python: true,
            scan: default_scan_dirs(),
        }
    }

    /// Only the given library (used by tests and when the caller knows the file).
    pub fn exactly(path: impl Into<PathBuf>) -> RuntimeSearch {
        RuntimeSearch {
            configured: Some(path.into()),
            ..RuntimeSearch::default()
        }
    }
}

/// What to do when no runtime is found, appended to every runtime error.
pub const RUNTIME_FIX: &str = "install it with `pip install onnxruntime` (any version from 1.17), \
     or set embedding.ort_library (or ORT_DYLIB_PATH) to the path of libonnxruntime.so";

/// The runtime library to load, or an error naming every place looked at and the fix.
pub fn find_runtime(search: &RuntimeSearch) -> Result<PathBuf> {
    for (what, path) in [
        ("embedding.ort_library", &search.configured),
        ("ORT_DYLIB_PATH", &search.env),
    ] {
        if let Some(path) = path {
            return if path.is_file() {
                Ok(path.clone())
            } else {
                Err(Error::Runtime {
                    detail: format!(
                        "{what} is {} but there is no such file; {RUNTIME_FIX}",
                        path.display()
                    ),
                })
            };
        }
    }
    let mut looked = vec![
        "embedding.ort_library (not set)".to_string(),
        "ORT_DYLIB_PATH (not set)".to_string(),
    ];
    if search.ask_python {
        match python_package_dir() {
            Some(dir) => {
                if let Some(lib) = library_in(&dir.join("capi")) {
                    return Ok(lib);
                }
                looked.push(format!(
                    "the onnxruntime Python package at {} (no capi/libonnxruntime.so*)",
                    dir.display()
                ));
            }
            None => looked.push("python3 (no onnxruntime package)".to_string()),
        }
    }
    for dir in &search.scan {
        for candidate in [dir.join("onnxruntime/capi"), dir.clone()] {
            if let Some(lib) = library_in(&candidate) {
                return Ok(lib);
            }
        }
    }
    if !search.scan.is_empty() {
        looked.push(format!(
            "{} (site-packages and library directories)",
            search
                .scan
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Err(Error::Runtime {
        detail: format!(
            "libonnxruntime was not found; looked at {}; {RUNTIME_FIX}",
            looked.join(", ")
        ),
    })
}

/// The newest `libonnxruntime.so*` (or `.dylib`) in `dir`, if any.
pub fn library_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let rest = name.strip_prefix("libonnxruntime.")?;
            let version = if let Some(v) = rest.strip_prefix("so") {
                v.trim_start_matches('.')
            } else {
                rest.strip_suffix("dylib")?.trim_end_matches('.')
            };
            let key = version
                .split('.')
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>();
            entry.path().is_file().then(|| (key, entry.path()))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

/// The `onnxruntime` package directory of `python3` (without importing it, which would load
/// the library).
fn python_package_dir() -> Option<PathBuf> {
    let python = std::env::var_os("VIRTUAL_ENV")
        .map(|v| PathBuf::from(v).join("bin/python"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"));
    let out = Command::new(python)
        .args([
            "-c",
            "import importlib.util as u\n\
             s = u.find_spec('onnxruntime')\n\
             print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    let dir = dir.trim();
    (out.status.success() && !dir.is_empty()).then(|| PathBuf::from(dir))
}

/// site-packages of virtualenvs, the user and the system, then the system library directories.
fn default_scan_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV") {
        roots.push(PathBuf::from(v).join("lib"));
    }
    if let Some(h) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(h).join(".local/lib"));
    }
    roots.extend(["/usr/local/lib", "/usr/lib"].map(PathBuf::from));
    let mut out = Vec::new();
    for root in roots {
        let mut pythons: Vec<PathBuf> = std::fs::read_dir(&root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for p in pythons.into_iter().rev() {
            for sub in ["site-packages", "dist-packages"] {
                if p.join(sub).is_dir() {
                    out.push(p.join(sub));
                }
            }
        }
    }
    for lib in ["/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib"] {
        out.push(PathBuf::from(lib));
    }
    out
}

#[cfg(any(feature = "onnx", feature = "onnx-download"))]
pub(crate) use load::environment;

#[cfg(any(feature = "onnx", feature = "onnx-download"))]
mod load {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use ort::environment::Environment;

    use super::{RUNTIME_FIX, RuntimeSearch};
    use crate::{Error, Result};

    /// The process's one ONNX runtime environment and the library it came from. ort allows one
    /// library and one environment per process; only a success is remembered, so a failed load
    /// can be retried with another path.
    static LOADED: Mutex<Option<(Option<PathBuf>, Environment)>> = Mutex::new(None);

    /// The runtime environment, loading the library on first use. Returns the library path
    /// actually in use (`None` when the runtime is linked in).
    pub(crate) fn environment(search: &RuntimeSearch) -> Result<(Environment, Option<PathBuf>)> {
        // Resolve the path even when a runtime is loaded, so that a wrong setting is reported
        // the same way whatever ran before in this process.
        let path = find(search)?;
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((path, env)) = loaded.as_ref() {
            return Ok((env.clone(), path.clone()));
        }
        let (env, path) = build(path)?;
        *loaded = Some((path.clone(), env.clone()));
        Ok((env, path))
    }

    #[cfg(feature = "onnx")]
    fn find(search: &RuntimeSearch) -> Result<PathBuf> {
        super::find_runtime(search)
    }

    #[cfg(not(feature = "onnx"))]
    fn find(_: &RuntimeSearch) -> Result<()> {
        Ok(())
    }

    #[cfg(feature = "onnx")]
    fn build(path: PathBuf) -> Result<(Environment, Option<PathBuf>)> {
        let env = guarded(&path, || {
            ort::init_from(&path)
                .map_err(|e| e.to_string())?
                .with_name("coral")
                .build()
                .map_err(|e| e.to_string())
        })?;
        Ok((env, Some(path)))
    }

    #[cfg(not(feature = "onnx"))]
    fn build(_: ()) -> Result<(Environment, Option<PathBuf>)> {
        let env = guarded(Path::new("the linked-in runtime"), || {
            ort::init()
                .with_name("coral")
                .build()
                .map_err(|e| e.to_string())
        })?;
        Ok((env, None))
    }

    /// Runs `f`, turning an error or a panic inside ort into a runtime error naming `path`.
    fn guarded(
        path: &Path,
        f: impl FnOnce() -> std::result::Result<Environment, String>,
    ) -> Result<Environment> {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let detail = match outcome {
            Ok(Ok(env)) => return Ok(env),
            Ok(Err(e)) => e,
            Err(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the runtime panicked while loading".into()),
        };
        Err(Error::Runtime {
            detail: format!(
                "cannot load {}: {detail}; it must be ONNX Runtime 1.17 or later for this \
                 machine; {RUNTIME_FIX}",
                path.display()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_path_is_the_only_place_looked_at() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("libonnxruntime.so.1.20.0");
        std::fs::write(&lib, b"not really").unwrap();
        assert_eq!(find_runtime(&RuntimeSearch::exactly(&lib)).unwrap(), lib);
        let missing = tmp.path().join("nope.so");
        let msg = find_runtime(&RuntimeSearch::exactly(&missing))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("embedding.ort_library is"), "{msg}");
        assert!(msg.contains("nope.so"), "{msg}");
        assert!(msg.contains("pip install onnxruntime"), "{msg}");
        let env = RuntimeSearch {
            env: Some(missing),
            ..RuntimeSearch::default()
        };
        assert!(
            find_runtime(&env)
                .unwrap_err()
                .to_string()
                .contains("ORT_DYLIB_PATH is")
        );
    }

    #[test]
    fn scans_site_packages_for_the_versioned_wheel_library() {
        let tmp = tempfile::tempdir().unwrap();
        let capi = tmp.path().join("site-packages/onnxruntime/capi");
        std::fs::create_dir_all(&capi).unwrap();
        for f in [
            "libonnxruntime_providers_shared.so",
            "libonnxruntime.so.1.9.0",
            "libonnxruntime.so.1.32.0",
        ] {
            std::fs::write(capi.join(f), b"x").unwrap();
        }
        let search = RuntimeSearch {
            scan: vec![tmp.path().join("empty"), tmp.path().join("site-packages")],
            ..RuntimeSearch::default()
        };
        assert_eq!(
            find_runtime(&search).unwrap(),
            capi.join("libonnxruntime.so.1.32.0")
        );
    }

    #[test]
    fn nothing_found_names_every_place_and_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let search = RuntimeSearch {
            scan: vec![tmp.path().to_path_buf()],
            ..RuntimeSearch::default()
        };
        let msg = find_runtime(&search).unwrap_err().to_string();
        for part in [
            "embedding.ort_library (not set)",
            "ORT_DYLIB_PATH (not set)",
            &tmp.path().display().to_string(),
            "pip install onnxruntime",
        ] {
            assert!(msg.contains(part), "{part:?} missing from {msg}");
        }
    }
}
