//! Trial folders reused per job slot: instead of creating and deleting a folder tree for every
//! trial that needs a file system, a run keeps one folder per job slot and, before each trial,
//! brings it back to exactly the trial's staged state.
//!
//! The staged state is a [`Layout`]: every path the trial folder must hold (its [`OWNER_FILE`],
//! `home/`, `workspace/`, the arm's skills under the skills folder, the case's files) and what
//! each is (a folder, a copy of a source file, given bytes). [`sync`] walks what the folder
//! holds without following symbolic links: anything the layout does not name is removed
//! (whatever its kind or permissions: read-only files and folders, symbolic links, fifos, hard
//! links), a staged file is kept only when it is still a regular file with one link, the
//! source's permissions and the source's bytes, a staged folder gets its permissions back; then
//! whatever is missing is created. Unchanged skills are not copied again, so a trial costs a
//! walk and a few reads instead of a tree of creates and deletes.
//!
//! A slot that cannot be brought back (an entry that cannot be removed) is thrown away and a
//! fresh folder takes its place. Slots live under the same prefix and hold the same owner file
//! as fresh trial folders, so `run --resume` removes those a killed run left behind.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What one path of a trial folder must be.
#[derive(Debug, Clone)]
pub(super) enum Want {
    /// A folder.
    Dir,
    /// A copy of `source`: `len` bytes with permission bits `mode` (as `std::fs::copy` leaves
    /// them).
    File {
        source: PathBuf,
        len: u64,
        mode: u32,
    },
    /// A file holding these bytes.
    Bytes(Arc<[u8]>),
}

/// A trial folder's staged state: relative path → what it must be. Ordered so that a folder
/// comes before what it holds.
pub(super) type Layout = BTreeMap<PathBuf, Want>;

/// Why a layout could not be built: two entries disagree (a file where a folder must be).
#[derive(Debug)]
pub(super) struct LayoutConflict(pub PathBuf);

/// Add `rel` as `want`, with every folder above it; a file over a folder (or a folder over a
/// file) is a conflict, as copying would be.
pub(super) fn put(layout: &mut Layout, rel: &Path, want: Want) -> Result<(), LayoutConflict> {
    for ancestor in rel.ancestors().skip(1) {
        if ancestor.as_os_str().is_empty() {
            break;
        }
        match layout.get(ancestor) {
            Some(Want::Dir) => {}
            Some(_) => return Err(LayoutConflict(ancestor.to_path_buf())),
            None => {
                layout.insert(ancestor.to_path_buf(), Want::Dir);
            }
        }
    }
    match (layout.get(rel), &want) {
        (Some(Want::Dir), Want::Dir) => Ok(()),
        (Some(Want::Dir), _) => Err(LayoutConflict(rel.to_path_buf())),
        (Some(_), Want::Dir) => Err(LayoutConflict(rel.to_path_buf())),
        _ => {
            layout.insert(rel.to_path_buf(), want);
            Ok(())
        }
    }
}

/// One reusable trial folder. Dropping it removes the folder (whatever the agent left there).
#[derive(Debug)]
pub(super) struct Slot {
    /// The folder; empty once kept.
    root: PathBuf,
    /// Permission bits of a folder created here (the umask's), restored on staged folders.
    dir_mode: u32,
    /// Permission bits of the slot's own folder.
    root_mode: u32,
}

impl Slot {
    /// A slot in a fresh folder (`root`, already created; owned from now on).
    pub(super) fn new(root: PathBuf) -> io::Result<Self> {
        let root_mode = std::fs::symlink_metadata(&root)?.mode() & 0o7777;
        let mut slot = Slot {
            root,
            dir_mode: 0o755,
            root_mode,
        };
        // The mode `create_dir` gives under this process's umask.
        let probe = slot.root.join("workspace");
        std::fs::create_dir(&probe)?;
        slot.dir_mode = std::fs::symlink_metadata(&probe)?.mode() & 0o7777;
        Ok(slot)
    }

    /// The slot's folder.
    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// Keep the folder after the slot is gone; returns its path.
    pub(super) fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.root)
    }

    /// Bring the folder to exactly `layout` (see the module comment).
    pub(super) fn sync(&self, layout: &Layout) -> io::Result<()> {
        restore_mode(&self.root, self.root_mode)?;
        let mut present: HashSet<&Path> = HashSet::with_capacity(layout.len());
        prune(
            &self.root,
            Path::new(""),
            layout,
            self.dir_mode,
            &mut present,
        )?;
        for (rel, want) in layout {
            if present.contains(rel.as_path()) {
                continue;
            }
            let path = self.root.join(rel);
            match want {
                Want::Dir => std::fs::create_dir(&path)?,
                Want::File { source, .. } => {
                    crate::disk::copy(source, &path).map_err(crate::disk::DiskError::into_io)?;
                }
                Want::Bytes(bytes) => {
                    crate::disk::write(&path, bytes).map_err(crate::disk::DiskError::into_io)?
                }
            }
        }
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.root.as_os_str().is_empty() {
            let _ = remove_dir_forced(&self.root);
        }
    }
}

/// Remove from `dir` (at `rel` in the layout) whatever the layout does not hold as it is, and
/// note in `present` what stays.
fn prune<'a>(
    dir: &Path,
    rel: &Path,
    layout: &'a Layout,
    dir_mode: u32,
    present: &mut HashSet<&'a Path>,
) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let child = rel.join(entry.file_name());
        // Never follows a symbolic link.
        let metadata = entry.metadata()?;
        let kept = match layout.get_key_value(&child) {
            Some((key, Want::Dir)) if metadata.is_dir() => {
                restore_mode(&path, dir_mode)?;
                prune(&path, &child, layout, dir_mode, present)?;
                Some(key)
            }
            Some((key, Want::File { source, len, mode }))
                if staged_copy(&metadata, *len, *mode)
                    && std::fs::read(&path)? == std::fs::read(source)? =>
            {
                Some(key)
            }
            Some((key, Want::Bytes(bytes)))
                if staged_copy(&metadata, bytes.len() as u64, metadata.mode() & 0o7777)
                    && std::fs::read(&path)?.as_slice() == &bytes[..] =>
            {
                Some(key)
            }
            _ => None,
        };
        match kept {
            Some(key) => {
                present.insert(key.as_path());
            }
            None if metadata.is_dir() => remove_dir_forced(&path)?,
            None => std::fs::remove_file(&path)?,
        }
    }
    Ok(())
}

/// Whether an entry can still be the staged copy: a regular file with one link (a hard link
/// elsewhere could change it later), the length and the permission bits staging gave it.
fn staged_copy(metadata: &std::fs::Metadata, len: u64, mode: u32) -> bool {
    metadata.is_file()
        && metadata.nlink() == 1
        && metadata.len() == len
        && metadata.mode() & 0o7777 == mode
}

/// Give a folder back its permission bits (the agent may have made it read-only).
fn restore_mode(path: &Path, mode: u32) -> io::Result<()> {
    let metadata = std::fs::symlink_metadata(path)?;
    if metadata.mode() & 0o7777 != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Remove a folder and everything in it, making read-only folders writable first when a plain
/// removal is refused. Never follows a symbolic link.
pub(super) fn remove_dir_forced(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(path);
            std::fs::remove_dir_all(path)
        }
    }
}

/// Owner read/write/search on `path` and every folder under it (best effort).
fn make_writable(path: &Path) {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !metadata.is_dir() {
        return;
    }
    let _ = std::fs::set_permissions(
        path,
        std::fs::Permissions::from_mode(metadata.mode() & 0o7777 | 0o700),
    );
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

/// The run's free trial folders, one per job slot at most: a trial takes one (or gets a fresh
/// one) and gives it back when it ends. Dropping the pool (or [`SlotPool::clear`]) removes the
/// free folders.
///
/// The environment variable [`FRESH_FOLDERS_VARIABLE`] set to `1` turns reuse off: every trial
/// gets a fresh folder, removed when it ends (what runs did before slots; for benchmarks and
/// for ruling reuse out when a trial behaves oddly).
#[derive(Debug, Default)]
pub(crate) struct SlotPool {
    free: Mutex<Vec<Slot>>,
    fresh: std::sync::OnceLock<bool>,
}

/// The environment variable that turns folder reuse off (`1`).
pub(super) const FRESH_FOLDERS_VARIABLE: &str = "SKILL_LIFT_FRESH_TRIAL_FOLDERS";

impl SlotPool {
    /// Whether every trial gets a fresh folder ([`FRESH_FOLDERS_VARIABLE`]).
    fn fresh(&self) -> bool {
        *self
            .fresh
            .get_or_init(|| std::env::var_os(FRESH_FOLDERS_VARIABLE).is_some_and(|v| v == "1"))
    }

    /// A free slot, if any.
    pub(super) fn take(&self) -> Option<Slot> {
        if self.fresh() {
            return None;
        }
        self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Give a slot back for the next trial (or remove it, when reuse is off).
    pub(super) fn give_back(&self, slot: Slot) {
        if self.fresh() {
            return drop(slot);
        }
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(slot);
    }

    /// Remove every free slot's folder (at the end of a run; a slot given back later is
    /// removed when the pool is dropped).
    pub(crate) fn clear(&self) {
        let slots = std::mem::take(&mut *self.free.lock().unwrap_or_else(|e| e.into_inner()));
        drop(slots);
    }

    /// How many folders the pool holds free.
    #[cfg(test)]
    pub(crate) fn free_slots(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A slot lent to one trial: given back to its pool when the trial's [`super::StagedTrial`]
/// is dropped, unless kept.
#[derive(Debug)]
pub(super) struct Lease {
    pub(super) slot: Option<Slot>,
    pub(super) pool: Arc<SlotPool>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.pool.give_back(slot);
        }
    }
}
