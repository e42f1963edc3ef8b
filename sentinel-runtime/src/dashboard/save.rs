//! Saving the rules file without following anyone's symlink: the new copy is created with
//! `O_CREAT | O_EXCL` (a planted file or link at its name fails the create, never redirects
//! it) under an unpredictable name, in the directory of the file the path resolves to (so a
//! symlinked rules file, as a ConfigMap mounts it, stays a link and its target is replaced),
//! synced, then renamed over the target and the directory synced. Copies left by a process
//! killed mid-save are removed at start.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The prefix and suffix of our temporary copies: `.NAME.dashboard-<random>.tmp` (older
/// versions used the process id in place of the random part; those are ours too).
fn temp_affixes(target: &Path) -> Option<(OsString, &'static str)> {
    let name = target.file_name()?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".dashboard-");
    Some((prefix, ".tmp"))
}

/// The file `path` names, through any symlinks (also a link whose file is not there yet: the
/// first save creates that file and the link stays), with its directory resolved.
pub(crate) fn target(path: &Path) -> PathBuf {
    let mut p = path.to_owned();
    // As the kernel does, give up after 40 links (a loop).
    for _ in 0..40 {
        let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        let Some(next) = is_link.then(|| std::fs::read_link(&p).ok()).flatten() else {
            break;
        };
        // Relative to the link's directory (an absolute target replaces it).
        p = match p.parent() {
            Some(dir) => dir.join(next),
            None => next,
        };
    }
    match (p.parent(), p.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or(p),
        _ => p,
    }
}

/// Removes the temporary copies of `path`'s target that a save interrupted left behind.
pub(crate) fn remove_stale(path: &Path) {
    let target = target(path);
    let (Some(dir), Some((prefix, suffix))) = (target.parent(), temp_affixes(&target)) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let (prefix, suffix) = (prefix.as_encoded_bytes(), suffix.as_bytes());
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        if name.len() > prefix.len() + suffix.len()
            && name.starts_with(prefix)
            && name.ends_with(suffix)
            // Only files (or links) of our own making: never a directory.
            && entry.file_type().is_ok_and(|t| !t.is_dir())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A new copy written and synced beside the target, not yet in place.
pub(crate) struct Staged {
    tmp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Staged {
    /// Writes `text` to a new temporary file beside `path`'s target.
    pub(crate) fn write(path: &Path, text: &str) -> Result<Staged, String> {
        let target = target(path);
        let (prefix, suffix) =
            temp_affixes(&target).ok_or_else(|| format!("{} names no file", path.display()))?;
        let random = super::auth::random_token()
            .map_err(|e| format!("cannot name a temporary file: {e}"))?;
        let mut name = prefix;
        name.push(&random[..32]);
        name.push(suffix);
        let tmp = target.with_file_name(name);
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create_new(true);
        let existing = std::fs::metadata(&target).ok();
        #[cfg(unix)]
        if existing.is_some() {
            use std::os::unix::fs::OpenOptionsExt;
            // Owner only until it is complete; the target's permissions are copied below.
            // (A new file gets the default mode under the umask, as `File::create` gives.)
            open.mode(0o600);
        }
        let mut file = open
            .open(&tmp)
            .map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
        let staged = Staged {
            tmp,
            target,
            committed: false,
        };
        let written = (|| {
            if let Some(meta) = &existing {
                file.set_permissions(meta.permissions())?;
            }
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })();
        match written {
            Ok(()) => Ok(staged),
            Err(e) => Err(format!("cannot write {}: {e}", staged.tmp.display())),
        }
    }

    /// Renames the copy over the target and syncs the directory; the copy is removed if that
    /// fails.
    pub(crate) fn commit(mut self) -> Result<(), String> {
        let result = std::fs::rename(&self.tmp, &self.target)
            .map_err(|e| format!("{} was not written: {e}", self.target.display()));
        if result.is_ok() {
            #[cfg(unix)]
            if let Some(dir) = self.target.parent()
                && let Ok(dir) = std::fs::File::open(dir)
            {
                let _ = dir.sync_all();
            }
            self.committed = true;
        }
        result
    }
}

impl Drop for Staged {
    /// Not committed: the copy goes.
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sentinel-save-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn copies_have_unpredictable_names_and_a_dropped_one_is_removed() {
        let d = dir("names");
        let file = d.join("rules.json");
        let a = Staged::write(&file, "{}").unwrap();
        let b = Staged::write(&file, "{}").unwrap();
        assert_ne!(a.tmp, b.tmp);
        drop(a);
        b.commit().unwrap();
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("rules.json")]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_file_not_there_yet_stays_a_link() {
        let d = dir("dangling");
        std::fs::create_dir_all(d.join("data")).unwrap();
        let link = d.join("rules.json");
        std::os::unix::fs::symlink("data/rules.json", &link).unwrap();
        Staged::write(&link, "{}").unwrap().commit().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(d.join("data/rules.json")).unwrap(),
            "{}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
