//! The reader's language, a leaf of the catalog: the per-request names
//! ([`super::names`]) and the catalog itself key on it, so it imports
//! nothing. Its texts (`t`, `tr`, ...) are in the catalog (`super`).

/// A reader's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Zh,
    En,
}

impl Lang {
    /// Both languages, in catalog order.
    pub const ALL: [Lang; 2] = [Lang::Zh, Lang::En];

    /// The language's place in the catalog's tables.
    pub(super) fn index(self) -> usize {
        match self {
            Lang::Zh => 0,
            Lang::En => 1,
        }
    }
}
