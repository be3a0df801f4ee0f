//! Compensation rules (补偿规则) and the compensation ledger for finance.
//!
//! - **Rules** are versioned in the database: a change writes a whole new
//!   version (support's caps and the presets), old versions stay readable.
//!   `COUPONKEEPER_SUPPORT_COMPENSATION_*` are only the values of version
//!   1, inserted on first use with an insert-if-absent on the version key,
//!   so instances sharing one PostgreSQL write it once. Every ledger row
//!   records the version in force in the transaction that wrote it.
//! - **The ledger** is read in keyset pages newest first, filtered by
//!   business day range, order, staff, preset and campaign, each filter on
//!   its own index ending in `(at, id)`; the totals of the filtered range
//!   are one aggregate over the same index range.
//!
//! Editing the rules and reading the ledger need an operator (or the API
//! token); support staff read the rules in force on their compensation
//! form.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use super::support::{Authority, csv_field};
use super::{Executed, IdempotencyRequest, Op, Service, ServiceError, Settings};
use crate::domain::FieldError;
use crate::domain::compensation::{self, Preset, RuleChange, Rules, RulesInput};
use crate::domain::filters::{
    LedgerExportQuery, LedgerFilter, LedgerPageQuery, MAX_LEDGER_EXPORT_ROWS,
};
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId, new_id};
use crate::domain::money::{Cents, CentsDelta};
use crate::domain::permissions::Permission;
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::compensation_rules::{self as store, VersionRow};
use crate::store::ledger::{self, EntryRow, GroupBy, LedgerCursor, LedgerQuery};

/// The staff-log action of a rules change (target: [`RULES_TARGET`]).
pub const RULES_CHANGE_ACTION: &str = super::staff::actions::COMPENSATION_RULES_CHANGE;
/// The staff-log target of a rules change.
pub const RULES_TARGET: &str = "compensation-rules";
/// The actor recorded on version 1 (from the settings).
pub const SETTINGS_ACTOR: &str = store::SETTINGS_ACTOR;
pub use crate::domain::filters::MAX_LEDGER_PAGE;
/// Most rows one CSV export holds.
pub const MAX_EXPORT_ROWS: usize = MAX_LEDGER_EXPORT_ROWS;
/// Rows per statement while exporting.
const EXPORT_BATCH: i64 = 1000;
/// Versions the history shows.
pub const HISTORY_VERSIONS: i64 = 20;

fn require_manager(a: &Authority, what: &str) -> Result<(), ServiceError> {
    if a.may(Permission::ManageCompensation) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(format!(
            "only an operator or an admin may {what}"
        )))
    }
}

/// One preset as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct PresetView {
    pub id: String,
    pub reason: String,
    pub value_cents: i64,
    pub valid_seconds: i64,
    pub min_order_cents: i64,
    pub categories: Vec<String>,
}

impl From<Preset> for PresetView {
    fn from(p: Preset) -> Self {
        PresetView {
            id: p.id,
            reason: p.reason,
            value_cents: p.value_cents,
            valid_seconds: p.valid_seconds,
            min_order_cents: p.min_order_cents,
            categories: p.categories,
        }
    }
}

/// `GET /compensation-rules`: the version in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct RulesView {
    pub version: i64,
    pub support_max_cents: i64,
    pub support_daily_cents: i64,
    pub presets: Vec<PresetView>,
}

impl From<Rules> for RulesView {
    fn from(r: Rules) -> Self {
        RulesView {
            version: r.version,
            support_max_cents: r.support_max_cents,
            support_daily_cents: r.support_daily_cents,
            presets: r.presets.into_iter().map(PresetView::from).collect(),
        }
    }
}

/// One version of the rules with who wrote it, when, why, and what changed
/// from the version before.
#[derive(Debug, Clone)]
pub struct RulesVersionView {
    pub rules: Rules,
    pub created_at: DateTime<Utc>,
    pub actor: String,
    pub reason: String,
    /// Empty for version 1 (or when the version before is out of reach).
    pub changes: Vec<RuleChange>,
}

/// The settings' caps: the values of version 1.
pub(crate) fn first_caps(settings: &Settings) -> (i64, i64) {
    (
        settings.support_compensation_max_cents,
        settings.support_compensation_daily_cents,
    )
}

fn first_version(settings: &Settings) -> Rules {
    let (max, daily) = first_caps(settings);
    store::first_version(max, daily)
}

/// The rules in force in a read: the newest version, or version 1 from
/// the settings while none is written yet (the same values the first
/// write inserts).
async fn read_rules(c: &mut AnyConnection, settings: &Settings) -> Result<Rules, ServiceError> {
    match store::latest_version(c).await? {
        Some(v) => Ok(store::rules_of(c, &v).await?),
        None => Ok(first_version(settings)),
    }
}

/// The store's query of a checked ledger filter.
fn ledger_query(f: &LedgerFilter) -> LedgerQuery {
    LedgerQuery {
        from_ms: f.from_ms,
        until_ms: f.until_ms,
        order_no: f.order_no.clone(),
        actor: f.actor.clone(),
        preset_id: f.preset_id.clone(),
        campaign_id: f.campaign_id.as_ref().map(|c| c.to_string()),
    }
}

/// One ledger entry as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LedgerEntryView {
    pub id: String,
    pub at: String,
    /// `coupon` (support's compensation coupon), `final_payment_deduction`,
    /// `final_payment_coupon`, or `refund_reversal` (negative: the order
    /// was refunded in full and its final payment's compensation is taken
    /// back).
    pub kind: String,
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = Option<String>)]
    pub order_no: Option<OrderNo>,
    #[schema(value_type = Option<String>)]
    pub coupon_id: Option<CouponId>,
    /// Negative for a `refund_reversal`.
    #[schema(value_type = i64)]
    pub value_cents: CentsDelta,
    pub reason: String,
    pub preset_id: Option<String>,
    /// Null for entries written before rules were versioned.
    pub rules_version: Option<i64>,
    pub actor: String,
    #[schema(value_type = Option<String>)]
    pub campaign_id: Option<CampaignId>,
    /// Which of the order's coupons the entry makes up for (an order may
    /// hold several): named by support with the compensation, or the
    /// expired coupon a final payment made up for; null when none.
    #[schema(value_type = Option<String>)]
    pub for_coupon_id: Option<CouponId>,
    /// For pages: the coupon's code, the preset's reason, the campaign's
    /// name, the code of the coupon made up for.
    #[serde(skip)]
    #[schema(ignore)]
    pub coupon_code: Option<String>,
    #[serde(skip)]
    #[schema(ignore)]
    pub for_coupon_code: Option<String>,
    #[serde(skip)]
    #[schema(ignore)]
    pub preset_reason: Option<String>,
    #[serde(skip)]
    #[schema(ignore)]
    pub campaign_name: Option<String>,
    #[serde(skip)]
    #[schema(ignore)]
    pub at_ms: i64,
}

impl From<EntryRow> for LedgerEntryView {
    fn from(r: EntryRow) -> Self {
        LedgerEntryView {
            id: r.id.to_string(),
            at: rfc3339(from_ms(r.at)),
            kind: r.kind,
            user_id: r.user_id,
            order_no: r.order_no,
            coupon_id: r.coupon_id,
            value_cents: r.amount_cents,
            reason: r.reason,
            preset_id: r.preset_id,
            rules_version: r.rules_version,
            actor: r.actor,
            campaign_id: r.campaign_id,
            for_coupon_id: r.for_coupon_id,
            coupon_code: None,
            for_coupon_code: None,
            preset_reason: None,
            campaign_name: None,
            at_ms: r.at,
        }
    }
}

/// Count and sum of the whole filtered range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct LedgerTotals {
    pub count: i64,
    pub value_cents: i64,
}

/// `GET /compensation-ledger`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LedgerPage {
    pub entries: Vec<LedgerEntryView>,
    pub totals: LedgerTotals,
    /// The cursor of the next page, or null.
    pub next: Option<String>,
}

/// One group of a breakdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupView {
    /// By reason: the kind (`coupon`, `final_payment_deduction`).
    pub kind: Option<String>,
    /// By reason: the preset, with its reason.
    pub preset: Option<(String, String)>,
    /// By staff: the actor.
    pub actor: Option<String>,
    pub count: i64,
    pub value_cents: CentsDelta,
}

/// Totals of the filtered range per reason and per staff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breakdown {
    pub by_reason: Vec<GroupView>,
    pub by_staff: Vec<GroupView>,
}

fn encode_cursor(at: i64, id: i64) -> String {
    format!("{at}.{id}")
}

fn decode_cursor(raw: Option<&str>) -> Result<Option<LedgerCursor>, ServiceError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let bad = || ServiceError::from(FieldError::new("cursor", "is not a page cursor"));
    let (at, id) = raw.split_once('.').ok_or_else(bad)?;
    Ok(Some(LedgerCursor {
        at: at.parse().map_err(|_| bad())?,
        id: id.parse().map_err(|_| bad())?,
    }))
}

/// Fills in codes, preset reasons and campaign names for pages.
async fn name_entries(
    c: &mut AnyConnection,
    entries: &mut [LedgerEntryView],
) -> Result<(), ServiceError> {
    let coupons: Vec<&CouponId> = entries
        .iter()
        .flat_map(|e| [e.coupon_id.as_ref(), e.for_coupon_id.as_ref()])
        .flatten()
        .collect();
    let codes = crate::store::names::coupon_codes(c, &coupons).await?;
    let presets: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.preset_id.as_deref())
        .collect();
    let reasons = store::preset_reasons(c, &presets).await?;
    let campaigns: Vec<&CampaignId> = entries
        .iter()
        .filter_map(|e| e.campaign_id.as_ref())
        .collect();
    let names = crate::store::names::campaign_names(c, &campaigns).await?;
    for e in entries.iter_mut() {
        e.coupon_code = e
            .coupon_id
            .as_ref()
            .and_then(|id| codes.get(id.as_str()).cloned());
        e.for_coupon_code = e
            .for_coupon_id
            .as_ref()
            .and_then(|id| codes.get(id.as_str()).cloned());
        e.preset_reason = e.preset_id.as_ref().and_then(|id| reasons.get(id).cloned());
        e.campaign_name = e
            .campaign_id
            .as_ref()
            .and_then(|id| names.get(id.as_str()).cloned());
    }
    Ok(())
}

/// What a compensation coupon was given for, from its ledger entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompensationOrigin {
    /// The order it compensates, when one was named.
    pub order_no: Option<OrderNo>,
    /// Why, as given (a person's words, or a system reason; see
    /// [`crate::domain::event::system_reason_key`]).
    pub reason: String,
}

impl Service {
    /// What each of these compensation coupons was given for, by coupon
    /// id (coupons without a ledger entry are left out); at most
    /// [`ledger::MAX_COUPONS_LOOKED_UP`] are looked up.
    pub async fn compensation_origins(
        &self,
        coupon_ids: Vec<CouponId>,
    ) -> Result<std::collections::HashMap<CouponId, CompensationOrigin>, ServiceError> {
        if coupon_ids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        let rows = self
            .read(move |c| {
                let ids = coupon_ids.clone();
                Box::pin(async move { Ok(ledger::for_coupons(c, &ids).await?) })
            })
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let id = r.coupon_id?;
                Some((
                    id,
                    CompensationOrigin {
                        order_no: r.order_no,
                        reason: r.reason,
                    },
                ))
            })
            .collect())
    }

    /// Writes version 1 of the compensation rules from the settings unless
    /// a version exists (called at start; every write that needs the rules
    /// does the same inside its transaction).
    pub async fn ensure_compensation_rules(&self) -> Result<(), ServiceError> {
        let settings = self.settings().clone();
        let now_ms = to_ms(self.now());
        self.write(None, move |c| {
            let settings = settings.clone();
            Box::pin(
                async move { Ok(store::ensure_first(c, first_caps(&settings), now_ms).await?) },
            )
        })
        .await
        .map(|_| ())
    }

    /// The compensation rules in force (every role: support's form shows
    /// them).
    pub async fn compensation_rules(&self) -> Result<Rules, ServiceError> {
        let settings = self.settings().clone();
        self.read(move |c| {
            let settings = settings.clone();
            Box::pin(async move { read_rules(c, &settings).await })
        })
        .await
    }

    /// Writes a whole new version of the compensation rules (operators,
    /// admins, the API token): support's caps and the presets, checked by
    /// [`compensation::check_rules`]. Kept presets keep their ids, new ones
    /// get `cps_…` ids. Serialized (an advisory lock on PostgreSQL, the
    /// write lock on SQLite), so two changes at once make two versions.
    /// The staff log gets the change, before -> after.
    pub async fn put_compensation_rules(
        &self,
        ctx: &super::Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        input: RulesInput,
        reason: Option<String>,
    ) -> Result<Executed<RulesView>, ServiceError> {
        require_manager(authority, "change the compensation rules")?;
        let reason = match (authority, reason.as_deref().map(str::trim)) {
            (Authority::Staff { .. }, None | Some("")) => {
                return Err(FieldError::new("reason", "is required, 1-500 characters").into());
            }
            (_, Some(r)) if r.chars().count() > 500 => {
                return Err(FieldError::new("reason", "is required, 1-500 characters").into());
            }
            (_, r) => r.unwrap_or("").to_string(),
        };
        // Checked once before the transaction for the field errors...
        let current = self.compensation_rules().await?;
        compensation::check_rules(input.clone(), &current.presets, String::new)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let op = op.clone();
            let input = input.clone();
            let reason = reason.clone();
            Box::pin(async move { put_compensation_rules_tx(c, &op, &input, &reason).await })
        })
        .await
    }

    /// The newest [`HISTORY_VERSIONS`] versions, newest first, each with
    /// what changed from the one before (operators and admins).
    pub async fn compensation_rule_history(
        &self,
        authority: &Authority,
    ) -> Result<Vec<RulesVersionView>, ServiceError> {
        require_manager(authority, "read the compensation rules' history")?;
        let settings = self.settings().clone();
        let now = self.now();
        self.read(move |c| {
            let settings = settings.clone();
            Box::pin(async move { compensation_rule_history_tx(c, &settings, now).await })
        })
        .await
    }

    /// One page of the compensation ledger, newest first, and the totals
    /// of the whole filtered range (operators, admins, the API token). The
    /// page size and filter are checked at the edge
    /// ([`LedgerPageQuery::parse`]).
    pub async fn compensation_ledger(
        &self,
        authority: &Authority,
        query: &LedgerPageQuery,
        cursor: Option<&str>,
    ) -> Result<LedgerPage, ServiceError> {
        require_manager(authority, "read the compensation ledger")?;
        let limit = query.limit;
        let q = ledger_query(&query.filter);
        let before = decode_cursor(cursor)?;
        self.read(move |c| {
            let q = q.clone();
            Box::pin(async move {
                let rows = ledger::page(c, &q, before, limit + 1).await?;
                let (count, value_cents) = ledger::totals(c, &q).await?;
                let more = rows.len() as i64 > limit;
                let mut entries: Vec<LedgerEntryView> = rows
                    .into_iter()
                    .take(limit as usize)
                    .map(LedgerEntryView::from)
                    .collect();
                name_entries(c, &mut entries).await?;
                let next = more
                    .then(|| {
                        entries
                            .last()
                            .map(|e| encode_cursor(e.at_ms, e.id.parse().unwrap_or(0)))
                    })
                    .flatten();
                Ok(LedgerPage {
                    entries,
                    totals: LedgerTotals { count, value_cents },
                    next,
                })
            })
        })
        .await
    }

    /// The filtered range's totals per reason (kind and preset) and per
    /// staff member, largest first (operators and admins).
    pub async fn compensation_breakdown(
        &self,
        authority: &Authority,
        filter: &LedgerFilter,
    ) -> Result<Breakdown, ServiceError> {
        require_manager(authority, "read the compensation ledger")?;
        let q = ledger_query(filter);
        self.read(move |c| {
            let q = q.clone();
            Box::pin(async move { compensation_breakdown_tx(c, &q).await })
        })
        .await
    }

    /// Every preset id ever used with its newest reason, and recent
    /// campaigns by name: the choices of the ledger page's filters.
    pub async fn compensation_filter_choices(
        &self,
    ) -> Result<(Vec<(String, String)>, Vec<(String, String)>), ServiceError> {
        self.read(move |c| {
            Box::pin(async move {
                let presets = store::all_presets(c).await?;
                let campaigns = ledger::campaign_choices(c).await?;
                Ok((presets, campaigns))
            })
        })
        .await
    }

    /// The ledger filtered by `query.filter` as CSV (RFC 4180, header
    /// first, formulas neutralised), newest first, at most
    /// `query.max_rows` (both checked at the edge:
    /// [`LedgerExportQuery::parse`]), read in keyset batches of 1000. Times
    /// in the business zone with their offset and in UTC; money in yuan
    /// with two decimals and in cents; then the columns `words` adds in the
    /// reader's words (header names and fields).
    pub async fn export_compensation_csv(
        &self,
        authority: &Authority,
        query: &LedgerExportQuery,
        words: LedgerCsvWords<'_>,
    ) -> Result<String, ServiceError> {
        require_manager(authority, "read the compensation ledger")?;
        let max_rows = query.max_rows;
        let q = ledger_query(&query.filter);
        let tz = self.settings().reminders.tz;
        let (extra_header, extra) = words;
        let mut out = String::from(CSV_HEADER);
        for h in extra_header {
            out.push(',');
            out.push_str(h);
        }
        out.push_str("\r\n");
        let mut written = 0usize;
        let mut before: Option<LedgerCursor> = None;
        while written < max_rows {
            let want = i64::try_from(max_rows - written)
                .unwrap_or(EXPORT_BATCH)
                .min(EXPORT_BATCH);
            let q2 = q.clone();
            let mut rows: Vec<LedgerEntryView> = self
                .read(move |c| {
                    let q = q2.clone();
                    Box::pin(async move {
                        let mut v: Vec<LedgerEntryView> = ledger::page(c, &q, before, want)
                            .await?
                            .into_iter()
                            .map(LedgerEntryView::from)
                            .collect();
                        name_entries(c, &mut v).await?;
                        Ok(v)
                    })
                })
                .await?;
            for e in &rows {
                out.push_str(&csv_row(tz, e));
                for f in extra(e) {
                    out.push(',');
                    out.push_str(&csv_field(&f));
                }
                out.push_str("\r\n");
            }
            written += rows.len();
            match rows.pop() {
                Some(last) if rows.len() as i64 + 1 == want => {
                    before = Some(LedgerCursor {
                        at: last.at_ms,
                        id: last.id.parse().unwrap_or(0),
                    });
                }
                _ => break,
            }
        }
        Ok(out)
    }
}

/// The columns a reader's page adds to each ledger CSV row, in the
/// reader's words: their header names, and the fields of an entry.
pub type LedgerCsvWords<'a> = (
    &'a [&'a str],
    &'a (dyn Fn(&LedgerEntryView) -> Vec<String> + Sync),
);

const CSV_HEADER: &str = "id,at_local,at_utc,kind,user_id,order_no,campaign,coupon_code,coupon_id,value_yuan,value_cents,reason,preset_id,preset,rules_version,actor,for_coupon_code,for_coupon_id";

fn csv_row(tz: crate::domain::reminder::BusinessTz, e: &LedgerEntryView) -> String {
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let id_text = |s: Option<&str>| s.unwrap_or_default().to_string();
    let at = from_ms(e.at_ms);
    let local = tz.local(at);
    let offset = crate::i18n::zone::offset_text(tz.offset_seconds(at));
    [
        e.id.clone(),
        format!("{} {offset}", local.format("%Y-%m-%d %H:%M:%S")),
        e.at.clone(),
        e.kind.clone(),
        e.user_id.to_string(),
        id_text(e.order_no.as_deref()),
        text(&e.campaign_name).to_string(),
        text(&e.coupon_code),
        id_text(e.coupon_id.as_deref()),
        e.value_cents.yuan(),
        e.value_cents.get().to_string(),
        e.reason.clone(),
        text(&e.preset_id),
        text(&e.preset_reason),
        e.rules_version.map(|v| v.to_string()).unwrap_or_default(),
        e.actor.clone(),
        text(&e.for_coupon_code),
        id_text(e.for_coupon_id.as_ref().map(|c| c.as_str())),
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

/// Reads the newest rule versions, each with what changed from the one before.
async fn compensation_rule_history_tx(
    c: &mut AnyConnection,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Result<Vec<RulesVersionView>, ServiceError> {
    let rows = store::versions(c, HISTORY_VERSIONS + 1).await?;
    let (Some(first), Some(last)) = (rows.last(), rows.first()) else {
        return Ok(vec![RulesVersionView {
            rules: first_version(settings),
            created_at: now,
            actor: SETTINGS_ACTOR.into(),
            reason: String::new(),
            changes: Vec::new(),
        }]);
    };
    let presets = store::presets_of_versions(c, first.version, last.version).await?;
    let all: Vec<(VersionRow, Rules)> = rows
        .iter()
        .map(|v| {
            let rules = Rules {
                version: v.version,
                support_max_cents: v.support_max_cents.get(),
                support_daily_cents: v.support_daily_cents.get(),
                presets: presets
                    .iter()
                    .filter(|(n, _)| *n == v.version)
                    .map(|(_, p)| p.clone())
                    .collect(),
            };
            (v.clone(), rules)
        })
        .collect();
    let mut out = Vec::new();
    for (i, (v, rules)) in all.iter().enumerate().take(HISTORY_VERSIONS as usize) {
        let changes = all
            .get(i + 1)
            .filter(|(older, _)| older.version + 1 == v.version)
            .map(|(_, older)| compensation::changes(older, rules))
            .unwrap_or_default();
        out.push(RulesVersionView {
            rules: rules.clone(),
            created_at: from_ms(v.created_at),
            actor: v.actor.clone(),
            reason: v.reason.clone(),
            changes,
        });
    }
    Ok(out)
}

/// Totals the filtered ledger per reason (named presets) and per staff member.
async fn compensation_breakdown_tx(
    c: &mut AnyConnection,
    q: &LedgerQuery,
) -> Result<Breakdown, ServiceError> {
    let reasons = ledger::groups(c, q, GroupBy::Reason).await?;
    let staff = ledger::groups(c, q, GroupBy::Staff).await?;
    let ids: Vec<&str> = reasons
        .iter()
        .filter_map(|g| g.group_key.split_once(':').map(|(_, id)| id))
        .collect();
    let names = store::preset_reasons(c, &ids).await?;
    let by_reason = reasons
        .iter()
        .map(|g| {
            let (kind, preset) = match g.group_key.split_once(':') {
                Some((kind, id)) => (
                    kind.to_string(),
                    Some((
                        id.to_string(),
                        names.get(id).cloned().unwrap_or_else(|| id.to_string()),
                    )),
                ),
                None => (g.group_key.clone(), None),
            };
            GroupView {
                kind: Some(kind),
                preset,
                actor: None,
                count: g.count,
                value_cents: g.value_cents,
            }
        })
        .collect();
    let by_staff = staff
        .into_iter()
        .map(|g| GroupView {
            kind: None,
            preset: None,
            actor: Some(g.group_key),
            count: g.count,
            value_cents: g.value_cents,
        })
        .collect();
    Ok(Breakdown {
        by_reason,
        by_staff,
    })
}

/// The transaction of [`Service::put_compensation_rules`]: under the rules
/// lock, checked again against the version it replaces, the new version and its
/// staff-log row.
async fn put_compensation_rules_tx(
    c: &mut AnyConnection,
    op: &Op,
    input: &RulesInput,
    reason: &str,
) -> Result<RulesView, ServiceError> {
    let settings = &op.settings;
    let now_ms = to_ms(op.now);
    crate::store::advisory_lock(c, "compensation-rules").await?;
    let before = store::rules_in_force(c, first_caps(settings), now_ms).await?;
    // ...and again against the version this one replaces.
    let (max, daily, presets) =
        compensation::check_rules(input.clone(), &before.presets, || new_id("cps", now_ms))?;
    let after = Rules {
        version: before.version + 1,
        support_max_cents: max,
        support_daily_cents: daily,
        presets,
    };
    let inserted = store::insert_version_if_absent(
        c,
        &VersionRow {
            version: after.version,
            // check_rules keeps both within 0..=MAX_CENTS: nothing clamps.
            support_max_cents: Cents::from_stored(max),
            support_daily_cents: Cents::from_stored(daily),
            created_at: now_ms,
            actor: op.ctx.actor.clone(),
            reason: reason.to_string(),
        },
    )
    .await?;
    if !inserted {
        return Err(ServiceError::refused(
            super::Refusal::EditNotAllowed,
            "the compensation rules changed meanwhile; read them again",
        ));
    }
    store::insert_presets(c, after.version, &after.presets).await?;
    let detail = compensation::RulesChangeLog::new(&before, &after, reason).to_detail();
    insert_staff_audit(
        c,
        &NewStaffAudit {
            actor: &op.ctx.actor,
            action: RULES_CHANGE_ACTION,
            target: RULES_TARGET,
            detail: Some(&detail),
            address: op.ctx.address.as_deref(),
            at_ms: now_ms,
        },
    )
    .await?;
    Ok(RulesView::from(after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuan_has_two_decimals() {
        let yuan = |cents: i64| CentsDelta::from_stored(cents).yuan();
        assert_eq!(yuan(0), "0.00");
        assert_eq!(yuan(5), "0.05");
        assert_eq!(yuan(123_456), "1234.56");
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_a_field_error() {
        assert_eq!(
            decode_cursor(Some(&encode_cursor(5, 7))).expect("ok"),
            Some(LedgerCursor { at: 5, id: 7 })
        );
        assert!(matches!(
            decode_cursor(Some("x")),
            Err(ServiceError::Invalid(FieldError {
                field: "cursor",
                ..
            }))
        ));
    }
}
