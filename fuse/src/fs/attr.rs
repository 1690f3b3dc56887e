//! File attributes: from disk metadata, from memory files, and the time conversions between
//! the kernel's and the system's clocks.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo, TimeOrNow};
use nix::sys::time::TimeSpec;

use super::MemFile;

pub(super) fn to_time(secs: i64, nsecs: i64) -> SystemTime {
    let nanos = Duration::from_nanos(nsecs.max(0) as u64);
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + nanos
    }
}

pub(super) fn disk_attr(ino: u64, meta: &fs::Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: meta.size(),
        blocks: meta.blocks(),
        atime: to_time(meta.atime(), meta.atime_nsec()),
        mtime: to_time(meta.mtime(), meta.mtime_nsec()),
        ctime: to_time(meta.ctime(), meta.ctime_nsec()),
        crtime: to_time(meta.ctime(), meta.ctime_nsec()),
        kind: FileType::from_std(meta.file_type()).unwrap_or(FileType::RegularFile),
        perm: (meta.mode() & 0o7777) as u16,
        nlink: meta.nlink() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: meta.rdev() as u32,
        blksize: meta.blksize() as u32,
        flags: 0,
    }
}

/// The attributes of a file or folder the mount makes up (`.stardust/`, views, derived
/// files): owned by the mount's owner, all times `time`, inode filled in by the caller.
pub(super) fn synthetic_attr(
    kind: FileType,
    size: u64,
    perm: u16,
    time: SystemTime,
    owner: (u32, u32),
) -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size,
        blocks: size.div_ceil(512),
        atime: time,
        mtime: time,
        ctime: time,
        crtime: time,
        kind,
        perm,
        nlink: if kind == FileType::Directory { 2 } else { 1 },
        uid: owner.0,
        gid: owner.1,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

pub(super) fn mem_attr(file: &MemFile) -> FileAttr {
    let size = file.content.len() as u64;
    FileAttr {
        ino: INodeNo(0),
        size,
        blocks: size.div_ceil(512),
        atime: file.atime,
        mtime: file.mtime,
        ctime: file.ctime,
        crtime: file.ctime,
        kind: FileType::RegularFile,
        perm: file.perm,
        nlink: 1,
        uid: file.uid,
        gid: file.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

pub(super) fn timespec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::UTIME_OMIT,
        Some(TimeOrNow::Now) => TimeSpec::UTIME_NOW,
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => TimeSpec::from_duration(d),
            Err(before) => {
                let d = before.duration();
                let nanos = d.subsec_nanos();
                let secs = -(d.as_secs() as i64) - i64::from(nanos > 0);
                TimeSpec::new(secs, if nanos > 0 { 1_000_000_000 - i64::from(nanos) } else { 0 })
            }
        },
    }
}

pub(super) fn time_of(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}
