//! The message catalog (`src/i18n`): every key in both languages with the
//! same arguments, every key the code names present, one word per domain
//! term, and no words for people written outside the catalog.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use couponkeeper::i18n::{self, Lang};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut files,
    );
    files.sort();
    files
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|s| (p, s)))
        .collect()
}

/// The code of a file before its `#[cfg(test)]` module, without comments.
fn code_lines(source: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push((n + 1, line));
    }
    out
}

/// The string literals of a line (plain `"…"` literals; escapes kept).
fn literals(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    let mut in_char = false;
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') && !in_char => break,
            '\'' => {
                // Skip char literals such as '"' so they do not open a string.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("\"'") || rest.starts_with("\\\"'") {
                    for _ in 0..rest.find('\'').map(|i| i + 1).unwrap_or(0) {
                        chars.next();
                    }
                }
                in_char = false;
            }
            '"' => {
                let mut lit = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            lit.push(c);
                            if let Some(n) = chars.next() {
                                lit.push(n);
                            }
                        }
                        '"' => break,
                        _ => lit.push(c),
                    }
                }
                out.push(lit);
            }
            _ => {}
        }
    }
    out
}

fn is_cjk(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3000}'..='\u{303f}').contains(&c)
}

/// Files whose Chinese is data, not words for people: the demo shop's own
/// product and template names.
const DATA_FILES: [&str; 1] = ["demo"];

#[test]
fn every_catalog_file_parses_in_both_languages() {
    let errors = i18n::parse_errors();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn every_key_has_both_languages_with_the_same_arguments() {
    let zh: BTreeMap<String, &str> = i18n::keys(Lang::Zh).into_iter().collect();
    let en: BTreeMap<String, &str> = i18n::keys(Lang::En).into_iter().collect();
    let only_zh: Vec<_> = zh.keys().filter(|k| !en.contains_key(*k)).collect();
    let only_en: Vec<_> = en.keys().filter(|k| !zh.contains_key(*k)).collect();
    assert!(only_zh.is_empty(), "keys without English: {only_zh:?}");
    assert!(only_en.is_empty(), "keys without Chinese: {only_en:?}");
    let mut mismatched = Vec::new();
    for (key, file) in &zh {
        if en.get(key) != Some(file) {
            mismatched.push(format!("{key}: zh/{file}.ftl but en/{:?}", en.get(key)));
        }
        let (vz, ve) = (
            i18n::variables(Lang::Zh, key),
            i18n::variables(Lang::En, key),
        );
        if key.starts_with("legacy-") {
            // Rows stored as prose before the catalog: each language shows
            // the text written in it, `{ $zh }` / `{ $en }`.
            if vz != ["zh"] || ve != ["en"] {
                mismatched.push(format!("{key}: a legacy key shows {{ $zh }} / {{ $en }}"));
            }
        } else if vz != ve {
            mismatched.push(format!("{key}: zh uses {vz:?}, en uses {ve:?}"));
        }
        for l in Lang::ALL {
            if i18n::plain(l, key).is_none_or(|t| t.trim().is_empty()) {
                mismatched.push(format!("{key}: empty in {}", l.code()));
            }
        }
    }
    assert!(mismatched.is_empty(), "{mismatched:#?}");
    let count = i18n::keys(Lang::Zh).len();
    assert_eq!(count, zh.len(), "a key is defined twice");
}

#[test]
fn every_key_the_code_names_is_in_the_catalog() {
    let callers = [".t(\"", "tr!(", "msg!(\"", "Msg::new(\""];
    let mut missing = BTreeSet::new();
    let mut named = 0;
    for (path, source) in sources() {
        if path.to_string_lossy().contains("/src/i18n/") {
            continue;
        }
        let flat: String = source.split_whitespace().collect::<Vec<_>>().join(" ");
        for caller in callers {
            for (i, _) in flat.match_indices(caller) {
                let rest = &flat[i + caller.len()..];
                let rest = if caller == "tr!(" {
                    // `tr!(l, "key", …)`: the key is the first literal.
                    match rest.split_once(", \"") {
                        Some((lang, after)) if !lang.contains('(') => after,
                        _ => continue,
                    }
                } else {
                    rest
                };
                let Some(key) = rest.split('"').next() else {
                    continue;
                };
                named += 1;
                if !i18n::has(key) {
                    missing.insert(format!("{key} ({})", path.display()));
                }
            }
        }
    }
    assert!(
        named > 500,
        "the scan found only {named} keys: is it broken?"
    );
    assert!(missing.is_empty(), "keys not in the catalog: {missing:#?}");
}

#[test]
fn the_domain_enums_have_their_words_in_the_catalog() {
    use couponkeeper::domain::coupon::CouponStatus;
    let mut keys: Vec<&str> = couponkeeper::service::Refusal::ALL
        .iter()
        .map(|r| r.message_key())
        .collect();
    keys.extend(CouponStatus::ALL.iter().map(|s| s.label_key()));
    keys.extend(
        couponkeeper::domain::order::OrderStatus::ALL
            .iter()
            .map(|s| s.label_key()),
    );
    keys.extend(
        couponkeeper::domain::coupon::CouponSource::ALL
            .iter()
            .map(|s| s.label_key()),
    );
    keys.extend(
        couponkeeper::domain::discount::DiscountKind::ALL
            .iter()
            .map(|k| k.label_key()),
    );
    keys.extend(
        couponkeeper::domain::event::EventAction::ALL
            .iter()
            .map(|a| a.label_key()),
    );
    keys.extend(
        couponkeeper::domain::event::Job::ALL
            .iter()
            .map(|j| j.label_key()),
    );
    let staff_actions: Vec<String> = couponkeeper::service::staff::actions::ALL
        .iter()
        .filter_map(|a| couponkeeper::service::staff::actions::label_key(a))
        .collect();
    keys.extend(staff_actions.iter().map(String::as_str));
    let missing: Vec<_> = keys.into_iter().filter(|k| !i18n::has(k)).collect();
    assert!(missing.is_empty(), "{missing:?}");
}

#[test]
fn no_words_for_people_are_written_outside_the_catalog() {
    let mut found = Vec::new();
    for (path, source) in sources() {
        let shown = path.to_string_lossy().to_string();
        if shown.contains("/src/i18n/")
            || DATA_FILES
                .iter()
                .any(|d| shown.contains(&format!("/src/{d}")))
        {
            continue;
        }
        for (n, line) in code_lines(&source) {
            for lit in literals(line) {
                if lit.chars().any(is_cjk) {
                    found.push(format!("{shown}:{n}: {lit}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "Chinese outside the catalog:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_domain_term_has_one_word_in_each_language_everywhere() {
    // Terms (terms.ftl) are the words for the domain's states and kinds. A
    // message elsewhere whose whole text is a term's word in one language
    // must be that term's word in the other too: "已锁定" and "锁定中" for
    // the same "locked" is the drift this stops.
    let keys = i18n::keys(Lang::Zh);
    let terms: Vec<&String> = keys
        .iter()
        .filter(|(_, f)| *f == "terms")
        .map(|(k, _)| k)
        .collect();
    let others: Vec<&String> = keys
        .iter()
        .filter(|(_, f)| *f != "terms")
        .map(|(k, _)| k)
        .collect();
    let text = |l: Lang, k: &str| i18n::plain(l, k).unwrap_or_default().trim().to_lowercase();
    let mut drift = Vec::new();
    for term in &terms {
        let (zh, en) = (text(Lang::Zh, term), text(Lang::En, term));
        for other in &others {
            let (ozh, oen) = (text(Lang::Zh, other), text(Lang::En, other));
            if (ozh == zh) != (oen == en) {
                drift.push(format!(
                    "{other} = {ozh} / {oen}, but the term {term} is {zh} / {en}"
                ));
            }
        }
    }
    assert!(drift.is_empty(), "{drift:#?}");
}
