//! What people call a coupon, a template or a campaign: its code or its
//! name, looked up by id for pages that must never show `cpn_…`, `tpl_…`
//! or `cmp_…`. Primary-key lookups, bounded per call.

use std::collections::HashMap;

use crate::domain::ids::{CampaignId, CouponId, TemplateId};
use sqlx::AnyConnection;

/// Most ids one call looks up per table.
pub const MAX_LOOKUP: usize = 1000;

/// `SELECT id, <col> FROM <table> WHERE id IN (…)` for `ids` (deduplicated,
/// at most [`MAX_LOOKUP`]), plus `extra` tables with the same columns.
async fn lookup(
    conn: &mut AnyConnection,
    tables: &[&str],
    col: &str,
    ids: &[&str],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let mut ids: Vec<&str> = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(MAX_LOOKUP);
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    let list = marks.join(", ");
    let sql = tables
        .iter()
        .map(|t| format!("SELECT id, {col} FROM {t} WHERE id IN ({list})"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let mut q = sqlx::query_as::<_, (String, String)>(&sql);
    for id in &ids {
        q = q.bind(*id);
    }
    Ok(q.fetch_all(conn).await?.into_iter().collect())
}

/// The codes of the coupons `ids`, live or archived; unknown ids are left
/// out.
pub async fn coupon_codes(
    conn: &mut AnyConnection,
    ids: &[&CouponId],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let ids: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
    lookup(conn, &["coupons", "coupons_archive"], "code", &ids).await
}

/// The names of the templates `ids`.
pub async fn template_names(
    conn: &mut AnyConnection,
    ids: &[&TemplateId],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let ids: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
    lookup(conn, &["templates"], "name", &ids).await
}

/// The names of the presale campaigns `ids`.
pub async fn campaign_names(
    conn: &mut AnyConnection,
    ids: &[&CampaignId],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let ids: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
    lookup(conn, &["presale_campaigns"], "name", &ids).await
}

/// Codes and names of every server id among `ids` (coupons `cpn_`,
/// templates `tpl_`, campaigns `cmp_`, wake-up rules `wkr_`, webhook
/// subscribers `whk_` by their address, and code batches `cbt_` by their
/// template's name), in one map.
pub async fn people_names(
    conn: &mut AnyConnection,
    ids: &[&str],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let of = |p: &str| -> Vec<&str> { ids.iter().copied().filter(|i| i.starts_with(p)).collect() };
    let mut out = lookup(conn, &["coupons", "coupons_archive"], "code", &of("cpn_")).await?;
    out.extend(lookup(conn, &["templates"], "name", &of("tpl_")).await?);
    out.extend(lookup(conn, &["presale_campaigns"], "name", &of("cmp_")).await?);
    out.extend(lookup(conn, &["wakeup_rules"], "name", &of("wkr_")).await?);
    out.extend(lookup(conn, &["webhook_subscribers"], "url", &of("whk_")).await?);
    out.extend(
        lookup(
            conn,
            &["(SELECT b.id AS id, t.name AS name FROM code_batches b \
                JOIN templates t ON t.id = b.template_id) batch_names"],
            "name",
            &of("cbt_"),
        )
        .await?,
    );
    Ok(out)
}

/// Most campaigns a filter's choice list offers.
pub const MAX_CAMPAIGN_CHOICES: i64 = 200;

/// `(id, name)` of the campaigns whose final payment starts latest, for a
/// filter's choice list (campaigns number in the hundreds; the read is
/// bounded by [`MAX_CAMPAIGN_CHOICES`]).
pub async fn campaign_choices(
    conn: &mut AnyConnection,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, name FROM presale_campaigns ORDER BY final_payment_starts_at DESC, id LIMIT $1",
    )
    .bind(MAX_CAMPAIGN_CHOICES)
    .fetch_all(conn)
    .await
}
