//! The CSV export of the console's coupon list (RFC 4180, with formulas
//! neutralised), read in keyset batches.

use super::{CouponPage, MAX_PAGE};
use crate::domain::filters::{
    CouponExportQuery, CouponFilter, CouponListQuery, MAX_COUPON_EXPORT_ROWS,
};
use crate::domain::money::Cents;
use crate::service::views::CouponView;
use crate::service::{Service, ServiceError};

/// Largest CSV export.
pub const MAX_EXPORT_ROWS: usize = MAX_COUPON_EXPORT_ROWS;
/// Rows per batch of a CSV export.
const EXPORT_BATCH: i64 = 1000;

/// One CSV field, RFC 4180: quoted when it holds a comma, quote or line
/// break, quotes doubled. A text that a spreadsheet would run as a formula
/// (OWASP's CSV injection rule: `=`, `+`, `-`, `@`, tab or carriage return
/// as the first character that is not a space, since spreadsheets skip
/// leading spaces) is prefixed with `'`.
pub fn csv_field(raw: &str) -> String {
    let first = raw.trim_start().chars().next();
    let text = if raw.starts_with(['\t', '\r'])
        || matches!(
            first,
            Some('=' | '+' | '-' | '@' | '＝' | '＋' | '－' | '＠')
        ) {
        format!("'{raw}")
    } else {
        raw.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// The columns: the stored values first (codes, cents, UTC), then for a
/// person opening the file in a spreadsheet the status in words, money in
/// yuan and the end in the business time zone.
const CSV_HEADER: &str = "id,code,user_id,template_id,source,kind,value_cents,percent_off,max_discount_cents,min_order_cents,categories,status,starts_at,ends_at,order_no,locked_at,used_at,created_at,status_text,value_yuan,min_order_yuan,ends_at_local";

/// A stored UTC time in the business time zone, with its offset.
fn local(rfc3339: &str, tz: crate::domain::reminder::BusinessTz) -> String {
    crate::domain::time::parse_rfc3339(rfc3339)
        .map(|t| crate::i18n::zone::local_text_in(tz, t, true))
        .unwrap_or_default()
}

fn csv_row(
    v: &CouponView,
    lang: crate::i18n::Lang,
    tz: crate::domain::reminder::BusinessTz,
) -> String {
    let num = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_default();
    let cents = |n: Option<Cents>| num(n.map(Cents::get));
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let id = |s: Option<&str>| s.map(str::to_string).unwrap_or_default();
    [
        v.id.to_string(),
        v.code.clone(),
        v.user_id.to_string(),
        id(v.template_id.as_deref()),
        v.source.as_str().to_string(),
        v.kind.as_str().to_string(),
        cents(v.value_cents),
        num(v.percent_off),
        cents(v.max_discount_cents),
        v.min_order_cents.get().to_string(),
        v.categories.join("|"),
        v.status.as_str().to_string(),
        v.starts_at.clone(),
        v.ends_at.clone(),
        id(v.order_no.as_deref()),
        text(&v.locked_at),
        text(&v.used_at),
        v.created_at.clone(),
        lang.t(v.status.label_key()).to_string(),
        v.value_cents.map(Cents::yuan).unwrap_or_default(),
        v.min_order_cents.yuan(),
        local(&v.ends_at, tz),
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

impl Service {
    /// The coupons matching `query.filter` as CSV (RFC 4180, header row
    /// first), at most `query.max_rows` (1 to 100,000; both checked at the
    /// edge: [`CouponExportQuery::parse`]), read in keyset batches of 1000;
    /// the status words in `lang`.
    pub async fn export_coupons_csv(
        &self,
        query: CouponExportQuery,
        lang: crate::i18n::Lang,
    ) -> Result<String, ServiceError> {
        let CouponExportQuery { max_rows, filter } = query;
        let tz = self.settings().reminders.tz;
        let mut out = String::from(CSV_HEADER);
        out.push_str("\r\n");
        let mut written = 0usize;
        let mut after = None;
        while written < max_rows {
            let want = i64::try_from(max_rows - written)
                .unwrap_or(EXPORT_BATCH)
                .min(EXPORT_BATCH);
            let page = self.list_coupons_batch(filter.clone(), after, want).await?;
            for v in &page.coupons {
                out.push_str(&csv_row(v, lang, tz));
                out.push_str("\r\n");
            }
            written += page.coupons.len();
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        Ok(out)
    }

    /// [`Service::list_coupons`] without the console's page-size cap.
    async fn list_coupons_batch(
        &self,
        filter: CouponFilter,
        after: Option<String>,
        limit: i64,
    ) -> Result<CouponPage, ServiceError> {
        let mut page = CouponPage {
            coupons: Vec::new(),
            next: after,
        };
        let mut left = limit;
        while left > 0 {
            // 1 to MAX_PAGE: a page size the list takes.
            let query = CouponListQuery {
                limit: left.min(MAX_PAGE),
                filter: filter.clone(),
            };
            let part = self.list_coupons(query, page.next.clone()).await?;
            left -= part.coupons.len() as i64;
            page.coupons.extend(part.coupons);
            page.next = part.next;
            if page.next.is_none() {
                break;
            }
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn csv_fields_are_quoted_only_when_needed_and_formulas_are_neutralised() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("=1+1"), "'=1+1");
        assert_eq!(csv_field(" =1+1"), "' =1+1");
        assert_eq!(csv_field("   @SUM(A1)"), "'   @SUM(A1)");
        assert_eq!(csv_field("\t=1"), "'\t=1");
        assert_eq!(csv_field(" -2"), "' -2");
        assert_eq!(csv_field("\u{3000}＝1+1"), "'\u{3000}＝1+1");
        assert_eq!(csv_field("a=1"), "a=1");
        assert_eq!(
            csv_field("2026-11-11T00:00:00.000Z"),
            "2026-11-11T00:00:00.000Z"
        );
    }
}
