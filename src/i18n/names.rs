//! Names of the shop's category codes for people: `phones` is 手机 on a
//! Chinese page and Phones on an English one, as an operator named it
//! (`category_names`, see [`crate::service::categories`]); a code without
//! a name is shown as the code.
//!
//! Like the time zone ([`super::zone`]), the names of a request are set
//! once around the page handlers by [`scope`] and read by the helpers
//! here, so no page threads them through its functions. Outside a scope
//! (the API, jobs) codes stay codes.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use super::Lang;
use crate::domain::category::CategoryName;

/// Every named category, by code.
#[derive(Debug, Clone, Default)]
pub struct CategoryNames {
    by_code: HashMap<String, CategoryName>,
}

impl CategoryNames {
    pub fn new(list: Vec<CategoryName>) -> Self {
        CategoryNames {
            by_code: list
                .into_iter()
                .map(|n| (n.code().to_string(), n))
                .collect(),
        }
    }

    /// The name of `code` in `l`, if it has one.
    pub fn get(&self, l: Lang, code: &str) -> Option<&str> {
        self.by_code.get(code).map(|n| match l {
            Lang::Zh => n.zh(),
            Lang::En => n.en(),
        })
    }

    /// Every named category, by code.
    pub fn list(&self) -> Vec<&CategoryName> {
        let mut v: Vec<&CategoryName> = self.by_code.values().collect();
        v.sort_by(|a, b| a.code().cmp(b.code()));
        v
    }
}

tokio::task_local! {
    static NAMES: Arc<CategoryNames>;
}

/// Runs `f` with `names` as the names its pages show.
pub async fn scope<F: Future>(names: Arc<CategoryNames>, f: F) -> F::Output {
    NAMES.scope(names, f).await
}

/// What people call `code` in `l`: its name, else the code.
pub fn category(l: Lang, code: &str) -> String {
    NAMES
        .try_with(|n| n.get(l, code).map(str::to_string))
        .ok()
        .flatten()
        .unwrap_or_else(|| code.to_string())
}

/// Several categories by name, joined by `separator`.
pub fn categories(l: Lang, codes: &[String], separator: &str) -> String {
    codes
        .iter()
        .map(|c| category(l, c))
        .collect::<Vec<_>>()
        .join(separator)
}
