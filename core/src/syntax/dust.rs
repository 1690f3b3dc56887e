//! The tolerant DUST parser (SPEC §4).

use super::Parse;

pub fn parse_dust(_text: &str) -> Parse {
    unimplemented!("parser being written")
}
