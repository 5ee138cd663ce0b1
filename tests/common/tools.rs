//! The tools tests take their inputs apart with (binutils, util-linux).

use std::path::Path;
use std::process::{Command, Stdio};

use super::{Why, skip};

/// True when `tool ARG` runs and succeeds (`ARG` is a version flag).
pub fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether every `(tool, version flag)` of `list` runs; else false after a skip
/// ([`Why::Setup`]) naming the first that does not.
#[track_caller]
pub fn require_tools(list: &[(&str, &str)]) -> bool {
    for (tool, arg) in list {
        if !have(tool, arg) {
            skip(
                Why::Setup,
                format_args!("{tool} not installed (.ci/run installs it)"),
            );
            return false;
        }
    }
    true
}

/// The build id of `elf` in hex, from `readelf -n`.
pub fn build_id_hex(elf: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(elf)
        .output()
        .expect("readelf (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build id in {}", elf.display()))
        .trim()
        .to_string()
}
