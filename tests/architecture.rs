//! The shape of `src/`: module imports form no cycle, and the layering rules
//! of `docs/src/development/architecture.md` hold. Reads the source text only (std, no
//! parser crate), so it runs in a blink and needs no database.
//!
//! What counts:
//!
//! - **Nodes** are the library's module files: `src/lib.rs` is `crate`,
//!   `src/a/mod.rs` and `src/a.rs` are `a`, `src/a/b.rs` is `a::b`. The
//!   binaries (`src/main.rs`, `src/bin/`) are other crates that reach the
//!   library only through `couponkeeper::…`, so they are not nodes. An inline
//!   `mod tests { … }` belongs to the node of its file (its imports count as
//!   the file's imports; `super::` inside it is resolved from the inline
//!   module).
//! - **Edges** come from every path in code (comments, doc comments and
//!   string literals removed) that starts with `crate::`, `super::` or
//!   `self::`, from every leaf of a `use` tree (`use crate::a::{b, c::d}` is
//!   two paths), from a path that starts with a name a `use` bound to a
//!   module (`use crate::store;` … `store::coupons::f()`), and from a path
//!   that starts with the name of a child module of the file. Each path is
//!   resolved to the longest module that exists (`crate::service::orders::
//!   place` → `service::orders`). A name a module only imports (`pub use
//!   state::AppState;` in `http`, or any other `use`) is followed to the
//!   module it comes from: `crate::http::AppState` → `http::state`, so a
//!   re-export neither hides a dependency nor invents one.
//! - **Not edges**: `mod x;` declarations and a module's paths to itself.
//!   A parent's paths into its children count like any other: a parent
//!   that uses (or re-exports) a child while the child uses the parent's
//!   items is a cycle, which is how `domain` → `i18n` → `domain` went
//!   unseen before (`i18n::names` → `domain::category` was a child of a
//!   module that the domain imported). Shared items live in a leaf child
//!   that the parent re-exports.
//! - Paths in macro input (`view! { … }`) count like any code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path such as `service::orders`; the library root is `crate`.
type Module = String;

/// One import: `from` uses `to`, seen at `file:line` as `path`.
#[derive(Debug, Clone)]
struct Edge {
    from: Module,
    to: Module,
    file: String,
    line: usize,
    path: String,
}

/// The module graph: every node and the edges between them.
struct Graph {
    modules: BTreeSet<Module>,
    edges: Vec<Edge>,
}

impl Graph {
    fn of_src() -> Graph {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        let mut sources = BTreeMap::new();
        for file in files {
            let rel = file
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "main.rs" || rel.starts_with("bin/") {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("readable source file");
            sources.insert(module_of(&rel), (format!("src/{rel}"), text));
        }
        Graph::of_sources(&sources)
    }

    /// The graph of these module sources: module → (file name, text).
    fn of_sources(sources: &BTreeMap<Module, (String, String)>) -> Graph {
        let modules: BTreeSet<Module> = sources.keys().cloned().collect();
        let parsed: BTreeMap<&Module, Parsed> = sources
            .iter()
            .map(|(m, (_, text))| (m, paths_in(m, &modules, text)))
            .collect();
        let bindings: BTreeMap<Module, &BTreeMap<String, Vec<String>>> = parsed
            .iter()
            .map(|(m, p)| ((*m).clone(), &p.bindings))
            .collect();
        let mut edges = Vec::new();
        for (module, (file, _)) in sources {
            for (path, line) in &parsed[module].paths {
                let to = target_of(path, &modules, &bindings);
                if to == *module {
                    continue;
                }
                edges.push(Edge {
                    from: module.clone(),
                    to,
                    file: file.clone(),
                    line: *line,
                    path: path.join("::"),
                });
            }
        }
        Graph { modules, edges }
    }

    fn adjacency(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut adj: BTreeMap<&str, BTreeSet<&str>> = self
            .modules
            .iter()
            .map(|m| (m.as_str(), BTreeSet::new()))
            .collect();
        for e in &self.edges {
            adj.entry(e.from.as_str())
                .or_default()
                .insert(e.to.as_str());
        }
        adj
    }

    /// The first place `from` imports `to`.
    fn evidence(&self, from: &str, to: &str) -> Option<&Edge> {
        self.edges.iter().find(|e| e.from == from && e.to == to)
    }

    /// Strongly connected components with more than one module, each sorted.
    fn cyclic_components(&self) -> Vec<Vec<String>> {
        let adj = self.adjacency();
        let mut comps: Vec<Vec<String>> = tarjan(&adj)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(String::from).collect();
                c.sort();
                c
            })
            .collect();
        comps.sort();
        comps
    }

    /// Every elementary cycle (at most `cap`), each starting at its smallest
    /// module.
    fn cycles(&self, cap: usize) -> Vec<Vec<String>> {
        let adj = self.adjacency();
        let mut out = Vec::new();
        for comp in self.cyclic_components() {
            let inside: BTreeSet<&str> = comp.iter().map(String::as_str).collect();
            for start in &comp {
                let mut stack = vec![start.as_str()];
                elementary_cycles(&adj, &inside, start, &mut stack, &mut out, cap);
            }
        }
        out
    }

    /// The report of the cycles: each component, its cycles and, for each
    /// edge of a cycle, where it comes from.
    fn cycle_report(&self) -> String {
        let comps = self.cyclic_components();
        let cycles = self.cycles(500);
        let mut s = format!(
            "{} strongly connected component(s) with more than one module, {} elementary cycle(s):\n",
            comps.len(),
            cycles.len()
        );
        for c in &comps {
            s += &format!("  component: {}\n", c.join(", "));
        }
        for (i, c) in cycles.iter().enumerate() {
            s += &format!("  cycle {}: {} -> {}\n", i + 1, c.join(" -> "), c[0]);
            for (k, from) in c.iter().enumerate() {
                let to = &c[(k + 1) % c.len()];
                if let Some(e) = self.evidence(from, to) {
                    s += &format!("      {from} -> {to}: {}:{} `{}`\n", e.file, e.line, e.path);
                }
            }
        }
        s
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("readable directory")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `lib.rs` → `crate`, `a/mod.rs` → `a`, `a/b.rs` → `a::b`.
fn module_of(rel: &str) -> Module {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    if rel == "lib" {
        return "crate".into();
    }
    rel.replace('/', "::")
}

fn segments(module: &str) -> Vec<String> {
    if module == "crate" {
        Vec::new()
    } else {
        module.split("::").map(String::from).collect()
    }
}

fn join(segs: &[String]) -> Module {
    if segs.is_empty() {
        "crate".into()
    } else {
        segs.join("::")
    }
}

fn top(m: &str) -> &str {
    m.split("::").next().unwrap_or(m)
}

/// The longest existing module a crate-absolute path names.
fn longest_module(path: &[String], modules: &BTreeSet<Module>) -> Module {
    (0..=path.len())
        .rev()
        .map(|n| join(&path[..n]))
        .find(|m| modules.contains(m) || m == "crate")
        .unwrap_or_else(|| "crate".into())
}

/// The module a path names, following names a module only imports to the
/// module they come from (at most 8 steps, so a `use` loop cannot hang).
fn target_of(
    path: &[String],
    modules: &BTreeSet<Module>,
    bindings: &BTreeMap<Module, &BTreeMap<String, Vec<String>>>,
) -> Module {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let m = longest_module(&path, modules);
        let n = segments(&m).len();
        let Some(name) = path.get(n) else { break };
        let Some(source) = bindings.get(&m).and_then(|b| b.get(name)) else {
            break;
        };
        let next = [&source[..], &path[n + 1..]].concat();
        if next == path {
            break;
        }
        path = next;
    }
    longest_module(&path, modules)
}

/// What one module's source says: the crate paths it names, and the names
/// its `use` declarations bind (name → crate-absolute path).
struct Parsed {
    paths: Vec<(Vec<String>, usize)>,
    bindings: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other,
}

/// The tokens of Rust source that matter here, with their line numbers:
/// comments, string, char and number literals and lifetimes are dropped.
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Skips a "…" literal whose opening quote is at `i`; returns the index
    // after it.
    let skip_string = |mut i: usize, line: &mut usize| {
        i += 1;
        while i < c.len() && c[i] != '"' {
            if c[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(i, &mut line);
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                // '\n', '\'', '\u{…}': skip the escaped character first.
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or label: 'a, 'static.
                i += 1;
                while at(i).is_alphanumeric() || at(i) == '_' {
                    i += 1;
                }
            }
        } else if ch.is_ascii_digit() {
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix && (at(i) == '"' || at(i) == '#') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    // r#"…"#: ends at a quote followed by as many hashes.
                    i += hashes + 1;
                    loop {
                        if i >= c.len() {
                            break;
                        }
                        if c[i] == '"' && (0..hashes).all(|k| at(i + 1 + k) == '#') {
                            i += 1 + hashes;
                            break;
                        }
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                    continue;
                }
                if word == "r" && hashes == 1 {
                    // A raw identifier: r#type.
                    i += 1;
                    let start = i;
                    while at(i).is_alphanumeric() || at(i) == '_' {
                        i += 1;
                    }
                    out.push((Tok::Ident(c[start..i].iter().collect()), line));
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = skip_string(i, &mut line);
                continue;
            }
            if word == "b" && at(i) == '\'' {
                i += 1;
                if at(i) == '\\' {
                    i += 1;
                }
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                continue;
            }
            out.push((Tok::Ident(word), line));
        } else {
            let tok = match ch {
                ':' if at(i + 1) == ':' => {
                    i += 1;
                    Tok::Sep
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                ';' => Tok::Semi,
                '*' => Tok::Star,
                _ => Tok::Other,
            };
            out.push((tok, line));
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

/// The leaves of the use tree at `toks[i..]` (after `use`), each with the
/// name it binds (`None` for a glob); returns the index after the tree.
fn use_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    if toks.get(i).map(|t| &t.0) == Some(&Tok::Sep) {
        // `use ::extern_crate::…`
        i += 1;
    }
    let depth = prefix.len();
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(seg)) => {
                let seg = seg.clone();
                i += 1;
                if toks.get(i).map(|t| &t.0) == Some(&Tok::Sep) {
                    prefix.push(seg);
                    i += 1;
                    continue;
                }
                let mut path = prefix.clone();
                let mut bound = seg.clone();
                if seg == "self" {
                    bound = prefix.last().cloned().unwrap_or_default();
                } else {
                    path.push(seg);
                }
                if ident(toks.get(i)) == Some("as") {
                    bound = ident(toks.get(i + 1)).unwrap_or("_").to_string();
                    i += 2;
                }
                out.push((path, Some(bound)));
                break;
            }
            Some(Tok::Star) => {
                out.push((prefix.clone(), None));
                i += 1;
                break;
            }
            Some(Tok::Open) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Close) => {
                            i += 1;
                            break;
                        }
                        Some(Tok::Comma) => i += 1,
                        None => break,
                        _ => i = use_tree(toks, i, prefix, out),
                    }
                }
                break;
            }
            _ => break,
        }
    }
    prefix.truncate(depth);
    i
}

/// Every path `module`'s source names inside the crate, made absolute
/// (segments after `crate`), with its line; and the names its `use`s bind.
fn paths_in(module: &str, modules: &BTreeSet<Module>, text: &str) -> Parsed {
    let toks = tokenize(text);
    let file_mod = segments(module);
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut bindings: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut out = Vec::new();

    let current = |inline: &[(String, usize)]| {
        let mut m = file_mod.clone();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let resolve = |segs: &[String],
                   cur: &[String],
                   in_inline: bool,
                   aliases: &BTreeMap<String, Vec<String>>|
     -> Option<Vec<String>> {
        let first = segs.first()?;
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "self" => Some([cur, &segs[1..]].concat()),
            "super" => {
                let mut base = cur.to_vec();
                let mut k = 0;
                while segs.get(k).map(String::as_str) == Some("super") {
                    base.pop();
                    k += 1;
                }
                Some([&base[..], &segs[k..]].concat())
            }
            _ => {
                if let Some(target) = aliases.get(first) {
                    return Some([&target[..], &segs[1..]].concat());
                }
                let child = [cur, &segs[..1]].concat();
                (!in_inline && modules.contains(&join(&child))).then(|| [cur, segs].concat())
            }
        }
    };

    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        match tok {
            Tok::Open => {
                depth += 1;
                i += 1;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(name), Some((Tok::Open, _))) =
                    (ident(toks.get(i + 1)), toks.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.to_string(), depth));
                    i += 3;
                } else {
                    // `mod x;` declares, it does not import.
                    i += 1;
                }
            }
            Tok::Ident(w) if w == "use" => {
                let mut leaves = Vec::new();
                let end = use_tree(&toks, i + 1, &mut Vec::new(), &mut leaves);
                let cur = current(&inline);
                for (path, bound) in leaves {
                    if let Some(abs) = resolve(&path, &cur, !inline.is_empty(), &aliases) {
                        if let Some(name) = bound {
                            if modules.contains(&join(&abs)) && !abs.is_empty() {
                                aliases.insert(name.clone(), abs.clone());
                            }
                            if inline.is_empty() && !abs.is_empty() {
                                bindings.insert(name, abs.clone());
                            }
                        }
                        out.push((abs, *line));
                    }
                }
                i = end.max(i + 1);
            }
            Tok::Ident(first) if i == 0 || toks[i - 1].0 != Tok::Sep => {
                // A path in code: ident (:: ident)*.
                let mut segs = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::Sep) {
                    match ident(toks.get(j + 1)) {
                        Some(s) => {
                            segs.push(s.to_string());
                            j += 2;
                        }
                        None => break,
                    }
                }
                if segs.len() > 1 {
                    let cur = current(&inline);
                    if let Some(abs) = resolve(&segs, &cur, !inline.is_empty(), &aliases) {
                        out.push((abs, *line));
                    }
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
    Parsed {
        paths: out,
        bindings,
    }
}

/// Tarjan's strongly connected components.
fn tarjan<'a>(adj: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct St<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        on_stack: BTreeSet<&'a str>,
        stack: Vec<&'a str>,
        next: usize,
        comps: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, adj: &BTreeMap<&'a str, BTreeSet<&'a str>>, st: &mut St<'a>) {
        st.index.insert(v, st.next);
        st.low.insert(v, st.next);
        st.next += 1;
        st.stack.push(v);
        st.on_stack.insert(v);
        for &w in adj.get(v).into_iter().flatten() {
            if !st.index.contains_key(w) {
                visit(w, adj, st);
                let lw = st.low[w];
                let lv = st.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if st.on_stack.contains(w) {
                let iw = st.index[w];
                let lv = st.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if st.low[v] == st.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = st.stack.pop() {
                st.on_stack.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            st.comps.push(comp);
        }
    }
    let mut st = St {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        comps: Vec::new(),
    };
    for &v in adj.keys() {
        if !st.index.contains_key(v) {
            visit(v, adj, &mut st);
        }
    }
    st.comps
}

/// Cycles through `stack[0]` whose other modules are all greater than it,
/// so each cycle is found once, from its smallest module.
fn elementary_cycles<'a>(
    adj: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    inside: &BTreeSet<&'a str>,
    start: &str,
    stack: &mut Vec<&'a str>,
    out: &mut Vec<Vec<String>>,
    cap: usize,
) {
    let v = *stack.last().expect("non-empty path");
    for &w in adj.get(v).into_iter().flatten() {
        if out.len() >= cap {
            return;
        }
        if w == start {
            out.push(stack.iter().map(|s| s.to_string()).collect());
        } else if inside.contains(w) && w > start && !stack.contains(&w) {
            stack.push(w);
            elementary_cycles(adj, inside, start, stack, out, cap);
            stack.pop();
        }
    }
}

/// Cycles that are known and waiting, each with the reason it is still
/// here. Any other cycle fails the test, and so does an entry whose cycle is
/// gone (delete the entry then): the list can only shrink. It is empty:
/// `src/` has no import cycle, parents and children included.
const WAITING_CYCLES: &[(&[&str], &str)] = &[];

#[test]
fn module_imports_form_no_cycle() {
    let g = Graph::of_src();
    let found = g.cyclic_components();
    let waiting: Vec<Vec<String>> = WAITING_CYCLES
        .iter()
        .map(|(c, _)| c.iter().map(|m| m.to_string()).collect())
        .collect();
    let unexpected: Vec<&Vec<String>> = found.iter().filter(|c| !waiting.contains(c)).collect();
    assert!(
        unexpected.is_empty(),
        "import cycles in src/ ({} not waiting: {:?}):\n{}",
        unexpected.len(),
        unexpected,
        g.cycle_report()
    );
    let gone: Vec<&Vec<String>> = waiting.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        gone.is_empty(),
        "these cycles are gone; delete them from WAITING_CYCLES: {gone:?}"
    );
}

#[test]
fn each_layer_imports_only_what_the_code_map_allows() {
    // (layer, layers it must not import)
    // Pages and handlers reach the database only through the service,
    // and the jobs drive the service: none of them names a store type,
    // except the wire shapes of `store::views` (a coupon and an event as
    // the API shows them), which the store also writes into the webhook
    // outbox in the same transaction as the change.
    let allowed =
        |from: &str, to: &str| to == "store::views" && ["api", "web"].contains(&top(from));
    let rules: [(&str, &[&str]); 6] = [
        (
            "domain",
            &["store", "service", "api", "web", "jobs", "http"],
        ),
        ("store", &["service", "api", "web", "http"]),
        ("service", &["api", "web", "http"]),
        ("api", &["web", "store"]),
        ("web", &["api", "store"]),
        ("jobs", &["store", "api", "web"]),
    ];
    let g = Graph::of_src();
    let mut broken = Vec::new();
    for e in &g.edges {
        for (layer, forbidden) in rules {
            if top(&e.from) == layer && forbidden.contains(&top(&e.to)) && !allowed(&e.from, &e.to)
            {
                broken.push(format!(
                    "{} -> {}: {}:{} `{}`",
                    e.from, e.to, e.file, e.line, e.path
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{} import(s) break the layering rules:\n  {}",
        broken.len(),
        broken.join("\n  ")
    );
}

#[test]
fn the_graph_sees_use_trees_qualified_paths_aliases_re_exports_and_a_planted_cycle() {
    let src = |pairs: &[(&str, &str)]| -> BTreeMap<Module, (String, String)> {
        pairs
            .iter()
            .map(|(m, t)| (m.to_string(), (format!("{m}.rs"), t.to_string())))
            .collect()
    };
    let g = Graph::of_sources(&src(&[
        ("crate", "pub mod a; pub mod b; pub mod c; pub mod d;"),
        ("a", "pub mod x;"),
        (
            "a::x",
            r##"
            use crate::{b::{self, Thing}, c};
            // use crate::d; a comment does not import
            const S: &str = "crate::d::Q";
            const R: &str = r#"use crate::d;"#;
            fn f<'t>(_: &'t str) -> char { let _ = c::f(); 'x' }
            mod tests { use super::*; use super::super::Parent; }
            "##,
        ),
        ("b", "fn g() { crate::a::x::f(); crate::c::Other::new(); }"),
        ("c", "use super::d::Item as Other;"),
        ("d", "fn h() { let _ = b'a'; }"),
    ]));
    let pairs: BTreeSet<(String, String)> = g
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    let expect: BTreeSet<(String, String)> = [
        ("a::x", "b"),
        ("a::x", "c"),
        ("a::x", "a"),
        ("b", "a::x"),
        ("b", "d"),
        ("c", "d"),
    ]
    .iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
    assert_eq!(pairs, expect);
    assert_eq!(g.cyclic_components(), vec![vec!["a::x", "b"]]);
    assert_eq!(
        g.cycles(10),
        vec![vec!["a::x".to_string(), "b".to_string()]]
    );
    assert!(g.cycle_report().contains("b -> a::x: b.rs:1 `a::x::f`"));
}

/// Every relative link and image in the README and the book (`docs/`, but
/// not its built `docs/book/`) names a file that exists, relative to the
/// Markdown file; `#fragment`s are not checked. Links and images in code
/// (fenced blocks, `inline spans`) are not links.
#[test]
fn relative_links_in_the_readme_and_the_book_name_files_that_exist() {
    fn markdown(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable directory") {
            let p = entry.expect("directory entry").path();
            if p.is_dir() && !p.ends_with("docs/book") {
                markdown(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    markdown(&root.join("docs"), &mut files);
    assert!(files.len() > 10, "the book's pages are found: {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable Markdown");
        let mut fenced = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            // Drop inline code spans: every other piece between backticks.
            let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            for (at, _) in prose.match_indices("](") {
                let rest = &prose[at + 2..];
                let end = rest.find([')', ' ']).unwrap_or(rest.len());
                let target = &rest[..end];
                let path = target.split('#').next().unwrap_or("");
                let external = ["http://", "https://", "mailto:"]
                    .iter()
                    .any(|s| target.starts_with(s));
                if external || path.is_empty() {
                    continue;
                }
                let dir = file.parent().expect("a file has a folder");
                if !dir.join(path).exists() {
                    let rel = file.strip_prefix(root).unwrap_or(file);
                    broken.push(format!("{}:{}: {target}", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken relative links:\n{}",
        broken.join("\n")
    );
}
