//! pprof: a gzipped `profile.proto` (google/pprof's `proto/profile.proto`, the format of
//! `go tool pprof`, Grafana Pyroscope and Parca), written with prost from the message
//! structs below (field numbers as in that file; no protoc at build time).
//!
//! One sample type per [`Series`], in its unit (the default: the first in time, CPU or
//! waits, else the first); each sample carries one value per type,
//! 0 in the types of other events, so that the sums of two series over any function
//! divide (IPC = instructions / cycles of a group). Locations are code addresses
//! with their inlined frames (`Location.line`, innermost first), each in the mapping of
//! its module (with the build id the recording names); functions have their name and
//! file, lines their number. Labels: `comm` (a string), `pid` and `tid` (numbers).

use std::collections::HashMap;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use hwprof_symbolize::FrameId;
use prost::Message;

use super::{Export, Series, frame_name};

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, Message)]
pub struct PbProfile {
    /// The sample types (one per series).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<PbSample>,
    /// The mappings (modules).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// The locations.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// The functions.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// All strings; index 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// The recording's start (ns since the epoch), when known.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long it lasted (ns), when known.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// The kind of events sampled (the first series).
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Free-form comments (string indexes).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type shown by default (string index of its name).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `ValueType`: a sample type's name and unit (string indexes).
#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    /// Its name.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Its unit.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`.
#[derive(Clone, PartialEq, Message)]
pub struct PbSample {
    /// The stack, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// comm, pid, tid.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    /// Its key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// A string value (string index), or 0.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// A numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
}

/// `Mapping`.
#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    /// Its id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Start address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End address.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// Offset in the file.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The module's path (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Its build id in hex (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Symbolized.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// File names known.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Line numbers known.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Inlined frames expanded.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// `Location`.
#[derive(Clone, PartialEq, Message)]
pub struct Location {
    /// Its id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its mapping, or 0.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The address (module-relative: what the recording's frames keep).
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The functions at this address, innermost (inlined) first.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `Line`.
#[derive(Clone, PartialEq, Message)]
pub struct Line {
    /// The function.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The source line, or 0.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, Message)]
pub struct Function {
    /// Its id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Its name as in the binary (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Its source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// The string table being built.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.id("");
        s
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The profile message of `e`.
pub fn profile(e: &Export) -> PbProfile {
    let p = &e.profile;
    let mut strings = Strings::new();
    let sample_type: Vec<ValueType> = e
        .series
        .iter()
        .map(|s| ValueType {
            r#type: strings.id(&s.name),
            unit: strings.id(s.unit.name()),
        })
        .collect();
    // Shown by default: the first series in time (CPU, waits), else the first.
    let shown = e
        .series
        .iter()
        .position(|s| s.unit == super::Unit::Nanoseconds)
        .unwrap_or(0);
    let mut out = PbProfile {
        period_type: sample_type.get(shown).cloned(),
        default_sample_type: sample_type.get(shown).map_or(0, |t| t.r#type),
        sample_type,
        ..PbProfile::default()
    };
    // Functions by (name, file), mappings by module, locations by their frames.
    let mut functions: HashMap<(i64, i64), u64> = HashMap::new();
    let mut mappings: HashMap<&str, u64> = HashMap::new();
    let mut locations: HashMap<Vec<FrameId>, u64> = HashMap::new();
    let (kcomm, kpid, ktid) = (strings.id("comm"), strings.id("pid"), strings.id("tid"));
    let by_event: HashMap<u32, Vec<usize>> =
        e.series
            .iter()
            .enumerate()
            .fold(HashMap::new(), |mut m, (i, s)| {
                m.entry(s.event).or_default().push(i);
                m
            });
    let mut chain: Vec<FrameId> = Vec::new();
    for s in &p.samples {
        let Some(cols) = by_event.get(&s.event) else {
            continue;
        };
        let mut value = vec![0i64; e.series.len()];
        for &c in cols {
            let v = e.series.get(c).map_or(0, |ser: &Series| ser.of(s));
            if let Some(slot) = value.get_mut(c) {
                *slot = i64::try_from(v).unwrap_or(i64::MAX);
            }
        }
        if value.iter().all(|&v| v == 0) {
            continue;
        }
        let mut location_id = Vec::new();
        chain.clear();
        for &id in &s.stack {
            chain.push(id);
            if p.frame(id).inlined {
                continue;
            }
            let next = locations.len() as u64 + 1;
            let loc = match locations.get(&chain) {
                Some(&l) => l,
                None => {
                    let l = location(
                        e,
                        &chain,
                        next,
                        &mut strings,
                        &mut functions,
                        &mut mappings,
                        &mut out,
                    );
                    locations.insert(chain.clone(), l);
                    l
                }
            };
            location_id.push(loc);
            chain.clear();
        }
        // Inlined frames with no outer one (a cut stack): a location of their own.
        if !chain.is_empty() {
            let next = locations.len() as u64 + 1;
            let l = match locations.get(&chain) {
                Some(&l) => l,
                None => {
                    let l = location(
                        e,
                        &chain,
                        next,
                        &mut strings,
                        &mut functions,
                        &mut mappings,
                        &mut out,
                    );
                    locations.insert(chain.clone(), l);
                    l
                }
            };
            location_id.push(l);
        }
        out.sample.push(PbSample {
            location_id,
            value,
            label: vec![
                Label {
                    key: kcomm,
                    str: strings.id(p.comm(s)),
                    num: 0,
                },
                Label {
                    key: kpid,
                    str: 0,
                    num: i64::from(s.pid),
                },
                Label {
                    key: ktid,
                    str: 0,
                    num: i64::from(s.tid),
                },
            ],
        });
    }
    let comment = strings.id("exported by hwprof");
    out.comment.push(comment);
    out.string_table = strings.list;
    out
}

/// A new location (id `id`) for `frames` (inlined ones first, then the function they
/// are inlined into), with its functions and mapping.
fn location<'a>(
    e: &'a Export,
    frames: &[FrameId],
    id: u64,
    strings: &mut Strings,
    functions: &mut HashMap<(i64, i64), u64>,
    mappings: &mut HashMap<&'a str, u64>,
    out: &mut PbProfile,
) -> u64 {
    let p = &e.profile;
    let outer = frames.last().map(|&f| p.frame(f));
    let mapping_id = match outer.and_then(|f| f.module.as_deref()) {
        Some(module) => match mappings.get(module) {
            Some(&m) => m,
            None => {
                let m = out.mapping.len() as u64 + 1;
                let build_id = e.build_ids.get(module).map_or(0, |b| strings.id(&b.hex()));
                out.mapping.push(Mapping {
                    id: m,
                    filename: strings.id(module),
                    build_id,
                    has_functions: true,
                    has_filenames: true,
                    has_line_numbers: true,
                    has_inline_frames: true,
                    ..Mapping::default()
                });
                mappings.insert(module, m);
                m
            }
        },
        None => 0,
    };
    let line = frames
        .iter()
        .map(|&fid| {
            let f = p.frame(fid);
            let name = strings.id(&frame_name(f));
            let file = f.file.as_deref().map_or(0, |x| strings.id(x));
            let next = functions.len() as u64 + 1;
            let function_id = *functions.entry((name, file)).or_insert_with(|| {
                out.function.push(Function {
                    id: next,
                    name,
                    system_name: name,
                    filename: file,
                });
                next
            });
            Line {
                function_id,
                line: f.line.map_or(0, i64::from),
            }
        })
        .collect();
    out.location.push(Location {
        id,
        mapping_id,
        address: outer.map_or(0, |f| f.module_offset),
        line,
    });
    id
}

/// Writes `e` as a gzipped profile.proto.
pub fn write(e: &Export, w: impl Write) -> std::io::Result<()> {
    let bytes = profile(e).encode_to_vec();
    let mut gz = GzEncoder::new(w, Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}
