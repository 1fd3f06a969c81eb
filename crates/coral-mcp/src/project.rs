//! The project a call belongs to when it names none (docs/servers.md, "Projects"): none, a
//! name the operator gave, or `auto`, the workspace the client works in.
//!
//! With `auto` the workspace is the client's first `file://` MCP root, else the directory the
//! client launched the server (or ran the hook) in; either way the enclosing git work tree's
//! root when there is one. Its name is the directory's base name, a dash and the first 8 hex
//! digits of the SHA-256 of its canonical absolute path (`shop-1a2b3c4d`), so the same
//! directory always gets the same name and two `app/` directories get different ones. The
//! home directory and `/` are no workspace: memories made there stay shared (a client that
//! starts its server in `$HOME` would otherwise file everything under one "project").

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The project a server or hook applies to calls that name none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ProjectScope {
    /// None: memories are shared, searches prefer nothing.
    #[default]
    None,
    /// This project.
    Named(String),
    /// The client's workspace; `launch` is the one of the directory the server started in,
    /// used until (or unless) the client's roots name another.
    Auto {
        /// The launch directory's project.
        launch: Option<String>,
    },
}

impl ProjectScope {
    /// The scope `value` names (`--project`, `memory.project`): `""` none, `"auto"` the
    /// workspace of `launch_dir`, else that name.
    pub fn parse(value: &str, launch_dir: &Path) -> Result<ProjectScope, String> {
        match value {
            "" => Ok(ProjectScope::None),
            "auto" => Ok(ProjectScope::Auto {
                launch: project_for_dir(launch_dir),
            }),
            name => {
                check_name(name)?;
                Ok(ProjectScope::Named(name.to_string()))
            }
        }
    }

    /// The project of a call that names none, before any client roots are known.
    pub fn default_project(&self) -> Option<&str> {
        match self {
            ProjectScope::None => None,
            ProjectScope::Named(n) => Some(n),
            ProjectScope::Auto { launch } => launch.as_deref(),
        }
    }

    /// Whether the client's roots decide.
    pub fn is_auto(&self) -> bool {
        matches!(self, ProjectScope::Auto { .. })
    }
}

/// A project name as a tag: at most 256 bytes, no control characters, no surrounding spaces.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 256
        || name.trim() != name
        || name.chars().any(char::is_control)
    {
        return Err(format!(
            "project {} must be \"auto\" or a name of 1 to 256 bytes without control \
             characters or surrounding spaces",
            coral::echo(name)
        ));
    }
    Ok(())
}

/// The project of the workspace `dir` is in: its git work tree's root, else `dir` itself;
/// `None` for the home directory and `/`.
pub fn project_for_dir(dir: &Path) -> Option<String> {
    let dir = canonical(dir);
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| canonical(Path::new(&h)));
    let root = git_root(&dir)
        // A dotfiles repository in the home directory is no project of everything under it.
        .filter(|r| Some(r) != home.as_ref())
        .unwrap_or(dir);
    if root.parent().is_none() || Some(&root) == home.as_ref() {
        return None;
    }
    Some(name_for(&root))
}

/// The project of an MCP root's URI (`file:///home/u/shop`); `None` for other schemes.
pub fn project_for_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/path` and `file:///path` name the same file.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let decoded = percent_decode(path)?;
    project_for_dir(Path::new(&decoded))
}

/// `dir`'s base name (spaces and controls as `-`, at most 64 characters), a dash and the first
/// 8 hex digits of the SHA-256 of its path.
pub fn name_for(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let base: String = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '-'
            } else {
                c
            }
        })
        .take(64)
        .collect();
    let digest = Sha256::digest(dir.as_os_str().as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{base}-{hex}")
}

/// The nearest directory from `dir` up that holds `.git` (a directory, or a file in a linked
/// work tree or a submodule).
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// `path` with symbolic links resolved when it exists, else as given but absolute.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(path))
                .unwrap_or_else(|_| path.to_path_buf())
        }
    })
}

/// `%XX` escapes decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_gets_a_stable_name_that_tells_two_apps_apart() {
        let a = name_for(Path::new("/home/u/work/app"));
        let b = name_for(Path::new("/home/u/play/app"));
        assert!(a.starts_with("app-") && b.starts_with("app-"), "{a} {b}");
        assert_eq!(a.len(), "app-".len() + 8);
        assert_ne!(a, b);
        assert_eq!(a, name_for(Path::new("/home/u/work/app")));
        assert!(name_for(Path::new("/x/my app\n")).starts_with("my-app--"));
    }

    #[test]
    fn the_git_root_is_the_workspace_and_uris_are_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("my shop");
        let deep = repo.join("src/menu");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        let expected = name_for(&std::fs::canonicalize(&repo).unwrap());
        assert!(expected.starts_with("my-shop-"), "{expected}");
        assert_eq!(project_for_dir(&deep).as_deref(), Some(expected.as_str()));
        assert_eq!(project_for_dir(&repo).as_deref(), Some(expected.as_str()));
        let uri = format!(
            "file://{}",
            std::fs::canonicalize(&repo)
                .unwrap()
                .display()
                .to_string()
                .replace(' ', "%20")
        );
        assert_eq!(project_for_uri(&uri).as_deref(), Some(expected.as_str()));
        // Without a repository, the directory itself.
        let plain = dir.path().join("notes");
        std::fs::create_dir(&plain).unwrap();
        assert_eq!(
            project_for_dir(&plain),
            Some(name_for(&std::fs::canonicalize(&plain).unwrap()))
        );
        assert_eq!(project_for_uri("https://example.com/x"), None);
        assert_eq!(project_for_uri("file://%zz"), None);
        assert_eq!(project_for_dir(Path::new("/")), None);
    }

    #[test]
    fn scopes_parse_and_bad_names_are_refused() {
        let here = Path::new("/");
        assert_eq!(ProjectScope::parse("", here).unwrap(), ProjectScope::None);
        assert_eq!(
            ProjectScope::parse("shop", here).unwrap().default_project(),
            Some("shop")
        );
        assert!(ProjectScope::parse("auto", here).unwrap().is_auto());
        for bad in [" shop", "a\nb", &"x".repeat(300)] {
            let e = ProjectScope::parse(bad, here).unwrap_err();
            assert!(e.contains("must be \"auto\" or a name"), "{e}");
        }
    }
}
