//! The transaction log under `.stardust/log/`: an append-only file of checksummed records.
//!
//! Layout of `.stardust/log/transactions.log`, a sequence of records:
//!
//! ```text
//! record := magic "SDT1" | body length (u64 LE) | body | SHA-256 of body (32 bytes)
//! body   := header length (u32 LE) | header (JSON) | contents
//! ```
//!
//! A header is either a transaction (its [`Transaction`] plus the byte length of each
//! document's new content, for the documents that have one, in order; `contents` is those
//! contents concatenated; a compacted record (SPEC §26 `[history] keep`) also lists in
//! `dropped` the documents whose content compaction removed, which have no length and no
//! content: a record without contents is history's record still, not damage), or an `applied` marker: every document Stardust wrote in the
//! transactions through its seq is durable on disk (a checkpoint synced them). Markers come
//! in non-decreasing seq order and never name a seq not yet logged; each carries the id of
//! the boot that wrote it, so recovery can tell whether the page cache survived the crash.
//! Transaction seqs are consecutive from 1.
//!
//! The file may end in zeros after the last record: the writer's reserve (see [`LogWriter`]),
//! which readers take for the end of the log.
//!
//! Only the last append can be interrupted, so damage is classified by where it is: a bad or
//! incomplete record with no valid record after it is a torn tail (truncated on open); one
//! followed by a valid record is damage in the middle of history, and the store refuses to
//! open rather than drop what follows.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, IoSlice, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::txn::Transaction;

pub const MAGIC: [u8; 4] = *b"SDT1";
const HEAD_LEN: u64 = 12;
const SUM_LEN: u64 = 32;
/// Bodies larger than this are treated as damage rather than allocated.
const MAX_BODY: u64 = 1 << 36;

/// The file name of the log inside `.stardust/log/`.
pub const LOG_FILE: &str = "transactions.log";

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Header {
    Transaction {
        transaction: Transaction,
        /// Byte length of each new content, for the documents whose `after` is `Some` and that
        /// are not `dropped`, in order.
        content_lengths: Vec<u64>,
        /// The documents (with an `after`) whose content compaction dropped.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dropped: Vec<String>,
        /// Set instead of `content_lengths` when each content is stored zstd-compressed: the
        /// compressed lengths (so a reader that knows no compression finds the lengths wrong
        /// and refuses the record rather than taking compressed bytes for a document).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        zstd: Vec<u64>,
        /// The documents (with an `after`, not `dropped`) whose content the record does not
        /// hold because an earlier record holds the same content of the same path: path ->
        /// that record's seq (issue 39: a content written again is logged once). A reader
        /// that knows no sharing counts these among the held contents, finds the lengths
        /// wrong and refuses the record rather than misreading it.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        shared: BTreeMap<String, u64>,
    },
    Applied {
        seq: u64,
        /// The kernel's boot id when the marker was written (absent in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        boot: Option<String>,
    },
}

/// One decoded record.
#[derive(Debug)]
pub struct Record {
    pub offset: u64,
    /// Bytes the record occupies in the file.
    pub len: u64,
    pub header: Header,
    body: Vec<u8>,
    contents_start: usize,
}

impl Record {
    /// The new content of each document of a transaction record that holds one, in order
    /// (decompressed).
    pub fn contents(&self) -> io::Result<Vec<(&str, Stored<'_>)>> {
        let Header::Transaction { transaction, content_lengths, dropped, zstd, shared } =
            &self.header
        else {
            return Ok(Vec::new());
        };
        let compressed = !zstd.is_empty();
        let mut out = Vec::new();
        let mut at = self.contents_start;
        let mut lengths = if compressed { zstd } else { content_lengths }.iter();
        for doc in held(transaction, dropped, shared) {
            let Some(&len) = lengths.next() else { break };
            let end = at + len as usize;
            let stored = &self.body[at..end];
            let content =
                if compressed { Cow::Owned(decompress(stored)?) } else { Cow::Borrowed(stored) };
            out.push((doc.path.as_str(), content));
            at = end;
        }
        Ok(out)
    }
}

/// The zstd level of stored contents: the fastest, which for documents compresses about as
/// well as the default (a 10 KB JSON document: 374 bytes at 1, 375 at 3).
const ZSTD_LEVEL: i32 = 1;

fn decompress(stored: &[u8]) -> io::Result<Vec<u8>> {
    zstd::stream::decode_all(stored)
        .map_err(|e| invalid(&format!("a stored content does not decompress: {e}")))
}

/// The documents of `transaction` whose content a record holds, in order.
fn held<'a>(
    transaction: &'a Transaction,
    dropped: &'a [String],
    shared: &'a BTreeMap<String, u64>,
) -> impl Iterator<Item = &'a super::txn::DocumentChange> {
    transaction.documents.iter().filter(|d| {
        d.after.is_some() && !dropped.contains(&d.path) && !shared.contains_key(&d.path)
    })
}

/// A content read from a record: borrowed when stored raw, decompressed otherwise.
pub type Stored<'a> = Cow<'a, [u8]>;

/// Where and why a log stops being readable.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Damage {
    pub offset: u64,
    /// The seq the damaged record should have carried (one past the last good transaction).
    pub seq: u64,
    pub reason: String,
    /// Whether a valid record follows the damage: then it is not a torn tail.
    pub in_middle: bool,
}

/// Encode a transaction record. `contents` holds the new content of each document whose
/// `after` is `Some`, in the transaction's order.
pub fn encode_transaction<'a>(transaction: &Transaction, contents: &[&'a [u8]]) -> Encoded<'a> {
    encode_record(transaction, &[], &BTreeMap::new(), contents)
}

/// Encode a transaction record whose `dropped` documents' contents were compacted away
/// (SPEC §26) and whose `shared` documents' contents are held by earlier records; `contents`
/// holds the others', in the transaction's order.
pub fn encode_record<'a>(
    transaction: &Transaction,
    dropped: &[String],
    shared: &BTreeMap<String, u64>,
    contents: &[&'a [u8]],
) -> Encoded<'a> {
    let stored: Vec<Cow<'a, [u8]>> = contents
        .iter()
        .map(|c| {
            let compressed = zstd::bulk::compress(c, ZSTD_LEVEL).expect("zstd compresses memory");
            Cow::Owned(compressed)
        })
        .collect();
    let header = HeaderRef::Transaction {
        transaction,
        content_lengths: Vec::new(),
        dropped,
        zstd: stored.iter().map(|c| c.len() as u64).collect(),
        shared,
    };
    encode(&header, stored)
}

/// Encode an `applied` marker: the documents of every transaction through `seq` are durable.
pub fn encode_applied(seq: u64, boot: Option<&str>) -> Encoded<'static> {
    encode(&HeaderRef::Applied { seq, boot }, Vec::new())
}

/// [`Header`] as written, borrowing the transaction instead of cloning it.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum HeaderRef<'a> {
    Transaction {
        transaction: &'a Transaction,
        content_lengths: Vec<u64>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        dropped: &'a [String],
        #[serde(skip_serializing_if = "Vec::is_empty")]
        zstd: Vec<u64>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        shared: &'a BTreeMap<String, u64>,
    },
    Applied {
        seq: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        boot: Option<&'a str>,
    },
}

/// A record ready to append. The contents stay borrowed: the first history of a large store
/// is tens of MB, and copying it into one buffer cost more than hashing it.
#[derive(Debug)]
pub struct Encoded<'a> {
    /// Magic, body length, header length and header.
    head: Vec<u8>,
    contents: Vec<Cow<'a, [u8]>>,
    sum: [u8; SUM_LEN as usize],
}

impl Encoded<'_> {
    /// Bytes the record occupies in the file.
    pub fn len(&self) -> usize {
        self.head.len() + self.contents.iter().map(|c| c.len()).sum::<usize>() + self.sum.len()
    }

    fn slices(&self) -> Vec<IoSlice<'_>> {
        std::iter::once(&self.head[..])
            .chain(self.contents.iter().map(|c| &c[..]))
            .chain(std::iter::once(&self.sum[..]))
            .map(IoSlice::new)
            .collect()
    }

    /// Write the record to `out`.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        for slice in self.slices() {
            out.write_all(&slice)?;
        }
        Ok(())
    }

    /// The record's bytes in one buffer.
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u8> {
        self.slices().iter().flat_map(|s| s.iter().copied()).collect()
    }
}

fn encode<'a>(header: &impl Serialize, contents: Vec<Cow<'a, [u8]>>) -> Encoded<'a> {
    let header = serde_json::to_vec(header).expect("a log header always serializes");
    let contents_len: usize = contents.iter().map(|c| c.len()).sum();
    let body_len = 4 + header.len() + contents_len;
    let mut head = Vec::with_capacity(HEAD_LEN as usize + 4 + header.len());
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&(body_len as u64).to_le_bytes());
    head.extend_from_slice(&(header.len() as u32).to_le_bytes());
    head.extend_from_slice(&header);
    let mut sum = Sha256::new();
    sum.update(&head[HEAD_LEN as usize..]);
    for content in &contents {
        sum.update(content);
    }
    Encoded { head, contents, sum: sum.finalize().into() }
}

/// `Write::write_all` for several buffers (`write_all_vectored` is not stable).
fn write_all_vectored(file: &mut File, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Why bytes at an offset are not a valid record.
enum Bad {
    /// The file ends inside the record.
    Incomplete(String),
    /// The bytes are there but wrong.
    Invalid(String),
    /// The record passes its checksum yet does not decode: written wrong, never torn.
    Malformed(String),
}

/// Decode the record at the reader's position, `offset` bytes into a file of `file_len`.
fn read_record(reader: &mut impl Read, offset: u64, file_len: u64) -> Result<Record, Bad> {
    let remaining = file_len - offset;
    if remaining < HEAD_LEN {
        return Err(Bad::Incomplete(format!("{remaining} stray bytes instead of a record")));
    }
    let mut head = [0u8; HEAD_LEN as usize];
    reader.read_exact(&mut head).map_err(|e| Bad::Incomplete(e.to_string()))?;
    if head[..4] != MAGIC {
        return Err(Bad::Invalid("no record starts here (bad magic)".to_owned()));
    }
    let body_len = u64::from_le_bytes(head[4..].try_into().expect("8 bytes"));
    if !(4..=MAX_BODY).contains(&body_len) {
        return Err(Bad::Invalid(format!("impossible record length {body_len}")));
    }
    let len = HEAD_LEN + body_len + SUM_LEN;
    if len > remaining {
        return Err(Bad::Incomplete(format!(
            "the record needs {len} bytes but the file ends after {remaining}"
        )));
    }
    let mut body = vec![0u8; body_len as usize];
    reader.read_exact(&mut body).map_err(|e| Bad::Incomplete(e.to_string()))?;
    let mut sum = [0u8; SUM_LEN as usize];
    reader.read_exact(&mut sum).map_err(|e| Bad::Incomplete(e.to_string()))?;
    if Sha256::digest(&body)[..] != sum {
        return Err(Bad::Invalid("the record fails its checksum".to_owned()));
    }
    let header_len = u32::from_le_bytes(body[..4].try_into().expect("4 bytes")) as usize;
    let Some(header_bytes) = body.get(4..4 + header_len) else {
        return Err(Bad::Malformed("the record header overruns the record".to_owned()));
    };
    let header: Header = serde_json::from_slice(header_bytes)
        .map_err(|e| Bad::Malformed(format!("the record header does not decode: {e}")))?;
    let contents_start = 4 + header_len;
    if let Header::Transaction { transaction, content_lengths, dropped, zstd, shared } = &header {
        let with_content = held(transaction, dropped, shared).count();
        if !zstd.is_empty() && !content_lengths.is_empty() {
            return Err(Bad::Malformed("the record's contents do not match its header".to_owned()));
        }
        let content_lengths = if zstd.is_empty() { content_lengths } else { zstd };
        let total = content_lengths.iter().try_fold(0u64, |sum, &len| sum.checked_add(len));
        let with_after = |path: &String| {
            transaction.documents.iter().any(|d| &d.path == path && d.after.is_some())
        };
        if !dropped.iter().all(with_after) {
            return Err(Bad::Malformed(
                "the record drops the content of a document it gives none".to_owned(),
            ));
        }
        let earlier = |(path, &seq): (&String, &u64)| {
            with_after(path) && !dropped.contains(path) && (1..transaction.seq).contains(&seq)
        };
        if !shared.iter().all(earlier) {
            return Err(Bad::Malformed(
                "the record shares a content it cannot: no such document, or not an earlier seq"
                    .to_owned(),
            ));
        }
        if content_lengths.len() != with_content
            || total != Some((body.len() - contents_start) as u64)
        {
            return Err(Bad::Malformed("the record's contents do not match its header".to_owned()));
        }
    }
    Ok(Record { offset, len, header, body, contents_start })
}

/// Reads a log from the start, checking checksums and the order of seqs.
pub struct LogReader {
    reader: BufReader<File>,
    offset: u64,
    file_len: u64,
    /// The seq of the last transaction read, and the highest seq an `applied` marker named.
    last_seq: u64,
    applied_through: u64,
    done: bool,
}

impl LogReader {
    /// Open the log at `path`; a missing file is an empty log.
    pub fn open(path: &Path) -> io::Result<Option<LogReader>> {
        match File::open(path) {
            Ok(file) => LogReader::of(file).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Read the log already open as `file`: the file stays the one read even if compaction
    /// renames another over its name meanwhile.
    pub fn of(file: File) -> io::Result<LogReader> {
        let file_len = file.metadata()?.len();
        Ok(LogReader {
            reader: BufReader::with_capacity(1 << 16, file),
            offset: 0,
            file_len,
            last_seq: 0,
            applied_through: 0,
            done: false,
        })
    }

    /// Start reading at `offset`, where the transaction `seq` begins (from an index).
    pub fn seek(&mut self, offset: u64, seq: u64) -> io::Result<()> {
        self.reader.seek(SeekFrom::Start(offset))?;
        self.offset = offset;
        self.last_seq = seq.saturating_sub(1);
        // Markers before `offset` are not read; any marker that follows is at least this far.
        self.applied_through = 0;
        Ok(())
    }

    /// The offset just past the last record read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The highest seq an `applied` marker read so far named (0 when none).
    pub fn applied_through(&self) -> u64 {
        self.applied_through
    }

    /// The next record, `Ok(None)` at a clean end, or the damage that stops the log.
    pub fn next_record(&mut self) -> Result<Option<Record>, Damage> {
        if self.done || self.offset == self.file_len {
            return Ok(None);
        }
        let result = read_record(&mut self.reader, self.offset, self.file_len);
        let record = match result {
            Ok(record) => record,
            Err(Bad::Incomplete(reason) | Bad::Invalid(reason)) => {
                self.done = true;
                // The writer's reserve: zeros written ahead of the records (see `LogWriter`).
                if zeros_from(self.reader.get_ref(), self.offset, self.file_len).unwrap_or(false) {
                    return Ok(None);
                }
                return Err(self.damage(reason));
            }
            Err(Bad::Malformed(reason)) => {
                self.done = true;
                return Err(Damage {
                    offset: self.offset,
                    seq: self.last_seq + 1,
                    reason,
                    in_middle: true,
                });
            }
        };
        let order = match &record.header {
            Header::Transaction { transaction, .. } if transaction.seq != self.last_seq + 1 => {
                Some(format!(
                    "seq {} follows seq {} (seqs must be consecutive)",
                    transaction.seq, self.last_seq
                ))
            }
            Header::Applied { seq, .. } if *seq > self.last_seq || *seq < self.applied_through => {
                Some(format!(
                    "an applied marker for seq {seq} follows seq {} and a marker for seq {}",
                    self.last_seq, self.applied_through
                ))
            }
            _ => None,
        };
        if let Some(reason) = order {
            // A checksummed record in the wrong place is never a torn write.
            self.done = true;
            return Err(Damage {
                offset: self.offset,
                seq: self.last_seq + 1,
                reason,
                in_middle: true,
            });
        }
        match &record.header {
            Header::Transaction { transaction, .. } => self.last_seq = transaction.seq,
            Header::Applied { seq, .. } => self.applied_through = *seq,
        }
        self.offset += record.len;
        Ok(Some(record))
    }

    /// Describe damage at the current offset, looking for a valid record after it.
    fn damage(&mut self, reason: String) -> Damage {
        let in_middle = self.valid_record_after(self.offset + 1).unwrap_or(true);
        Damage { offset: self.offset, seq: self.last_seq + 1, reason, in_middle }
    }

    /// Whether any valid record starts at or after `from`. An I/O error answers "maybe", so
    /// the caller errs on the side of keeping history.
    fn valid_record_after(&mut self, from: u64) -> io::Result<bool> {
        use std::os::unix::fs::FileExt;
        let file_len = self.file_len;
        if from >= file_len {
            return Ok(false);
        }
        let mut rest = vec![0u8; (file_len - from) as usize];
        self.reader.get_ref().read_exact_at(&mut rest, from)?;
        let mut at = 0;
        while let Some(pos) = find(&rest[at..], &MAGIC) {
            let start = at + pos;
            let offset = from + start as u64;
            let mut cursor = io::Cursor::new(&rest[start..]);
            if read_record(&mut cursor, offset, file_len).is_ok() {
                return Ok(true);
            }
            at = start + 1;
        }
        Ok(false)
    }
}

/// One document's content in a transaction record.
#[derive(Debug, PartialEq, Eq)]
pub enum Content {
    Held(Vec<u8>),
    /// The record of this seq holds the same content of the same path.
    Shared(u64),
    /// Compaction dropped it (SPEC §26 `[history] keep`).
    Dropped,
    /// The record has none for the document.
    Absent,
}

/// Read one document's content from the transaction record at `offset` of the log open as
/// `file` without reading the rest of the record (SPEC §26: an as-of read costs one record's
/// header and one content, never a replay). The caller checks the bytes against the version
/// the header names.
pub fn read_content(file: &File, offset: u64, doc: &str) -> io::Result<Content> {
    use std::os::unix::fs::FileExt;
    let (transaction, content_lengths, dropped, zstd, shared, mut at) =
        read_header_at(file, offset)?;
    if dropped.iter().any(|d| d == doc) {
        return Ok(Content::Dropped);
    }
    if let Some(&seq) = shared.get(doc) {
        return Ok(Content::Shared(seq));
    }
    let compressed = !zstd.is_empty();
    let mut lengths = if compressed { zstd } else { content_lengths }.into_iter();
    for change in held(&transaction, &dropped, &shared) {
        let Some(len) = lengths.next() else { break };
        if change.path == doc {
            let len = usize::try_from(len).map_err(|_| invalid("a content too large to read"))?;
            let mut bytes = vec![0u8; len];
            file.read_exact_at(&mut bytes, at)?;
            if compressed {
                bytes = decompress(&bytes)?;
            }
            return Ok(Content::Held(bytes));
        }
        at += len;
    }
    Ok(Content::Absent)
}

/// The transaction recorded at `offset` of the log open as `file`, its contents not read.
pub fn read_transaction(file: &File, offset: u64) -> io::Result<Transaction> {
    Ok(read_header_at(file, offset)?.0)
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}

/// The transaction whose record starts at `offset`, its content lengths, the documents whose
/// content was dropped, the compressed lengths, the shared contents, and the file offset
/// where its contents start.
#[allow(clippy::type_complexity)]
fn read_header_at(
    file: &File,
    offset: u64,
) -> io::Result<(Transaction, Vec<u64>, Vec<String>, Vec<u64>, BTreeMap<String, u64>, u64)> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; HEAD_LEN as usize + 4];
    file.read_exact_at(&mut head, offset)?;
    if head[..4] != MAGIC {
        return Err(invalid("no record starts at the indexed offset"));
    }
    let header_len = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as usize;
    let mut header = vec![0u8; header_len];
    file.read_exact_at(&mut header, offset + HEAD_LEN + 4)?;
    let header: Header = serde_json::from_slice(&header)
        .map_err(|_| invalid("the record header does not decode"))?;
    let Header::Transaction { transaction, content_lengths, dropped, zstd, shared } = header else {
        return Err(invalid("the indexed record is not a transaction"));
    };
    let at = offset + HEAD_LEN + 4 + header_len as u64;
    Ok((transaction, content_lengths, dropped, zstd, shared, at))
}

/// Whether `file` holds only zeros from `from` to `to` (read at offsets: the file's
/// position is a reader's).
fn zeros_from(file: &File, from: u64, to: u64) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 1 << 16];
    let mut at = from;
    while at < to {
        let n = (to - at).min(buf.len() as u64) as usize;
        let read = file.read_at(&mut buf[..n], at)?;
        if read == 0 {
            return Ok(true);
        }
        if buf[..read].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += read as u64;
    }
    Ok(true)
}

fn zeros(reader: &mut impl Read) -> io::Result<bool> {
    let mut buf = [0u8; 1 << 16];
    loop {
        match reader.read(&mut buf)? {
            0 => return Ok(true),
            n if buf[..n].iter().any(|&b| b != 0) => return Ok(false),
            _ => {}
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The appending side of the log, owned by the single writer.
///
/// A synced append that grows the file makes the sync commit the file system's journal (the
/// new size), which cost as much again as the data: about 0.2 ms against 0.1 ms for the same
/// bytes written over blocks the file already has (ext4 on this VM). So the writer keeps a
/// *reserve*: zeros written and synced ahead of the last record, which records then overwrite.
/// Readers take a tail of zeros for the end of the log. A crash can leave only zeros or a torn
/// record there, never a record that was not acknowledged.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    /// Bytes of records.
    len: u64,
    /// The file's length: `len` plus the zeros of the reserve.
    reserved: u64,
    /// A failed append could not be cut back: the file may end in a partial record.
    broken: bool,
}

/// Records larger than this are appended past the reserve, not written into it.
const RESERVED_RECORD_MAX: u64 = 1 << 20;

impl LogWriter {
    /// Open `path` for appending after its first `valid_len` bytes, truncating anything after
    /// them (a torn tail the caller has decided to drop) unless it is all zeros (the reserve).
    pub fn open(path: &Path, valid_len: u64) -> io::Result<LogWriter> {
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let file_len = file.metadata()?.len();
        file.seek(SeekFrom::Start(valid_len))?;
        let reserve = file_len > valid_len && zeros(&mut (&file).take(file_len - valid_len))?;
        if !reserve && file_len != valid_len {
            file.set_len(valid_len)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::Start(valid_len))?;
        let reserved = if reserve { file_len } else { valid_len };
        Ok(LogWriter { file, len: valid_len, reserved, broken: false })
    }

    /// Grow the reserve so that `need` bytes of records fit, with room for more: zeros are
    /// written and synced (with the new length) once for many records.
    fn reserve(&mut self, need: u64) -> io::Result<()> {
        // A bigger reserve is rarer work but a longer pause for the commit that makes it.
        let chunk = (self.len / 4).clamp(256 << 10, 4 << 20);
        let target = need + chunk;
        self.file.seek(SeekFrom::Start(self.reserved))?;
        let zeros = vec![0u8; 1 << 16];
        let mut at = self.reserved;
        while at < target {
            let n = (target - at).min(zeros.len() as u64) as usize;
            self.file.write_all(&zeros[..n])?;
            at += n as u64;
        }
        self.file.sync_all()?;
        self.reserved = target;
        Ok(())
    }

    /// Make what was appended durable on another thread (inline if none can be started). A
    /// failure is only logged: the next synced append or checkpoint syncs the same bytes and
    /// reports its own failure.
    pub fn sync_in_background(&self) {
        let sync = |file: &File| {
            if let Err(e) = file.sync_data() {
                tracing::warn!("cannot sync the transaction log: {e}");
            }
        };
        let Ok(file) = self.file.try_clone() else { return sync(&self.file) };
        let spawned = std::thread::Builder::new()
            .name("stardust-log-sync".to_owned())
            .spawn(move || sync(&file));
        if spawned.is_err() {
            sync(&self.file);
        }
    }

    /// Whether the log this writer appends to is still at `path` (the same file, not deleted
    /// or replaced).
    pub fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self.file.metadata(), std::fs::metadata(path)) {
            (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
            _ => false,
        }
    }

    /// Write the whole log, from the file this writer still holds open, to a new file at
    /// `path` and append there from now on (SPEC §24: a tool deleted the private folder while
    /// the core ran; the history it held open is written back). The new file is synced, then
    /// named by renaming it into place, so `path` never holds part of the history.
    pub fn relink(&mut self, path: &Path) -> io::Result<()> {
        let temp = path.with_extension("relink");
        let mut copy =
            OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&temp)?;
        self.file.seek(SeekFrom::Start(0))?;
        io::copy(&mut (&self.file).take(self.len), &mut copy)?;
        copy.sync_all()?;
        std::fs::rename(&temp, path)?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        copy.seek(SeekFrom::Start(self.len))?;
        self.file = copy;
        self.reserved = self.len;
        Ok(())
    }

    /// Bytes of records.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether a failed append may have left bytes after the last record; nothing more may
    /// be appended then.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Append an encoded record. With `sync`, the record is durable when this returns. On
    /// failure the file is cut back to where it was, so a failed append leaves no record.
    pub fn append(&mut self, record: &Encoded<'_>, sync: bool) -> io::Result<u64> {
        self.append_with(record, sync, sync)
    }

    /// Append an encoded record that a later [`LogWriter::sync`] makes durable together with
    /// the records appended before it (group commit): the reserve is grown as for a synced
    /// append, so that sync writes over blocks the file already has.
    pub fn append_deferred(&mut self, record: &Encoded<'_>) -> io::Result<u64> {
        self.append_with(record, true, false)
    }

    /// Make every record appended so far durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn append_with(&mut self, record: &Encoded<'_>, reserve: bool, sync: bool) -> io::Result<u64> {
        if self.broken {
            return Err(io::Error::other("an earlier failed append could not be cut back"));
        }
        let offset = self.len;
        let n = record.len() as u64;
        let result = (|| {
            if reserve && offset + n > self.reserved && n <= RESERVED_RECORD_MAX {
                self.reserve(offset + n)?;
            }
            self.file.seek(SeekFrom::Start(offset))?;
            write_all_vectored(&mut self.file, &mut record.slices())?;
            if sync { self.file.sync_data() } else { Ok(()) }
        })();
        match result {
            Ok(()) => {
                self.len += n;
                self.reserved = self.reserved.max(self.len);
                Ok(offset)
            }
            Err(e) => {
                if let Err(cut) = self.truncate(offset) {
                    tracing::error!("cannot cut the log back after a failed append: {cut}");
                }
                Err(e)
            }
        }
    }

    /// Cut the log back to `len` bytes (undoing an append whose commit failed) and make the
    /// cut durable.
    pub fn truncate(&mut self, len: u64) -> io::Result<()> {
        let cut = self
            .file
            .set_len(len)
            .and_then(|()| self.file.seek(SeekFrom::Start(len)))
            .and_then(|_| self.file.sync_all());
        self.broken = cut.is_err();
        if cut.is_ok() {
            self.len = len;
            self.reserved = len;
        }
        cut
    }
}

/// The outcome of checking a whole log.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Verification {
    pub transactions: u64,
    pub last_seq: u64,
    /// The highest seq an `applied` marker names: the documents Stardust wrote through it are
    /// durable (0 when no marker was written).
    pub applied_through: u64,
    /// Bytes of valid records.
    pub valid_len: u64,
    pub file_len: u64,
    pub damage: Option<Damage>,
}

/// Read every record of the log at `path`, checking checksums and seqs, without changing it.
pub fn verify(path: &Path) -> io::Result<Verification> {
    let Some(mut reader) = LogReader::open(path)? else {
        return Ok(Verification {
            transactions: 0,
            last_seq: 0,
            applied_through: 0,
            valid_len: 0,
            file_len: 0,
            damage: None,
        });
    };
    let file_len = reader.file_len;
    let mut transactions = 0;
    let damage = loop {
        match reader.next_record() {
            Ok(Some(record)) => {
                if matches!(record.header, Header::Transaction { .. }) {
                    transactions += 1;
                }
            }
            Ok(None) => break None,
            Err(damage) => break Some(damage),
        }
    };
    Ok(Verification {
        transactions,
        last_seq: reader.last_seq(),
        applied_through: reader.applied_through(),
        valid_len: reader.offset(),
        file_len,
        damage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::txn::{DocumentChange, Origin, Version};
    use std::path::PathBuf;

    fn txn(seq: u64, paths: &[(&str, Option<&[u8]>)]) -> (Transaction, Vec<Vec<u8>>) {
        let documents = paths
            .iter()
            .map(|(path, content)| DocumentChange {
                path: (*path).to_owned(),
                before: None,
                after: content.map(Version::of),
                created: vec![],
                changed: vec![],
                deleted: vec![],
            })
            .collect();
        let contents = paths.iter().filter_map(|(_, c)| c.map(<[u8]>::to_vec)).collect();
        let transaction = Transaction {
            seq,
            time: "2026-01-01T00:00:00.000Z".into(),
            origin: Origin::Mount,
            documents,
        };
        (transaction, contents)
    }

    fn write_log(dir: &Path, n: u64) -> PathBuf {
        let path = dir.join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        for seq in 1..=n {
            let (t, contents) = txn(
                seq,
                &[("a.json", Some(format!("{{\"n\":{seq}}}").as_bytes())), ("b.json", None)],
            );
            let refs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
            writer.append(&encode_transaction(&t, &refs), true).unwrap();
            writer.append(&encode_applied(seq, Some("boot")), false).unwrap();
        }
        strip_reserve(&path);
        path
    }

    /// Cut the writer's reserve of zeros off, so that the file is records only.
    fn strip_reserve(path: &Path) {
        let records = verify(path).unwrap().valid_len;
        OpenOptions::new().write(true).open(path).unwrap().set_len(records).unwrap();
    }

    #[test]
    fn synced_appends_overwrite_a_reserve_that_readers_take_for_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        let mut ends = Vec::new();
        for seq in 1..=3 {
            let (t, contents) = txn(seq, &[("a.json", Some(b"{}"))]);
            let refs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
            let record = encode_transaction(&t, &refs);
            ends.push(writer.append(&record, true).unwrap() + record.len() as u64);
        }
        drop(writer);
        let file_len = std::fs::metadata(&path).unwrap().len();
        assert!(file_len > ends[2] && file_len >= 256 << 10, "a reserve follows the records");
        assert!(std::fs::read(&path).unwrap()[ends[2] as usize..].iter().all(|&b| b == 0));
        let v = verify(&path).unwrap();
        assert_eq!(
            (v.transactions, v.valid_len, v.file_len, v.damage),
            (3, ends[2], file_len, None)
        );
        // Reopened after its last record, the writer keeps the reserve and goes on in it.
        let mut writer = LogWriter::open(&path, ends[2]).unwrap();
        let (t, contents) = txn(4, &[("b.json", Some(b"[]"))]);
        writer.append(&encode_transaction(&t, &[&contents[0]]), true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), file_len);
        assert_eq!(offsets(&path).len(), 4);
    }

    #[test]
    fn a_record_torn_inside_the_reserve_is_a_torn_tail_and_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        let (t, contents) = txn(1, &[("a.json", Some(b"{}"))]);
        writer.append(&encode_transaction(&t, &[&contents[0]]), true).unwrap();
        drop(writer);
        let valid = verify(&path).unwrap().valid_len;
        // The start of the next record landed; the rest of it did not.
        let (t, contents) = txn(2, &[("a.json", Some(b"[1]"))]);
        let record = encode_transaction(&t, &[&contents[0]]).to_vec();
        let mut file = OpenOptions::new().write(true).open(&path).unwrap();
        file.seek(SeekFrom::Start(valid)).unwrap();
        file.write_all(&record[..record.len() / 2]).unwrap();
        let damage = verify(&path).unwrap().damage.unwrap();
        assert_eq!((damage.offset, damage.seq, damage.in_middle), (valid, 2, false));
        drop(LogWriter::open(&path, valid).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), valid, "the torn record is cut");
        assert_eq!(verify(&path).unwrap().damage, None);
    }

    fn read_all(path: &Path) -> (Vec<Header>, Option<Damage>) {
        let mut reader = LogReader::open(path).unwrap().unwrap();
        let mut headers = Vec::new();
        loop {
            match reader.next_record() {
                Ok(Some(r)) => headers.push(r.header),
                Ok(None) => return (headers, None),
                Err(d) => return (headers, Some(d)),
            }
        }
    }

    #[test]
    fn records_round_trip_with_contents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        let (t, contents) = txn(
            1,
            &[("a.json", Some(b"{}")), ("gone.json", None), ("c.dust", Some(b"\xff not utf-8"))],
        );
        let refs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        writer.append(&encode_transaction(&t, &refs), true).unwrap();
        let mut reader = LogReader::open(&path).unwrap().unwrap();
        let record = reader.next_record().unwrap().unwrap();
        let contents = record.contents().unwrap();
        let contents: Vec<(&str, &[u8])> = contents.iter().map(|(p, c)| (*p, &c[..])).collect();
        assert_eq!(contents, vec![("a.json", &b"{}"[..]), ("c.dust", &b"\xff not utf-8"[..])]);
        match &record.header {
            Header::Transaction { transaction, .. } => assert_eq!(transaction, &t),
            other => panic!("unexpected {other:?}"),
        }
        assert!(reader.next_record().unwrap().is_none());
    }

    #[test]
    fn contents_are_stored_compressed_and_a_record_of_raw_contents_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let big = "{\"rows\": [".to_owned() + &"{\"n\": 0}, ".repeat(1000) + "{}]}";
        let (t, _) = txn(1, &[("a.json", Some(big.as_bytes()))]);
        let record = encode_transaction(&t, &[big.as_bytes()]);
        assert!(record.len() < big.len() / 10, "{} bytes for {}", record.len(), big.len());
        // A record written before compression: `content_lengths` and the bytes as they are.
        let (t2, _) = txn(2, &[("a.json", Some(b"{}"))]);
        let raw = Header::Transaction {
            transaction: t2,
            content_lengths: vec![2],
            dropped: vec![],
            zstd: vec![],
            shared: BTreeMap::new(),
        };
        let mut writer = LogWriter::open(&path, 0).unwrap();
        let first = writer.append(&record, true).unwrap();
        let second = writer.append(&encode(&raw, vec![Cow::Borrowed(b"{}")]), true).unwrap();
        assert_eq!(verify(&path).unwrap().damage, None);
        let file = File::open(&path).unwrap();
        assert_eq!(read_content(&file, first, "a.json").unwrap(), Content::Held(big.into_bytes()));
        assert_eq!(read_content(&file, second, "a.json").unwrap(), Content::Held(b"{}".to_vec()));
    }

    #[test]
    fn a_compacted_record_verifies_and_holds_only_the_kept_contents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        let (t, _) = txn(1, &[("a.json", Some(b"{}")), ("b.json", Some(b"[]")), ("c.json", None)]);
        let dropped = vec!["a.json".to_owned()];
        let offset =
            writer.append(&encode_record(&t, &dropped, &BTreeMap::new(), &[b"[]"]), true).unwrap();
        let v = verify(&path).unwrap();
        assert_eq!((v.transactions, v.damage), (1, None), "a dropped content is not damage");
        let record = LogReader::open(&path).unwrap().unwrap().next_record().unwrap().unwrap();
        let contents = record.contents().unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!((contents[0].0, &contents[0].1[..]), ("b.json", &b"[]"[..]));
        let file = File::open(&path).unwrap();
        assert_eq!(read_content(&file, offset, "a.json").unwrap(), Content::Dropped);
        assert_eq!(read_content(&file, offset, "b.json").unwrap(), Content::Held(b"[]".to_vec()));
        assert_eq!(read_content(&file, offset, "c.json").unwrap(), Content::Absent);

        // Dropping the content of a document the transaction deleted is written wrong.
        let path = dir.path().join("bad.log");
        let bad = vec!["c.json".to_owned()];
        std::fs::write(&path, encode_record(&t, &bad, &BTreeMap::new(), &[b"{}", b"[]"]).to_vec())
            .unwrap();
        let damage = verify(&path).unwrap().damage.unwrap();
        assert!(damage.in_middle && damage.reason.contains("drops"), "{damage:?}");
    }

    #[test]
    fn a_torn_tail_is_not_in_the_middle() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), 3);
        let full = std::fs::read(&path).unwrap();
        let good = verify(&path).unwrap();
        assert_eq!((good.transactions, good.last_seq, good.damage), (3, 3, None));
        // Every cut inside the last two records (transaction 3 and its marker) is a torn tail.
        let (_, last_txn_offset) = offsets(&path)[2];
        for cut in (last_txn_offset as usize + 1)..full.len() {
            std::fs::write(&path, &full[..cut]).unwrap();
            let v = verify(&path).unwrap();
            let damage = v.damage.clone();
            if cut == full.len() - encode_applied(3, Some("boot")).len() {
                assert_eq!(damage, None, "cut at a record boundary is clean");
                continue;
            }
            let damage = damage.unwrap_or_else(|| panic!("cut at {cut} went unnoticed"));
            assert!(!damage.in_middle, "cut at {cut}: {damage:?}");
        }
    }

    #[test]
    fn garbage_after_the_last_record_is_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), 2);
        let valid = std::fs::metadata(&path).unwrap().len();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"SDT1\x05\x00\x00\x00\x00\x00\x00\x00zzzzz").unwrap();
        let v = verify(&path).unwrap();
        let damage = v.damage.unwrap();
        assert_eq!((damage.offset, damage.seq, damage.in_middle), (valid, 3, false));
        assert_eq!(v.valid_len, valid);
    }

    #[test]
    fn a_bad_checksum_in_the_middle_names_the_seq() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), 4);
        let (_, offset) = offsets(&path)[1];
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[offset as usize + 30] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let (headers, damage) = read_all(&path);
        assert_eq!(headers.len(), 2, "seq 1 and its marker are still read");
        let damage = damage.unwrap();
        assert_eq!((damage.offset, damage.seq, damage.in_middle), (offset, 2, true));
        assert!(damage.reason.contains("checksum"), "{}", damage.reason);
    }

    #[test]
    fn out_of_order_seqs_are_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        let (t1, _) = txn(1, &[("a.json", None)]);
        let (t3, _) = txn(3, &[("a.json", None)]);
        writer.append(&encode_transaction(&t1, &[]), true).unwrap();
        writer.append(&encode_transaction(&t3, &[]), true).unwrap();
        let damage = read_all(&path).1.unwrap();
        assert!(damage.in_middle);
        assert_eq!(damage.seq, 2);
        assert!(damage.reason.contains("consecutive"), "{}", damage.reason);
    }

    #[test]
    fn a_shared_content_is_read_from_the_record_that_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let (t1, _) = txn(1, &[("a.py", Some(b"x = 1"))]);
        let (t2, _) = txn(2, &[("a.py", Some(b"x = 2"))]);
        let (t3, _) = txn(3, &[("a.py", Some(b"x = 1")), ("b.py", Some(b"y"))]);
        let shared = BTreeMap::from([("a.py".to_owned(), 1)]);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        writer.append(&encode_transaction(&t1, &[b"x = 1"]), true).unwrap();
        writer.append(&encode_transaction(&t2, &[b"x = 2"]), true).unwrap();
        let third = encode_record(&t3, &[], &shared, &[b"y"]);
        let offset = writer.append(&third, true).unwrap();
        assert_eq!(verify(&path).unwrap().damage, None);
        let file = File::open(&path).unwrap();
        assert_eq!(read_content(&file, offset, "a.py").unwrap(), Content::Shared(1));
        assert_eq!(read_content(&file, offset, "b.py").unwrap(), Content::Held(b"y".to_vec()));
        let mut reader = LogReader::open(&path).unwrap().unwrap();
        reader.seek(offset, 3).unwrap();
        let record = reader.next_record().unwrap().unwrap();
        let held: Vec<(&str, Vec<u8>)> =
            record.contents().unwrap().into_iter().map(|(p, c)| (p, c.to_vec())).collect();
        assert_eq!(held, vec![("b.py", b"y".to_vec())]);

        // A record that shares with itself or a later seq, or a path it gives no content, is
        // damage.
        for bad in [("a.py", 3), ("a.py", 0), ("c.py", 1)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(LOG_FILE);
            let shared = BTreeMap::from([(bad.0.to_owned(), bad.1)]);
            let mut writer = LogWriter::open(&path, 0).unwrap();
            writer.append(&encode_transaction(&t1, &[b"x = 1"]), true).unwrap();
            writer.append(&encode_transaction(&t2, &[b"x = 2"]), true).unwrap();
            writer.append(&encode_record(&t3, &[], &shared, &[b"y"]), true).unwrap();
            let damage = verify(&path).unwrap().damage.expect("damage");
            assert!(damage.reason.contains("shares"), "{bad:?}: {}", damage.reason);
        }
    }

    #[test]
    fn a_checksummed_record_with_impossible_lengths_is_damage_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let (transaction, _) = txn(1, &[("a.json", Some(b"x")), ("b.json", Some(b"y"))]);
        let header = Header::Transaction {
            transaction,
            content_lengths: vec![u64::MAX, 3],
            dropped: vec![],
            zstd: vec![],
            shared: BTreeMap::new(),
        };
        std::fs::write(&path, encode(&header, vec![Cow::Borrowed(b"xy")]).to_vec()).unwrap();
        let damage = verify(&path).unwrap().damage.unwrap();
        assert!(damage.in_middle, "a checksummed record is never a torn write");
        assert!(damage.reason.contains("do not match"), "{}", damage.reason);
    }

    #[test]
    fn markers_may_lag_and_repeat_but_never_go_back_or_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut writer = LogWriter::open(&path, 0).unwrap();
        for seq in 1..=3 {
            let (t, _) = txn(seq, &[("a.json", None)]);
            writer.append(&encode_transaction(&t, &[]), true).unwrap();
        }
        // A checkpoint that took seq 2 while seq 3 was committed; an open in a new boot.
        writer.append(&encode_applied(2, Some("one")), false).unwrap();
        writer.append(&encode_applied(2, Some("two")), false).unwrap();
        // A marker written before boots were recorded.
        let marker = encode(&Header::Applied { seq: 3, boot: None }, Vec::new());
        writer.append(&marker, false).unwrap();
        let v = verify(&path).unwrap();
        assert_eq!((v.last_seq, v.applied_through, v.damage), (3, 3, None));
        let old_format = br#"{"kind":"applied","seq":3}"#;
        assert_eq!(
            serde_json::from_slice::<Header>(old_format).unwrap(),
            Header::Applied { seq: 3, boot: None }
        );

        for (bad, why) in [(2, "goes back"), (4, "is ahead")] {
            // Reopening at the good length drops the previous case's marker.
            let mut copy = LogWriter::open(&path, writer.len).unwrap();
            copy.append(&encode_applied(bad, None), false).unwrap();
            let damage = verify(&path).unwrap().damage.unwrap_or_else(|| panic!("{why}"));
            assert!(damage.in_middle, "a checksummed marker out of place {why}: {damage:?}");
            assert!(damage.reason.contains("applied marker"), "{}", damage.reason);
        }
    }

    #[test]
    fn missing_log_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let v = verify(&dir.path().join(LOG_FILE)).unwrap();
        assert_eq!((v.transactions, v.last_seq, v.damage), (0, 0, None));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Any cut of the log is at worst a torn tail; any flipped bit is found, and counts as
        /// damage in the middle exactly when a whole record follows it.
        #[test]
        fn every_cut_and_every_flip_is_classified(
            sizes in proptest::collection::vec(0usize..300, 1..6),
            at in 0.0f64..1.0,
            bit in 0u8..8,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(LOG_FILE);
            let mut writer = LogWriter::open(&path, 0).unwrap();
            let mut starts = Vec::new();
            for (i, size) in sizes.iter().enumerate() {
                let content = vec![b'x'; *size];
                let (t, _) = txn(i as u64 + 1, &[("a.json", Some(&content))]);
                starts.push(writer.append(&encode_transaction(&t, &[&content]), true).unwrap());
            }
            strip_reserve(&path);
            let full = std::fs::read(&path).unwrap();
            let p = ((full.len() as f64) * at) as usize;

            std::fs::write(&path, &full[..p]).unwrap();
            let v = verify(&path).unwrap();
            let on_boundary = p == 0 || starts.contains(&(p as u64));
            proptest::prop_assert_eq!(v.damage.is_none(), on_boundary);
            proptest::prop_assert!(v.damage.is_none_or(|d| !d.in_middle));

            let mut flipped = full.clone();
            flipped[p] ^= 1 << bit;
            std::fs::write(&path, &flipped).unwrap();
            let damage = verify(&path).unwrap().damage;
            proptest::prop_assert!(damage.is_some(), "a flip at {} went unnoticed", p);
            let in_last = p as u64 >= *starts.last().unwrap();
            proptest::prop_assert_eq!(damage.unwrap().in_middle, !in_last);
        }
    }

    /// (seq, offset) of each transaction record.
    fn offsets(path: &Path) -> Vec<(u64, u64)> {
        let mut reader = LogReader::open(path).unwrap().unwrap();
        let mut out = Vec::new();
        while let Some(record) = reader.next_record().unwrap() {
            if let Header::Transaction { transaction, .. } = &record.header {
                out.push((transaction.seq, record.offset));
            }
        }
        out
    }
}
