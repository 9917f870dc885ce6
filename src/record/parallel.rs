//! Reading `trials.jsonl` as [`TrialView`]s on several threads, visited in file order.
//!
//! One thread reads the file in blocks of whole lines; worker threads decode the blocks (block
//! `i` goes to worker `i mod W`, so each worker's results arrive in file order) and check each
//! record; the calling thread visits the decoded records block after block, in file order. A
//! block's views borrow from the block's bytes ([`yoke::Yoke`] keeps them together across the
//! threads). A visited block goes back to the worker that decoded it, which drops its views
//! (what a thread allocates, it frees: freeing another thread's memory contends for the
//! allocator's locks) and hands its buffer and the room of its views back to the reader; a
//! fixed number of buffers circulates, which bounds the memory.
//!
//! What the caller sees is what [`super::for_each_line_in_blocks`] gives for
//! [`super::ViewRecord`]: the same records with the same line numbers, the same torn-line rule,
//! the same first error; and it stops (`None`) before a block holding a record that `stop`
//! holds.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};

use yoke::{Yoke, Yokeable};

use super::{LineDecoding, RecordError, TrialView, ViewRecord, io};

/// One block's lines, decoded by a worker: the views of its records (each with its line number
/// counted from the block's first line, 1-based), up to the first refused line.
#[derive(Yokeable)]
struct DecodedBlock<'block> {
    /// Bytes of whole lines in the block (the block's buffer may be longer).
    whole: usize,
    /// Lines in the block (blank ones included); counted up to the refused line, if any.
    lines: usize,
    /// Whether the block holds a record the caller's `stop` holds (the block is not visited).
    stopped: bool,
    /// The records, in file order.
    views: Vec<(usize, TrialView<'block>)>,
    /// The first refused line: its number in the block and why (decoder or `check` message).
    refused: Option<(usize, String)>,
}

/// A decoded block with the buffer its views borrow from.
type Decoded = Yoke<DecodedBlock<'static>, Vec<u8>>;

/// Room for a block's views, empty (kept from block to block: a block's views are large, and
/// allocating them afresh for each block costs more than decoding them).
type Views = Vec<(usize, TrialView<'static>)>;

/// A buffer to read a block into, with room for its views.
type Free = (Vec<u8>, Views);

/// What a worker is given.
enum Work {
    /// A block read: its buffer, the length of the whole lines at its start, room for its views.
    Block(Vec<u8>, usize, Views),
    /// The file could not be read further: handed on in place of the next block.
    Failed(RecordError),
    /// The file has no further block: handed on in place of the next block.
    End,
    /// A block the caller has visited, to free.
    Visited(Decoded),
    /// The caller is done: stop.
    Stop,
}

/// What a worker hands the caller, in file order: a decoded block, the error in its place, or
/// `None` after the last block.
type Handed = Result<Option<Decoded>, RecordError>;

/// Decode the records of `path` as [`TrialView`]s with `workers` decoding threads, reading
/// `block_bytes` at a time (grown for a longer line). Each record is checked by `check` (a
/// message refuses it, as a decoder error would) and handed to `visit` in file order with its
/// 1-based line number. Returns the byte length of the whole lines, or `None` (nothing of its
/// block or after it visited) at the first record that `stop` holds.
pub(super) fn for_each_view<Check, Visit>(
    path: &Path,
    block_bytes: usize,
    workers: usize,
    stop: impl Fn(&TrialView<'_>) -> bool + Sync,
    check: Check,
    mut visit: Visit,
) -> Result<Option<u64>, RecordError>
where
    Check: Fn(&TrialView<'_>) -> Option<String> + Sync,
    Visit: FnMut(usize, &TrialView<'_>) -> Result<(), RecordError>,
{
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Some(0)),
        Err(error) => return Err(io(path)(error)),
    };
    let workers = workers.max(1);
    let block_bytes = block_bytes.max(1);
    std::thread::scope(|scope| {
        // Two buffers per worker keep every thread busy.
        let (free_sender, free_buffers) = channel::<Free>();
        for _ in 0..2 * workers + 1 {
            free_sender
                .send((Vec::new(), Vec::new()))
                .expect("receiver alive");
        }
        let mut to_workers = Vec::with_capacity(workers);
        let mut from_workers = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (work_sender, work) = channel::<Work>();
            let (handed_sender, handed) = channel::<Handed>();
            to_workers.push(work_sender);
            from_workers.push(handed);
            let (stop, check, free_sender) = (&stop, &check, free_sender.clone());
            scope.spawn(move || decode_blocks(work, handed_sender, free_sender, stop, check));
        }
        // The workers hold the only senders of free buffers: the reader ends when they do.
        drop(free_sender);
        let reader_to_workers = to_workers.clone();
        scope.spawn(move || read_blocks(path, file, block_bytes, free_buffers, reader_to_workers));
        // However the visiting ends, the workers stop (and then the reader).
        let _stop_workers = StopOnDrop(&to_workers);

        let mut lines_before = 0;
        let mut valid_len = 0u64;
        for index in 0.. {
            let worker = index % workers;
            let Some(decoded) = from_workers[worker]
                .recv()
                .expect("a worker hands on every block")?
            else {
                break;
            };
            let block = decoded.get();
            if block.stopped {
                return Ok(None);
            }
            for (line, view) in &block.views {
                visit(lines_before + line, view)?;
            }
            if let Some((line, message)) = &block.refused {
                return Err(RecordError::BadRecord {
                    path: path.to_path_buf(),
                    line: lines_before + line,
                    message: message.clone(),
                });
            }
            lines_before += block.lines;
            valid_len += block.whole as u64;
            let _ = to_workers[worker].send(Work::Visited(decoded));
        }
        Ok(Some(valid_len))
    })
}

/// Tells every worker to stop when dropped.
struct StopOnDrop<'a>(&'a [Sender<Work>]);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        for worker in self.0 {
            let _ = worker.send(Work::Stop);
        }
    }
}

/// The reader: fills buffers from `free_buffers` with whole lines (the start of an unfinished
/// line carried to the next buffer) and hands block `i` to worker `i mod W`. A line without its
/// newline at the end of the file (torn by a crash) is left out. Ends at the end of the file
/// ([`Work::End`] in place of the next block), on a read error ([`Work::Failed`]) or when no
/// free buffer will come.
fn read_blocks(
    path: &Path,
    mut file: File,
    block_bytes: usize,
    free_buffers: Receiver<Free>,
    to_workers: Vec<Sender<Work>>,
) {
    let mut carried: Vec<u8> = Vec::new();
    for index in 0.. {
        let to_worker = &to_workers[index % to_workers.len()];
        let Ok((mut buffer, views)) = free_buffers.recv() else {
            return;
        };
        let size = block_bytes.max(carried.len() * 2);
        if buffer.len() < size {
            buffer.resize(size, 0);
        }
        buffer[..carried.len()].copy_from_slice(&carried);
        let mut filled = carried.len();
        let mut scanned = filled;
        let mut at_end;
        let whole = loop {
            if filled == buffer.len() {
                // One line longer than the buffer: make room for the rest of it.
                buffer.resize(buffer.len() * 2, 0);
            }
            let read = match std::io::Read::read(&mut file, &mut buffer[filled..]) {
                Ok(read) => read,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = to_worker.send(Work::Failed(io(path)(e)));
                    return;
                }
            };
            filled += read;
            at_end = read == 0;
            // Read until the buffer is full (or the file ends), then cut after the last newline.
            if filled < buffer.len() && !at_end {
                continue;
            }
            match memchr::memrchr(b'\n', &buffer[scanned..filled]) {
                Some(last_newline) => break scanned + last_newline + 1,
                // End of file: what is left (if anything) is a torn line.
                None if at_end => {
                    let _ = to_worker.send(Work::End);
                    return;
                }
                None => scanned = filled,
            }
        };
        carried.clear();
        carried.extend_from_slice(&buffer[whole..filled]);
        if to_worker.send(Work::Block(buffer, whole, views)).is_err() {
            return;
        }
        if at_end {
            // The next block's place: the end.
            let _ = to_workers[(index + 1) % to_workers.len()].send(Work::End);
            return;
        }
    }
}

/// A worker: decodes each block it is given ([`decode_block`]) and hands it on, in order;
/// frees each visited block and hands its buffer back to the reader.
fn decode_blocks(
    work: Receiver<Work>,
    handed: Sender<Handed>,
    free: Sender<Free>,
    stop: &(impl Fn(&TrialView<'_>) -> bool + Sync),
    check: &(impl Fn(&TrialView<'_>) -> Option<String> + Sync),
) {
    while let Ok(work) = work.recv() {
        let handing = match work {
            Work::Block(buffer, whole, views) => {
                Ok(Some(Yoke::attach_to_cart(buffer, |bytes: &[u8]| {
                    decode_block(&bytes[..whole], views, stop, check)
                })))
            }
            Work::Failed(error) => Err(error),
            Work::End => Ok(None),
            Work::Visited(mut decoded) => {
                let views =
                    decoded.with_mut_return(|block| empty_views(std::mem::take(&mut block.views)));
                // The reader may have ended; then the buffer is simply dropped.
                let _ = free.send((decoded.into_backing_cart(), views));
                continue;
            }
            Work::Stop => return,
        };
        if handed.send(handing).is_err() {
            return;
        }
    }
}

/// The records of `lines` (whole lines), each decoded and checked, up to the first refused or
/// the first that `stop` holds; `views` is room for them.
fn decode_block<'block>(
    lines: &'block [u8],
    views: Vec<(usize, TrialView<'block>)>,
    stop: &impl Fn(&TrialView<'_>) -> bool,
    check: &impl Fn(&TrialView<'_>) -> Option<String>,
) -> DecodedBlock<'block> {
    let mut block = DecodedBlock {
        whole: lines.len(),
        lines: 0,
        stopped: false,
        views,
        refused: None,
    };
    // Room for every line's view at once: growing the vector would copy them again and again.
    block
        .views
        .reserve(memchr::memchr_iter(b'\n', lines).count());
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', lines) {
        let text = &lines[start..end];
        start = end + 1;
        block.lines += 1;
        match super::decode_line::<ViewRecord>(text) {
            None => {}
            Some(Ok(view)) if stop(&view) => {
                block.stopped = true;
                break;
            }
            Some(Ok(view)) => match check(&view) {
                None => block.views.push((block.lines, view)),
                Some(message) => {
                    block.refused = Some((block.lines, message));
                    break;
                }
            },
            Some(Err(error)) => {
                block.refused = Some((block.lines, ViewRecord::message(text, error)));
                break;
            }
        }
    }
    block
}

/// `views` emptied, as room for another block's views (the same allocation: an empty vector's
/// elements may take any lifetime, and collecting a vector into one of a same-sized type reuses
/// its allocation).
fn empty_views(mut views: Vec<(usize, TrialView<'_>)>) -> Views {
    views.clear();
    views.into_iter().map(|_| unreachable!("emptied")).collect()
}
