//! A module's build id (the ELF `NT_GNU_BUILD_ID` note, or what a recording says it
//! was): how two compare, how it is written in hex, and the hex forms it is filed
//! under. Reading one from a file is `hwprof_sampler::buildid`'s.

use std::fmt;
use std::path::Path;

use hwprof_sampler::buildid::{kernel_build_id, read_build_id};
use hwprof_sampler::perfdata::features::Features;
use rustc_hash::FxHashMap as HashMap;

/// A build id's bytes, as recorded or as read from a file. perf.data pads the ids of
/// old recordings with zeros to 20 bytes; [`BuildId::same`] and [`BuildId::forms`]
/// know it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BuildId(Vec<u8>);

impl BuildId {
    /// The build id of these bytes (possibly padded, possibly empty).
    pub fn new(bytes: impl Into<Vec<u8>>) -> BuildId {
        BuildId(bytes.into())
    }

    /// The build id of the ELF file at `path` (regular files only), if it has one.
    pub fn read(path: &Path) -> Option<BuildId> {
        read_build_id(path).map(BuildId)
    }

    /// The running kernel's build id.
    pub fn kernel() -> Option<BuildId> {
        kernel_build_id().map(BuildId)
    }

    /// The bytes as recorded or read (padding included).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes without perf.data's zero padding.
    fn trimmed(&self) -> &[u8] {
        let end = self.0.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
        &self.0[..end]
    }

    /// Whether two ids name the same file: equal once the trailing zeros of each are
    /// dropped (perf.data keeps at most 20 bytes, padded with zeros, so a 16-byte id
    /// may come back as 20), and an empty (or all-zero) id matches nothing.
    pub fn same(&self, other: &BuildId) -> bool {
        let (a, b) = (self.trimmed(), other.trimmed());
        !a.is_empty() && a == b
    }

    /// The lower-case hex of every byte (padding included).
    pub fn hex(&self) -> String {
        self.to_string()
    }

    /// The hex forms the id may be filed under (perf's build-id cache, the
    /// `.build-id` trees, debuginfod): without perf.data's zero padding, then as
    /// recorded if that differs (an id that really ends in a zero byte). None for an
    /// id shorter than 4 bytes once trimmed (build ids are at least 4 bytes: shorter is
    /// padding left of something else).
    pub fn forms(&self) -> Vec<String> {
        let trimmed = self.trimmed();
        if trimmed.len() < 4 {
            return Vec::new();
        }
        let mut out = vec![BuildId::new(trimmed).hex()];
        if trimmed.len() != self.0.len() {
            out.push(self.hex());
        }
        out
    }

    /// The id of a hex string (either case); `None` for an odd length or a non-hex
    /// digit.
    pub fn from_hex(hex: &str) -> Option<BuildId> {
        if hex.len() % 2 != 0 {
            return None;
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()
            .map(BuildId)
    }
}

/// The build ids a recording's header (`HEADER_BUILD_ID`) gives files, by path (the
/// first, when it names a path twice).
pub fn by_path(features: &Features) -> HashMap<String, BuildId> {
    let mut ids = HashMap::default();
    for b in &features.build_ids {
        ids.entry(b.filename.clone())
            .or_insert_with(|| BuildId::from(b.build_id.as_slice()));
    }
    ids
}

impl From<&[u8]> for BuildId {
    fn from(b: &[u8]) -> BuildId {
        BuildId(b.to_vec())
    }
}

impl From<Vec<u8>> for BuildId {
    fn from(b: Vec<u8>) -> BuildId {
        BuildId(b)
    }
}

/// The lower-case hex of every byte.
impl fmt::Display for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuildId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(b: &[u8]) -> BuildId {
        BuildId::new(b)
    }

    #[test]
    fn ids_compare_without_padding() {
        assert!(id(&[1, 2, 3]).same(&id(&[1, 2, 3, 0, 0])));
        assert!(id(&[1, 2, 3, 0, 0]).same(&id(&[1, 2, 3])));
        assert!(!id(&[1, 2, 3]).same(&id(&[1, 2, 4])));
        // Not a prefix match: a 20-byte id is not a shorter one's.
        assert!(!id(&[1, 2, 3]).same(&id(&[1, 2, 3, 4])));
        assert!(!id(&[1, 2, 3, 4]).same(&id(&[1, 2, 3])));
        // Empty and all-zero ids match nothing, not even themselves.
        assert!(!id(&[]).same(&id(&[0, 0])));
        assert!(!id(&[0, 0]).same(&id(&[0, 0])));
        assert!(!id(&[]).same(&id(&[])));
    }

    #[test]
    fn hex_and_back() {
        let b = id(&[0xab, 0x01, 0x00, 0xff]);
        assert_eq!(b.hex(), "ab0100ff");
        assert_eq!(b.to_string(), "ab0100ff");
        assert_eq!(format!("{b:?}"), "BuildId(ab0100ff)");
        assert_eq!(BuildId::from_hex("ab0100ff"), Some(b.clone()));
        assert_eq!(BuildId::from_hex("AB0100FF"), Some(b));
        assert_eq!(BuildId::from_hex("abc"), None);
        assert_eq!(BuildId::from_hex("zz"), None);
        assert_eq!(BuildId::from_hex(""), Some(id(&[])));
    }

    #[test]
    fn header_ids_by_path_first_wins() {
        use hwprof_sampler::perfdata::features::BuildIdEntry;
        let entry = |b: u8, f: &str| BuildIdEntry {
            pid: -1,
            misc: 2,
            build_id: vec![b; 20],
            filename: f.to_string(),
        };
        let f = Features {
            build_ids: vec![entry(1, "/a"), entry(2, "/b"), entry(3, "/a")],
            ..Features::default()
        };
        let ids = by_path(&f);
        assert_eq!(ids.len(), 2);
        assert_eq!(ids["/a"], id(&[1; 20]));
        assert_eq!(ids["/b"], id(&[2; 20]));
    }

    #[test]
    fn forms_drop_perf_data_padding() {
        // 16 bytes padded to 20: the trimmed form first, then as recorded.
        let mut padded = vec![0x11; 16];
        padded.extend([0; 4]);
        let forms = id(&padded).forms();
        assert_eq!(
            forms,
            [
                "11".repeat(16),
                format!("{}{}", "11".repeat(16), "00".repeat(4))
            ]
        );
        // Unpadded: one form.
        assert_eq!(id(&[0xab; 20]).forms(), ["ab".repeat(20)]);
        // Fewer than 4 bytes once trimmed: none.
        assert!(id(&[1, 2, 3, 0, 0]).forms().is_empty());
        assert!(id(&[]).forms().is_empty());
    }
}
