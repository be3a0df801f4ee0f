//! The console's search box: one query matched against coupon ids,
//! coupon codes (any case, dashes optional), order numbers and user ids,
//! in the live and archive tables.

use serde::Serialize;
use utoipa::ToSchema;

use super::live_or_archived_coupon;
use crate::domain::FieldError;
use crate::domain::coupon::effective_status;
use crate::domain::time::from_ms;
use crate::service::{Service, ServiceError};
use crate::store::orders;
use crate::store::search;

/// Longest search query.
const MAX_QUERY_LEN: usize = 128;

/// One thing a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SearchHit {
    /// `coupon`, `order` or `user`.
    pub kind: String,
    /// The coupon id, order number or user id.
    pub key: String,
    /// What to show in a list: the coupon code, order number or user id.
    pub title: String,
    /// The catalog key of the hit's status (coupon or order), if it has one.
    pub status_key: Option<&'static str>,
    /// The user the hit belongs to.
    pub user_id: String,
}

/// What a console search found: exactly one hit opens its page, several
/// are listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "value", rename_all = "snake_case")]
pub enum SearchOutcome {
    /// Exactly one coupon (its id): open the coupon page.
    Coupon(String),
    /// Exactly one order (its number): open the order page.
    Order(String),
    /// Exactly one user (their id): open the user page.
    User(String),
    /// Several hits: list them.
    Many(Vec<SearchHit>),
    /// Nothing matched.
    Nothing,
}

/// The coupon code a query may be: upper case, with the dashes put back
/// when they were left out (`k7qm3xpa9rtd` -> `K7QM-3XPA-9RTD`).
fn as_code(q: &str) -> String {
    let up = q.to_ascii_uppercase();
    if up.len() == 12 && up.chars().all(|c| c.is_ascii_alphanumeric()) {
        format!("{}-{}-{}", &up[0..4], &up[4..8], &up[8..12])
    } else {
        up
    }
}

impl Service {
    /// The console's search box: a coupon id, a coupon code (any case,
    /// dashes optional), an order number or a user id, in the live and
    /// archive tables. One hit names its page; several are listed.
    pub async fn search(&self, query: &str) -> Result<SearchOutcome, ServiceError> {
        let q = query.trim().to_string();
        if q.is_empty() || q.len() > MAX_QUERY_LEN || q.chars().any(char::is_control) {
            return Err(
                FieldError::new("q", format!("must be 1 to {MAX_QUERY_LEN} characters")).into(),
            );
        }
        let now = self.now();
        let hits = self
            .read(move |c| {
                let q = q.clone();
                Box::pin(async move {
                    let mut hits: Vec<SearchHit> = Vec::new();
                    let mut coupon_ids = Vec::new();
                    if search::coupon_exists(c, &q).await? {
                        coupon_ids.push(q.clone());
                    }
                    if let Some(id) = search::coupon_id_by_code(c, &as_code(&q)).await?
                        && !coupon_ids.contains(&id)
                    {
                        coupon_ids.push(id);
                    }
                    for id in coupon_ids {
                        if let Some(r) = live_or_archived_coupon(c, &id).await? {
                            let st = effective_status(r.status, from_ms(r.ends_at), now);
                            hits.push(SearchHit {
                                kind: "coupon".into(),
                                title: r.code,
                                status_key: Some(st.label_key()),
                                user_id: r.user_id,
                                key: r.id,
                            });
                        }
                    }
                    if let Some(o) = orders::get(c, &q).await? {
                        hits.push(SearchHit {
                            kind: "order".into(),
                            title: o.order_no.clone(),
                            status_key: Some(o.status.label_key()),
                            user_id: o.user_id,
                            key: o.order_no,
                        });
                    }
                    if search::user_exists(c, &q).await? {
                        hits.push(SearchHit {
                            kind: "user".into(),
                            title: q.clone(),
                            status_key: None,
                            user_id: q.clone(),
                            key: q.clone(),
                        });
                    }
                    Ok(hits)
                })
            })
            .await?;
        Ok(match hits.len() {
            0 => SearchOutcome::Nothing,
            1 => {
                let h = hits.into_iter().next().map(|h| (h.kind, h.key));
                match h {
                    Some((kind, key)) if kind == "coupon" => SearchOutcome::Coupon(key),
                    Some((kind, key)) if kind == "order" => SearchOutcome::Order(key),
                    Some((_, key)) => SearchOutcome::User(key),
                    None => SearchOutcome::Nothing,
                }
            }
            _ => SearchOutcome::Many(hits),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn codes_are_matched_in_any_case_with_or_without_dashes() {
        assert_eq!(as_code("k7qm-3xpa-9rtd"), "K7QM-3XPA-9RTD");
        assert_eq!(as_code("k7qm3xpa9rtd"), "K7QM-3XPA-9RTD");
        assert_eq!(as_code("P123"), "P123");
    }
}
