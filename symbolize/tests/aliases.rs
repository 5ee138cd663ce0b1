//! Names among aliases (several function symbols at one address) are perf's choice
//! (`choose_best_symbol` in tools/perf/util/symbol.c): global over local, not weak over
//! weak, fewer leading underscores, the longer name. A small C program built here with
//! `__attribute__((alias))` has one address per rule, each with aliases whose other
//! orders would pick another name.

mod common;

use common::{compile, file_offset, scratch};
use hwprof_symbolize::locate::Config;
use hwprof_symbolize::{Locator, Module, Symbolizer};

/// Each function and its aliases; `want` is perf's name for the address.
const SRC: &str = r#"
/* global beats local, even with more underscores */
int __attribute__((used, noinline)) __impl_one(int x) { return x * 3 + 1; }
static int one_local(int x) __attribute__((alias("__impl_one"), used));
static int a_one(int x) __attribute__((alias("__impl_one"), used));

/* not weak beats weak: a local wins over a weak global */
static int __attribute__((used, noinline)) two_local_body(int x) { return x * 5 + 2; }
int two(int x) __attribute__((weak, alias("two_local_body")));
int t2(int x) __attribute__((weak, alias("two_local_body")));

/* among globals: fewer leading underscores */
int __attribute__((used, noinline)) __three(int x) { return x * 7 + 3; }
int three(int x) __attribute__((alias("__three")));
int _three_x(int x) __attribute__((alias("__three")));

/* then the longer name */
int __attribute__((used, noinline)) four(int x) { return x * 11 + 4; }
int four_longer(int x) __attribute__((alias("four")));
int f4(int x) __attribute__((alias("four")));

int main(int argc, char **argv) {
    (void)argv;
    return __impl_one(argc) + two(argc) + three(argc) + four(argc);
}
"#;

/// (a symbol at the address, perf's name for it).
const WANT: [(&str, &str); 4] = [
    ("__impl_one", "__impl_one"),
    ("two_local_body", "two_local_body"),
    ("__three", "three"),
    ("four", "four_longer"),
];

#[test]
fn aliases_are_named_as_perf_names_them() {
    let d = scratch("aliases");
    for (name, flags) in [("plain", &["-O1"][..]), ("dwarf", &["-O1", "-g"][..])] {
        let Some(exe) = compile(&d, name, SRC, flags) else {
            return;
        };
        let l = Locator::new(Config::default());
        let mut sym = Symbolizer::with_locator(true, false, l);
        let m = sym.module_id(Module::File {
            path: exe.to_str().unwrap().to_string(),
            build_id: None,
        });
        for (at, want) in WANT {
            let off = file_offset(&exe, hwprof_testkit::nm_address(&exe, at));
            let frames = sym.resolve_one(m, off + 1, false);
            let got = frames.last().and_then(|f| f.function.clone());
            assert_eq!(got.as_deref(), Some(want), "{name}: the function at {at}");
        }
    }
}
