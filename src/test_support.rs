//! Helpers the unit tests of several modules share (test builds only).

use std::path::Path;

/// Write `content` to `root/relative`, creating the folders it needs.
pub(crate) fn write(root: &Path, relative: &str, content: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Write `text` to the file `path`, creating the folders it needs.
pub(crate) fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
