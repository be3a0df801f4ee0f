//! The one-click health check (一键检测) of an order: pure rules that read
//! the facts about an order, its coupon and the coupon's own order, the
//! campaign and the template's stock, and say in plain words (Chinese and
//! English, readable to a customer over the phone) what is fine, what needs
//! watching and what is broken, with the action that would fix it.
//!
//! No I/O and no clock: the service gathers the facts and passes `now`.
//! Every check always appears (with a stable name), so the console and the
//! API can show the same list for every order.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::i18n::{Arg, Msg};

use super::campaign::{PaymentWindow, Policy};
use super::coupon::{CouponStatus, effective_status};
pub use super::facts::{CouponFacts, CouponUnits, OrderFacts};
use super::final_payment::{CouponOutcome, HeldCoupon, PresaleOrder, plan_final_payment};
use super::ids::{CouponId, OrderNo, TemplateId, UserId};
use super::money::Cents;
use super::order::{CouponLockStatus, OrderKind, OrderMoney, OrderStatus};
use super::repair::{LinkRepair, order_took_coupon, plan_link_repair, plan_mark_used, plan_return};

/// Check names, stable: the API and the console key on them.
pub const ORDER_STATUS: &str = "order_status";
/// See [`ORDER_STATUS`].
pub const COUPON_STATUS: &str = "coupon_status";
/// See [`ORDER_STATUS`].
pub const LOCK_LINK: &str = "lock_link";
/// See [`ORDER_STATUS`].
pub const COUPON_VALIDITY: &str = "coupon_validity";
/// See [`ORDER_STATUS`].
pub const CHECKOUT_LOCK: &str = "checkout_lock";
/// See [`ORDER_STATUS`].
pub const TEMPLATE_STOCK: &str = "template_stock";
/// The user-level check of a locked coupon whose order is not live.
pub const STRAY_LOCK: &str = "stray_lock";

/// How a check came out, from best to worst (so `max` is the worst).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckResult {
    /// Consistent; nothing to do.
    Ok,
    /// Consistent, but something will happen the customer should know of.
    Warning,
    /// Inconsistent: needs an action.
    Problem,
}

impl CheckResult {
    /// The catalog key of the result's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            CheckResult::Ok => "result-ok",
            CheckResult::Warning => "result-warning",
            CheckResult::Problem => "result-problem",
        }
    }

    /// `ok`, `warning` or `problem`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckResult::Ok => "ok",
            CheckResult::Warning => "warning",
            CheckResult::Problem => "problem",
        }
    }
}

/// What support can do about a check, with everything the action needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum SuggestedAction {
    /// Release the coupon's lock (`POST /coupons/{id}/release`).
    ReleaseCoupon {
        /// The coupon to release.
        coupon_id: CouponId,
    },
    /// Give the customer a compensation coupon
    /// (`POST /users/{user_id}/compensation-coupons`).
    IssueCompensation {
        /// The customer.
        user_id: UserId,
        /// The order the compensation is for.
        order_no: OrderNo,
        /// The discount the customer was promised, in cents.
        amount_cents: i64,
        /// The coupon of the order whose discount is lost (an order may
        /// hold several), when the check names one.
        coupon_id: Option<CouponId>,
    },
    /// Cancel the order, which releases its coupon in the same transaction
    /// (`POST /orders/{order_no}/cancel`).
    CancelOrder {
        /// The order to cancel.
        order_no: OrderNo,
    },
    /// Repair the order's link to this coupon: lock it to the order again,
    /// or point the order at it (see [`super::repair`]).
    RepairLink {
        /// The order to repair.
        order_no: OrderNo,
        /// The coupon to link it with.
        coupon_id: CouponId,
    },
    /// Mark the coupon `used` for the paid order it is still locked to
    /// (`POST /orders/{order_no}/mark-coupon-used`, see
    /// [`super::repair::plan_mark_used`]).
    MarkCouponUsed {
        /// The paid order.
        order_no: OrderNo,
        /// The coupon it was paid with.
        coupon_id: CouponId,
    },
    /// Return to its customer a coupon still `used` by the order after
    /// every unit it discounted was refunded
    /// (`POST /orders/{order_no}/return-coupon`, see
    /// [`super::repair::plan_return`]).
    ReturnCoupon {
        /// The order refunded by line.
        order_no: OrderNo,
        /// The coupon to return.
        coupon_id: CouponId,
    },
}

impl SuggestedAction {
    /// `release_coupon`, `issue_compensation`, `cancel_order`,
    /// `repair_link`, `mark_coupon_used` or `return_coupon`.
    pub fn code(&self) -> &'static str {
        match self {
            SuggestedAction::ReleaseCoupon { .. } => "release_coupon",
            SuggestedAction::IssueCompensation { .. } => "issue_compensation",
            SuggestedAction::CancelOrder { .. } => "cancel_order",
            SuggestedAction::RepairLink { .. } => "repair_link",
            SuggestedAction::MarkCouponUsed { .. } => "mark_coupon_used",
            SuggestedAction::ReturnCoupon { .. } => "return_coupon",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// One of the stable check names above.
    pub name: &'static str,
    pub result: CheckResult,
    /// What the check found, for the reader to render in their language
    /// (keys `health-*` of the catalog).
    pub message: Msg,
    /// What would fix it, when something should be done.
    pub suggested_action: Option<SuggestedAction>,
    /// The code of the coupon it is about, when the order holds several
    /// (its text then starts with it: "券 X：…").
    pub coupon: Option<String>,
}

impl Check {
    /// The message in Chinese, as a staff member reads it.
    pub fn zh(&self) -> String {
        self.text(crate::i18n::Lang::Zh)
    }

    /// The message in English, as a staff member reads it.
    pub fn en(&self) -> String {
        self.text(crate::i18n::Lang::En)
    }

    /// The message in `l`, after the coupon it is about when it names
    /// one.
    pub fn text(&self, l: crate::i18n::Lang) -> String {
        about_coupon(l, self.coupon.as_deref(), &self.message)
    }

    fn new(name: &'static str, result: CheckResult, message: Msg) -> Self {
        Check {
            name,
            result,
            message,
            suggested_action: None,
            coupon: None,
        }
    }

    /// The same check, about the coupon of code `code`.
    fn about(mut self, code: &str) -> Self {
        self.coupon = Some(code.to_string());
        self
    }

    fn ok(name: &'static str, message: Msg) -> Self {
        Check::new(name, CheckResult::Ok, message)
    }

    fn warning(name: &'static str, message: Msg) -> Self {
        Check::new(name, CheckResult::Warning, message)
    }

    fn problem(name: &'static str, message: Msg) -> Self {
        Check::new(name, CheckResult::Problem, message)
    }

    fn suggest(mut self, action: SuggestedAction) -> Self {
        self.suggested_action = Some(action);
        self
    }
}

/// `message` in `l`, after the code of the coupon it is about
/// (`coupon`), when it names one.
pub fn about_coupon(l: crate::i18n::Lang, coupon: Option<&str>, message: &Msg) -> String {
    match coupon {
        Some(code) => format!(
            "{}{}",
            l.msg(&crate::msg!("health-about-coupon", coupon = code)),
            l.msg(message)
        ),
        None => l.msg(message),
    }
}

/// The order a coupon names when it is not the order being checked.
#[derive(Debug, Clone)]
pub struct PartnerOrder {
    pub order_no: OrderNo,
    pub status: OrderStatus,
    pub coupon_id: Option<CouponId>,
    pub coupon_lock_status: CouponLockStatus,
}

/// The presale campaign of the order.
#[derive(Debug, Clone, Copy)]
pub struct CampaignFacts {
    pub window: PaymentWindow,
    pub policy: Policy,
}

/// A template's stock counter, with the last reconciliation's verdict on
/// it. Counting a big template's coupons on every health check would cost
/// as much as the template is big (200,000 coupons: 25 ms per check), so the
/// check reads the verdict of the last run instead.
#[derive(Debug, Clone)]
pub struct StockFacts {
    pub template_id: TemplateId,
    /// What people call it: messages name the template by its name.
    pub template_name: String,
    /// The sum of the template's stock-shard counters now.
    pub claimed: i64,
    /// When the last reconciliation ran; `None`: never.
    pub checked_at: Option<DateTime<Utc>>,
    /// What that run counted when counter and coupons differed:
    /// `(claimed, issued)`. `None`: they agreed (or it never ran).
    pub mismatch: Option<(i64, i64)>,
}

/// Compensation already given for the order: the sum of its entries in
/// the compensation ledger (support's coupons, final-payment deductions and
/// coupons) and when the latest was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompensationGiven {
    pub cents: i64,
    pub last_at: DateTime<Utc>,
}

/// Everything the order checks read.
#[derive(Debug, Clone)]
pub struct HealthFacts<'a> {
    pub order: &'a OrderFacts,
    /// The coupon the order names; `None` when it names none, or one that
    /// exists nowhere (live or archived).
    pub coupon: Option<&'a CouponFacts>,
    /// The order the coupon is bound to, when that is another order.
    pub coupon_order: Option<&'a PartnerOrder>,
    /// Coupons locked to or used by this order although the order names
    /// another coupon (or none).
    pub strays: &'a [CouponFacts],
    pub campaign: Option<&'a CampaignFacts>,
    pub stock: Option<&'a StockFacts>,
    /// Compensation given for the coupon the order names (ledger entries
    /// naming it, or naming no coupon); `None`: none.
    pub compensated: Option<CompensationGiven>,
    /// The further coupons of an order of several (叠加), read for a
    /// presale order awaiting its final payment and for a paid order
    /// (`paid`, `final_paid`); empty otherwise.
    pub further: &'a [HeldFurther],
    pub now: DateTime<Utc>,
}

/// The worst result among the checks (`ok` for none).
pub fn overall(checks: &[Check]) -> CheckResult {
    checks
        .iter()
        .map(|c| c.result)
        .max()
        .unwrap_or(CheckResult::Ok)
}

/// Runs every order check, in a fixed order.
pub fn check_order(f: &HealthFacts<'_>) -> Vec<Check> {
    vec![
        order_status(f),
        coupon_status_of_each(f),
        lock_link_of_each(f),
        coupon_validity_of_each(f),
        checkout_lock(f),
        template_stock(f),
    ]
}

/// Whether the checks of the order's coupon read each of its coupons: a
/// paid order (`paid`, or a presale order's `final_paid`) holding
/// several, whose coupons were used (or settled) one by one.
fn reads_each(f: &HealthFacts<'_>) -> bool {
    !f.further.is_empty() && matches!(f.order.status, OrderStatus::Paid | OrderStatus::FinalPaid)
}

/// The order as the checks of the coupon it names read it when it holds
/// several: that coupon's own discount and snapshot, what the further
/// coupons leave of the order's sums.
fn first_coupon_order(f: &HealthFacts<'_>) -> OrderFacts {
    let o = f.order;
    let (discount, snapshot) = f
        .further
        .iter()
        .fold((o.money.discount, o.discount_snapshot), |(d, s), h| {
            (d.saturating_sub(h.discount), s.saturating_sub(h.snapshot))
        });
    OrderFacts {
        money: OrderMoney {
            discount,
            ..o.money
        },
        discount_snapshot: snapshot,
        ..o.clone()
    }
}

/// The order as the checks of its further coupon `h` read it: that
/// coupon in the place of the one the order names, with the order's
/// record of it (lock state), its own discount, snapshot and units.
fn further_coupon_order(o: &OrderFacts, h: &HeldFurther) -> OrderFacts {
    OrderFacts {
        coupon_id: Some(h.coupon.id.clone()),
        coupon_lock_status: h.lock_status,
        money: OrderMoney {
            discount: h.discount,
            ..o.money
        },
        discount_snapshot: h.snapshot,
        coupon_units: h.units,
        ..o.clone()
    }
}

/// What a further coupon's check may suggest: releasing it or
/// compensating its lost discount. The repairs (relock, relink, mark
/// used, return) work on the coupon the order names, so for a further
/// coupon the check says what is wrong and suggests none of them.
fn for_further(mut check: Check) -> Check {
    if !matches!(
        check.suggested_action,
        None | Some(SuggestedAction::ReleaseCoupon { .. })
            | Some(SuggestedAction::IssueCompensation { .. })
    ) {
        check.suggested_action = None;
    }
    check
}

/// `check` of each of the order's coupons ([`HealthFacts::further`]),
/// each read with its own facts (its record on the order, its discount,
/// the order it is bound to, the compensation given for it), the worst
/// answered (the first on a tie), naming its coupon by code.
fn worst_of_each(f: &HealthFacts<'_>, check: impl Fn(&HealthFacts<'_>) -> Check) -> Check {
    let first_order = first_coupon_order(f);
    let first = check(&HealthFacts {
        order: &first_order,
        ..f.clone()
    });
    let mut worst = match f.coupon {
        Some(c) => first.about(&c.code),
        // A missing coupon: its message names it by id.
        None => first,
    };
    for h in f.further {
        let order = further_coupon_order(f.order, h);
        let answer = check(&HealthFacts {
            order: &order,
            coupon: Some(&h.coupon),
            coupon_order: h.coupon_order.as_ref(),
            strays: &[],
            compensated: h.compensated,
            further: &[],
            ..f.clone()
        });
        let answer = for_further(answer).about(&h.coupon.code);
        if answer.result > worst.result {
            worst = answer;
        }
    }
    worst
}

/// `coupon_status` of a paid order of several coupons: each coupon's
/// stored status and order against the order's record of it (a coupon
/// replaced at the final payment: its replacement, which took its
/// place), the worst answered, naming its coupon. Any other order:
/// [`coupon_status`].
pub fn coupon_status_of_each(f: &HealthFacts<'_>) -> Check {
    if reads_each(f) {
        worst_of_each(f, coupon_status)
    } else {
        coupon_status(f)
    }
}

/// `lock_link` of a paid order of several coupons: a coupon bound to the
/// order that the order does not hold first (as [`lock_link`]), then each
/// coupon's `order_no` against the order, the worst answered, naming its
/// coupon. Any other order: [`lock_link`].
pub fn lock_link_of_each(f: &HealthFacts<'_>) -> Check {
    if reads_each(f) && f.strays.is_empty() {
        worst_of_each(f, lock_link)
    } else {
        lock_link(f)
    }
}

/// A time for a message, shown in the reader's business time zone.
fn when(t: DateTime<Utc>) -> Arg {
    Arg::Time(t)
}

fn lapsed(o: &OrderFacts, now: DateTime<Utc>) -> bool {
    super::order::checkout_lapsed(o.kind, o.status, o.checkout_lock_expires_at, now)
}

/// Compensation of the discount promised with `coupon` (the order's
/// snapshot as the check reads it).
fn compensation(o: &OrderFacts, coupon: Option<&CouponId>) -> SuggestedAction {
    SuggestedAction::IssueCompensation {
        user_id: o.user_id.clone(),
        order_no: o.order_no.clone(),
        amount_cents: o.discount_snapshot.get(),
        coupon_id: coupon.cloned(),
    }
}

/// `order_status`: where the order stands; a normal order still awaiting
/// payment after its checkout lock lapsed is a problem (it cannot be paid
/// and should have been closed).
pub fn order_status(f: &HealthFacts<'_>) -> Check {
    let o = f.order;
    let no = &o.order_no;
    if lapsed(o, f.now) {
        let at = o.checkout_lock_expires_at.map(when).unwrap_or_default();
        return Check::problem(
            ORDER_STATUS,
            crate::msg!("health-order-is-still-awaiting-payment", no = &no, at = &at),
        )
        .suggest(SuggestedAction::CancelOrder {
            order_no: no.clone(),
        });
    }
    if o.status == OrderStatus::DepositPaid
        && let Some(c) = f.campaign
        && f.now >= c.window.ends
    {
        let at = when(c.window.ends);
        return Check::warning(
            ORDER_STATUS,
            crate::msg!("health-the-deposit-for-order-is", no = &no, at = &at),
        );
    }
    Check::ok(
        ORDER_STATUS,
        crate::msg!(
            "health-order-is",
            no = &no,
            status = Arg::Key(o.status.label_key().into())
        ),
    )
}

/// What the order's status says its coupon should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Locked to this order.
    Locked,
    /// Used by this order.
    Used,
    /// Not bound to this order.
    Free,
    /// Either (presale before deposit: any free coupon; final_paid with the
    /// discount withdrawn by policy: released).
    Unbound,
}

fn expectation(o: &OrderFacts) -> Expect {
    match o.status {
        OrderStatus::PendingPayment | OrderStatus::DepositPaid => Expect::Locked,
        // Refunds by line gave the coupon back (every item it discounted
        // came back) while the customer keeps other items.
        OrderStatus::Paid if o.coupon_lock_status == CouponLockStatus::Released => Expect::Free,
        OrderStatus::Paid => Expect::Used,
        OrderStatus::FinalPaid => {
            if o.coupon_lock_status == CouponLockStatus::Used {
                Expect::Used
            } else {
                Expect::Unbound
            }
        }
        OrderStatus::PendingDeposit => Expect::Unbound,
        OrderStatus::Closed | OrderStatus::Refunded => Expect::Free,
    }
}

/// `coupon_status`: the coupon's state agrees with the order's: a
/// `deposit_paid` (or checkout-locked) order holds it locked, a paid order
/// has used it, a closed or refunded order no longer holds it.
pub fn coupon_status(f: &HealthFacts<'_>) -> Check {
    let o = f.order;
    let no = &o.order_no;
    let Some(coupon_id) = o.coupon_id.as_deref() else {
        return Check::ok(
            COUPON_STATUS,
            crate::msg!("health-order-uses-no-coupon", no = &no),
        );
    };
    let Some(c) = f.coupon else {
        let check = Check::problem(
            COUPON_STATUS,
            crate::msg!(
                "health-order-names-a-missing-coupon",
                no = no,
                coupon = coupon_id
            ),
        );
        return if o.status == OrderStatus::DepositPaid {
            check.suggest(compensation(o, o.coupon_id.as_ref()))
        } else {
            check
        };
    };
    let bound_here = c.order_no.as_deref() == Some(no.as_str());
    let status = effective_status(c.stored_status, c.ends_at, f.now);
    let discount = o.discount_snapshot.yuan();
    match (expectation(o), c.stored_status) {
        (Expect::Locked, CouponStatus::Locked) if bound_here => {
            if o.status == OrderStatus::DepositPaid {
                Check::ok(
                    COUPON_STATUS,
                    crate::msg!(
                        "health-the-coupon-is-locked-for",
                        no = &no,
                        discount = &discount
                    ),
                )
            } else {
                Check::ok(
                    COUPON_STATUS,
                    crate::msg!(
                        "health-the-coupon-is-reserved-for",
                        no = &no,
                        discount = &discount
                    ),
                )
            }
        }
        (Expect::Locked, _) => {
            let message = match c.order_no.as_deref().filter(|n| *n != no) {
                Some(other) => crate::msg!(
                    "health-order-should-hold-coupon-bound-elsewhere",
                    no = no,
                    coupon = c.code.as_str(),
                    coupon_status = Arg::Key(status.label_key().into()),
                    other = other
                ),
                None => crate::msg!(
                    "health-order-should-hold-coupon",
                    no = no,
                    coupon = c.code.as_str(),
                    coupon_status = Arg::Key(status.label_key().into())
                ),
            };
            let check = Check::problem(COUPON_STATUS, message);
            if plan_link_repair(o, Some(c), c, f.now) == Ok(LinkRepair::Relock) {
                check.suggest(SuggestedAction::RepairLink {
                    order_no: no.clone(),
                    coupon_id: c.id.clone(),
                })
            } else if o.status == OrderStatus::DepositPaid {
                check.suggest(compensation(o, Some(&c.id)))
            } else {
                check.suggest(SuggestedAction::CancelOrder {
                    order_no: no.clone(),
                })
            }
        }
        (Expect::Used, CouponStatus::Used) if bound_here => match o.coupon_units {
            // Part of the order refunded by line: the coupon stays used
            // for the units the customer keeps, and comes back with the
            // last of them.
            Some(u) if u.refunded > 0 && u.kept > 0 => Check::ok(
                COUPON_STATUS,
                crate::msg!(
                    "health-coupon-kept-for-units",
                    coupon = c.code.as_str(),
                    no = &no,
                    kept = u.kept,
                    refunded = u.refunded
                ),
            ),
            Some(u) if u.refunded > 0 => {
                let check = Check::problem(
                    COUPON_STATUS,
                    crate::msg!(
                        "health-coupon-not-returned-after-refunds",
                        coupon = c.code.as_str(),
                        no = &no,
                        refunded = u.refunded
                    ),
                );
                if plan_return(o, c).is_ok() {
                    check.suggest(SuggestedAction::ReturnCoupon {
                        order_no: no.clone(),
                        coupon_id: c.id.clone(),
                    })
                } else {
                    check
                }
            }
            _ => Check::ok(
                COUPON_STATUS,
                crate::msg!("health-the-coupon-was-used-on", no = &no),
            ),
        },
        (Expect::Used, CouponStatus::Locked) if bound_here && plan_mark_used(o, c).is_ok() => {
            Check::problem(
                COUPON_STATUS,
                crate::msg!(
                    "health-order-is-with-coupon-but",
                    no = &no,
                    status = Arg::Key(o.status.label_key().into()),
                    coupon = c.code.as_str()
                ),
            )
            .suggest(SuggestedAction::MarkCouponUsed {
                order_no: no.clone(),
                coupon_id: c.id.clone(),
            })
        }
        (Expect::Used, _) => Check::warning(
            COUPON_STATUS,
            crate::msg!(
                "health-order-is-paid-with-coupon",
                no = &no,
                coupon = c.code.as_str(),
                coupon_status = Arg::Key(status.label_key().into())
            ),
        ),
        (Expect::Free | Expect::Unbound, CouponStatus::Locked) if bound_here => {
            let check = Check::problem(
                COUPON_STATUS,
                crate::msg!(
                    "health-order-is-but-coupon-is",
                    no = &no,
                    status = Arg::Key(o.status.label_key().into()),
                    coupon = c.code.as_str()
                ),
            );
            check.suggest(SuggestedAction::ReleaseCoupon {
                coupon_id: c.id.clone(),
            })
        }
        (Expect::Free, CouponStatus::Used) if bound_here && o.status == OrderStatus::Refunded => {
            Check::warning(
                COUPON_STATUS,
                crate::msg!(
                    "health-order-was-refunded-but-coupon",
                    no = &no,
                    coupon = c.code.as_str()
                ),
            )
        }
        _ => Check::ok(
            COUPON_STATUS,
            crate::msg!(
                "health-coupon-is-and-not-held",
                coupon = c.code.as_str(),
                coupon_status = Arg::Key(status.label_key().into()),
                no = &no
            ),
        ),
    }
}

/// `lock_link`: the coupon's `order_no` and the order's `coupon_id` name
/// each other; a coupon bound elsewhere, or a coupon locked to this order
/// that the order does not name, is a problem.
pub fn lock_link(f: &HealthFacts<'_>) -> Check {
    let o = f.order;
    let no = &o.order_no;
    if let Some(stray) = f.strays.first() {
        // The coupon the order names, by its code when it exists.
        let named = match (f.coupon, o.coupon_id.as_deref()) {
            (Some(c), _) => Arg::Text(c.code.clone()),
            (None, Some(id)) => Arg::Text(id.to_string()),
            (None, None) => Arg::Key("reconcile-no-coupon".into()),
        };
        if plan_link_repair(o, f.coupon, stray, f.now).is_ok() {
            return Check::problem(
                LOCK_LINK,
                crate::msg!(
                    "health-coupon-is-for-order-but",
                    coupon = stray.code.as_str(),
                    coupon_status = Arg::Key(stray.stored_status.label_key().into()),
                    no = &no,
                    named = named.clone()
                ),
            )
            .suggest(SuggestedAction::RepairLink {
                order_no: no.clone(),
                coupon_id: stray.id.clone(),
            });
        }
        if stray.stored_status == CouponStatus::Locked {
            return Check::problem(
                LOCK_LINK,
                crate::msg!(
                    "health-coupon-is-locked-to-order",
                    coupon = stray.code.as_str(),
                    no = &no
                ),
            )
            .suggest(SuggestedAction::ReleaseCoupon {
                coupon_id: stray.id.clone(),
            });
        }
        return Check::problem(
            LOCK_LINK,
            crate::msg!(
                "health-coupon-was-used-on-order",
                coupon = stray.code.as_str(),
                no = &no,
                named = named
            ),
        );
    }
    let Some(c) = f.coupon else {
        return Check::ok(
            LOCK_LINK,
            crate::msg!("health-no-coupon-is-bound-to", no = &no),
        );
    };
    match c.order_no.as_deref() {
        Some(other) if other != no => {
            let partner_live_and_names_it = f.coupon_order.is_some_and(|p| {
                p.status.is_live() && p.coupon_id.as_deref() == Some(c.id.as_str())
            });
            let check = Check::problem(
                LOCK_LINK,
                crate::msg!(
                    "health-order-uses-coupon-but-the",
                    no = &no,
                    coupon = c.code.as_str(),
                    other = &other
                ),
            );
            if c.stored_status == CouponStatus::Locked && !partner_live_and_names_it {
                check.suggest(SuggestedAction::ReleaseCoupon {
                    coupon_id: c.id.clone(),
                })
            } else if o.status == OrderStatus::DepositPaid {
                check.suggest(compensation(o, Some(&c.id)))
            } else {
                check
            }
        }
        Some(_) => Check::ok(
            LOCK_LINK,
            crate::msg!(
                "health-order-and-coupon-point-to",
                no = &no,
                coupon = c.code.as_str()
            ),
        ),
        None => Check::ok(
            LOCK_LINK,
            crate::msg!("health-coupon-is-not-bound-to", coupon = c.code.as_str()),
        ),
    }
}

/// A further coupon of an order (beyond the one the order names) as the
/// checks of each coupon read it: the coupon and the order's record of
/// it, with what the checks of that one coupon need.
#[derive(Debug, Clone)]
pub struct HeldFurther {
    pub coupon: CouponFacts,
    /// Its own discount as snapshotted at a presale order's deposit.
    pub snapshot: Cents,
    /// What it takes off the order now (nothing once a final payment
    /// withdrew it).
    pub discount: Cents,
    /// The order's record of it (`order_coupons.lock_status`).
    pub lock_status: CouponLockStatus,
    /// After a refund by line: the units of the lines it discounted.
    pub units: Option<CouponUnits>,
    /// The order the coupon is bound to, when that is another order.
    pub coupon_order: Option<PartnerOrder>,
    /// Compensation given for this coupon (ledger entries naming it);
    /// `None`: none.
    pub compensated: Option<CompensationGiven>,
}

/// `coupon_validity` for a presale order of several coupons
/// ([`HealthFacts::further`]): awaiting its final payment, each coupon
/// judged on its own snapshot (the policy applies to each); after it,
/// each coupon that lost its discount under `strict` on its own snapshot
/// and its own compensation. The worst of them answered (the first on a
/// tie), naming its coupon. Any other order: [`coupon_validity`].
pub fn coupon_validity_of_each(f: &HealthFacts<'_>) -> Check {
    if !f.further.is_empty()
        && f.order.kind == OrderKind::Presale
        && f.order.status == OrderStatus::FinalPaid
    {
        return worst_of_each(f, coupon_validity);
    }
    let further = f.further;
    let first_snapshot = further.iter().fold(f.order.discount_snapshot, |s, h| {
        s.saturating_sub(h.snapshot)
    });
    let Some(first) = f.coupon.filter(|_| {
        !further.is_empty()
            && f.order.kind == OrderKind::Presale
            && f.order.status == OrderStatus::DepositPaid
    }) else {
        return coupon_validity(f);
    };
    let one = |coupon: &CouponFacts, snapshot: Cents| {
        let order = OrderFacts {
            discount_snapshot: snapshot,
            ..f.order.clone()
        };
        coupon_validity(&HealthFacts {
            order: &order,
            coupon: Some(coupon),
            ..f.clone()
        })
        .about(&coupon.code)
    };
    let mut worst = one(first, first_snapshot);
    for h in further {
        let check = one(&h.coupon, h.snapshot);
        if check.result > worst.result {
            worst = check;
        }
    }
    worst
}

/// `coupon_validity`: for a presale order holding its coupon, whether the
/// coupon lasts into the final-payment window and, if not, what the
/// campaign's policy will do (decided by [`plan_final_payment`] at the
/// earliest moment the final payment can happen).
pub fn coupon_validity(f: &HealthFacts<'_>) -> Check {
    let o = f.order;
    let no = &o.order_no;
    if let (Some(c), Some(campaign), OrderKind::Presale, OrderStatus::FinalPaid) =
        (f.coupon, f.campaign, o.kind, o.status)
        && let Some(check) = expired_before_final_payment(f, c, campaign)
    {
        return check;
    }
    let (Some(c), Some(campaign), OrderKind::Presale, OrderStatus::DepositPaid) =
        (f.coupon, f.campaign, o.kind, o.status)
    else {
        return Check::ok(
            COUPON_VALIDITY,
            crate::msg!("health-nothing-to-check-no-coupon"),
        );
    };
    if c.stored_status != CouponStatus::Locked || c.order_no.as_deref() != Some(no.as_str()) {
        return Check::ok(
            COUPON_VALIDITY,
            crate::msg!("health-nothing-to-check-the-coupon"),
        );
    }
    let ends = when(c.ends_at);
    let window_ends = when(campaign.window.ends);
    if c.ends_at >= campaign.window.ends {
        return Check::ok(
            COUPON_VALIDITY,
            crate::msg!(
                "health-the-coupon-is-valid-until",
                ends = &ends,
                window_ends = &window_ends
            ),
        );
    }
    let pay_at = if f.now > campaign.window.starts {
        f.now
    } else {
        campaign.window.starts
    };
    let held = HeldCoupon {
        stored_status: c.stored_status,
        locked_to: c.order_no.clone(),
        ends_at: c.ends_at,
        kind: c.kind,
    };
    let presale = PresaleOrder {
        order_no: no,
        // No candidates are judged, so no line is read.
        lines: &[],
        money: o.money,
        snapshot_discount: o.discount_snapshot,
    };
    let discount = o.discount_snapshot.yuan();
    let outcome = plan_final_payment(campaign.policy, &presale, Some(&held), &[], pay_at)
        .map(|p| p.outcome)
        .unwrap_or(CouponOutcome::None);
    match (campaign.policy, outcome) {
        (Policy::Lock, _) => Check::ok(
            COUPON_VALIDITY,
            crate::msg!(
                "health-the-coupon-ends-at-but",
                ends = &ends,
                discount = &discount
            ),
        ),
        (Policy::Strict, CouponOutcome::NoDiscountExpired) => Check::warning(
            COUPON_VALIDITY,
            crate::msg!(
                "health-the-coupon-ends-at-before",
                ends = &ends,
                discount = &discount
            ),
        )
        .suggest(compensation(o, Some(&c.id))),
        (Policy::Strict, _) => Check::warning(
            COUPON_VALIDITY,
            crate::msg!(
                "health-the-coupon-ends-at-before-2",
                ends = &ends,
                window_ends = &window_ends,
                discount = &discount
            ),
        ),
        (_, CouponOutcome::Applied) => Check::warning(
            COUPON_VALIDITY,
            crate::msg!(
                "health-the-coupon-ends-at-paid",
                ends = &ends,
                discount = &discount
            ),
        ),
        _ => Check::ok(
            COUPON_VALIDITY,
            crate::msg!(
                "health-the-coupon-ends-at-before-3",
                ends = &ends,
                discount = &discount
            ),
        ),
    }
}

/// The case couponkeeper exists for, after the fact: a presale order under
/// `strict` whose coupon ended before the final payment could use it, so
/// the final payment gave none of the discount promised at the deposit.
/// The order is paid and its coupon expired, so every other check is
/// content; this one says what the customer lost, and either that it was
/// compensated (with how much and when) or, as a warning, that it was not,
/// suggesting compensation of the lost discount. `None` for any other
/// paid order.
fn expired_before_final_payment(
    f: &HealthFacts<'_>,
    c: &CouponFacts,
    campaign: &CampaignFacts,
) -> Option<Check> {
    let o = f.order;
    let lost = o.discount_snapshot.get() - o.money.discount.get();
    let expired_unused = c.stored_status == CouponStatus::Expired
        && o.coupon_lock_status == CouponLockStatus::Released
        && o.coupon_id.as_deref() == Some(c.id.as_str());
    if campaign.policy != Policy::Strict
        || !expired_unused
        || lost <= 0
        || c.ends_at >= campaign.window.ends
    {
        return None;
    }
    let ends = when(c.ends_at);
    let opens = when(campaign.window.starts);
    let discount = crate::domain::money::Cents::from_stored(lost).yuan();
    let before_window = c.ends_at < campaign.window.starts;
    Some(match f.compensated {
        Some(given) => {
            let amount = crate::domain::money::Cents::from_stored(given.cents).yuan();
            let at = when(given.last_at);
            let msg = if before_window {
                crate::msg!(
                    "health-strict-expired-compensated",
                    ends = &ends,
                    opens = &opens,
                    discount = &discount,
                    given = &amount,
                    at = &at
                )
            } else {
                crate::msg!(
                    "health-strict-expired-in-window-compensated",
                    ends = &ends,
                    discount = &discount,
                    given = &amount,
                    at = &at
                )
            };
            Check::ok(COUPON_VALIDITY, msg)
        }
        None => {
            let msg = if before_window {
                crate::msg!(
                    "health-strict-expired-no-discount",
                    ends = &ends,
                    opens = &opens,
                    discount = &discount
                )
            } else {
                crate::msg!(
                    "health-strict-expired-in-window-no-discount",
                    ends = &ends,
                    discount = &discount
                )
            };
            Check::warning(COUPON_VALIDITY, msg).suggest(SuggestedAction::IssueCompensation {
                user_id: o.user_id.clone(),
                order_no: o.order_no.clone(),
                amount_cents: lost,
                coupon_id: Some(c.id.clone()),
            })
        }
    })
}

/// `checkout_lock`: a normal order's checkout lock that lapsed while its
/// coupon is still locked is a problem (the coupon is stuck).
pub fn checkout_lock(f: &HealthFacts<'_>) -> Check {
    let o = f.order;
    let no = &o.order_no;
    if o.kind != OrderKind::Normal || o.status != OrderStatus::PendingPayment {
        return Check::ok(
            CHECKOUT_LOCK,
            crate::msg!("health-nothing-to-check-no-checkout"),
        );
    }
    let Some(expires) = o.checkout_lock_expires_at else {
        return Check::ok(
            CHECKOUT_LOCK,
            crate::msg!("health-order-holds-no-checkout-lock", no = &no),
        );
    };
    let at = when(expires);
    let locked_here = f.coupon.is_some_and(|c| {
        c.stored_status == CouponStatus::Locked && c.order_no.as_deref() == Some(no.as_str())
    });
    match (expires <= f.now, locked_here, f.coupon) {
        (true, true, Some(c)) => Check::problem(
            CHECKOUT_LOCK,
            crate::msg!("health-the-coupon-was-reserved-for", no = &no, at = &at),
        )
        .suggest(SuggestedAction::ReleaseCoupon {
            coupon_id: c.id.clone(),
        }),
        (true, _, _) => Check::ok(
            CHECKOUT_LOCK,
            crate::msg!("health-the-checkout-lock-of-order", no = &no, at = &at),
        ),
        (false, _, _) => Check::ok(
            CHECKOUT_LOCK,
            crate::msg!("health-the-coupon-is-reserved-for-2", no = &no, at = &at),
        ),
    }
}

/// `template_stock`: the template's claimed counter equals the number of
/// coupons it issued (live and archived); a difference is a warning (stock
/// was taken without a coupon, or a coupon written without stock).
pub fn template_stock(f: &HealthFacts<'_>) -> Check {
    let Some(s) = f.stock else {
        return Check::ok(
            TEMPLATE_STOCK,
            crate::msg!("health-nothing-to-check-the-coupon-2"),
        );
    };
    let t = &s.template_name;
    match (s.checked_at, s.mismatch) {
        (None, _) => Check::ok(
            TEMPLATE_STOCK,
            crate::msg!(
                "health-template-claimed-reconciliation-has-not",
                t = &t,
                claimed = s.claimed
            ),
        ),
        (Some(at), None) => Check::ok(
            TEMPLATE_STOCK,
            crate::msg!(
                "health-template-claimed-the-counter-matched",
                t = &t,
                claimed = s.claimed,
                at = when(at)
            ),
        ),
        (Some(at), Some((claimed, issued))) => Check::warning(
            TEMPLATE_STOCK,
            crate::msg!(
                "health-template-at-the-last-reconciliation",
                t = &t,
                at = when(at),
                claimed = &claimed,
                issued = &issued
            ),
        ),
    }
}

/// `stray_lock` for a user's locked coupon: the order it is locked to is
/// missing, no longer live, or names another coupon. `None` when the lock
/// is legitimate.
pub fn stray_lock(coupon: &CouponFacts, order: Option<&PartnerOrder>) -> Option<Check> {
    if coupon.stored_status != CouponStatus::Locked {
        return None;
    }
    let id = &coupon.id;
    let named = coupon.order_no.as_deref().unwrap_or("-");
    let why = match order {
        None => Arg::Key("health-why-order-missing".into()),
        Some(o) if o.coupon_id.as_deref() != Some(id.as_str()) => {
            Arg::Key("health-why-order-uses-another-coupon".into())
        }
        // Paid with this coupon: the lock is stale, but releasing it would
        // let the coupon be used twice. It is marked used instead.
        Some(o) if order_took_coupon(o.status, o.coupon_lock_status) => {
            return Some(
                Check::problem(
                    STRAY_LOCK,
                    crate::msg!(
                        "health-coupon-is-still-locked-to",
                        coupon = &coupon.code,
                        named = &named,
                        status = Arg::Key(o.status.label_key().into())
                    ),
                )
                .suggest(SuggestedAction::MarkCouponUsed {
                    order_no: o.order_no.clone(),
                    coupon_id: id.clone(),
                }),
            );
        }
        Some(o) if !o.status.is_live() => Arg::Key(o.status.label_key().into()),
        Some(_) => return None,
    };
    Some(
        Check::problem(
            STRAY_LOCK,
            crate::msg!(
                "health-coupon-is-locked-to-order-2",
                coupon = &coupon.code,
                named = &named,
                why = why.clone()
            ),
        )
        .suggest(SuggestedAction::ReleaseCoupon {
            coupon_id: id.clone(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::discount::DiscountKind;
    use crate::domain::money::Cents;
    use crate::domain::order::OrderMoney;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-11T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    fn h(n: i64) -> Duration {
        Duration::hours(n)
    }

    fn order(kind: OrderKind, status: OrderStatus) -> OrderFacts {
        OrderFacts {
            order_no: "P123".into(),
            user_id: "u1".into(),
            kind,
            status,
            coupon_id: Some("c1".into()),
            coupon_lock_status: CouponLockStatus::Locked,
            money: OrderMoney {
                total: Cents::from_stored(39900),
                deposit: Cents::from_stored(10000),
                discount: Cents::from_stored(5000),
                compensation: Cents::ZERO,
            },
            discount_snapshot: Cents::from_stored(5000),
            checkout_lock_expires_at: None,
            coupon_units: None,
            further: Vec::new(),
        }
    }

    fn coupon(status: CouponStatus, order_no: Option<&str>, ends: DateTime<Utc>) -> CouponFacts {
        CouponFacts {
            id: "c1".into(),
            code: "K7QM-3XPA-9RTD".into(),
            user_id: "u1".into(),
            stored_status: status,
            order_no: order_no.map(OrderNo::from),
            ends_at: ends,
            template_id: Some("t1".into()),
            kind: DiscountKind::Fixed,
        }
    }

    fn campaign(policy: Policy) -> CampaignFacts {
        CampaignFacts {
            window: PaymentWindow {
                starts: t0() + h(24),
                ends: t0() + h(48),
            },
            policy,
        }
    }

    fn facts<'a>(
        o: &'a OrderFacts,
        c: Option<&'a CouponFacts>,
        cmp: Option<&'a CampaignFacts>,
    ) -> HealthFacts<'a> {
        HealthFacts {
            order: o,
            coupon: c,
            coupon_order: None,
            strays: &[],
            campaign: cmp,
            stock: None,
            compensated: None,
            further: &[],
            now: t0(),
        }
    }

    /// A further coupon of snapshot and discount in cents, recorded on the
    /// order as `lock`.
    fn held(
        coupon: CouponFacts,
        snapshot: i64,
        discount: i64,
        lock: CouponLockStatus,
    ) -> HeldFurther {
        HeldFurther {
            coupon,
            snapshot: Cents::from_stored(snapshot),
            discount: Cents::from_stored(discount),
            lock_status: lock,
            units: None,
            coupon_order: None,
            compensated: None,
        }
    }

    #[test]
    fn of_a_presale_order_of_several_coupons_the_one_ending_before_the_final_payment_is_named_with_its_own_discount()
     {
        // 50.00 in all: the order row's coupon 30.00 (valid past the
        // window), a further coupon 20.00 ending before it opens.
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let first = coupon(CouponStatus::Locked, Some("P123"), t0() + h(72));
        let mut dying = coupon(CouponStatus::Locked, Some("P123"), t0() + h(12));
        dying.id = "c2".into();
        dying.code = "D2D2-D2D2-D2D2".into();
        let further = [held(dying, 2000, 2000, CouponLockStatus::Locked)];
        let cmp = campaign(Policy::Strict);
        let mut f = facts(&o, Some(&first), Some(&cmp));
        f.further = &further;
        let check = coupon_validity_of_each(&f);
        assert_eq!(check.result, CheckResult::Warning);
        assert_eq!(check.coupon.as_deref(), Some("D2D2-D2D2-D2D2"));
        let zh = check.zh();
        assert!(zh.starts_with("券 D2D2-D2D2-D2D2："), "{zh}");
        assert!(zh.contains("20.00"), "its own discount: {zh}");
        assert_eq!(
            check.suggested_action,
            Some(SuggestedAction::IssueCompensation {
                user_id: "u1".into(),
                order_no: "P123".into(),
                amount_cents: 2000,
                coupon_id: Some("c2".into()),
            })
        );
        // Both valid past the window: the first coupon's answer, by code.
        let mut lasting = further.clone();
        lasting[0].coupon.ends_at = t0() + h(72);
        f.further = &lasting;
        let check = coupon_validity_of_each(&f);
        assert_eq!(check.result, CheckResult::Ok);
        assert_eq!(check.coupon.as_deref(), Some("K7QM-3XPA-9RTD"));
        assert!(
            check.zh().starts_with("券 K7QM-3XPA-9RTD：这张券有效期至"),
            "{}",
            check.zh()
        );
    }

    /// A further coupon of order P123: id c2, code D2D2-D2D2-D2D2.
    fn second(status: CouponStatus, order_no: Option<&str>, ends: DateTime<Utc>) -> CouponFacts {
        let mut c = coupon(status, order_no, ends);
        c.id = "c2".into();
        c.code = "D2D2-D2D2-D2D2".into();
        c
    }

    #[test]
    fn a_paid_order_of_several_coupons_judges_each_and_names_the_further_coupon_out_of_use() {
        let mut o = order(OrderKind::Normal, OrderStatus::Paid);
        o.coupon_lock_status = CouponLockStatus::Used;
        let first = coupon(CouponStatus::Used, Some("P123"), t0() + h(100));
        // Every coupon used by the order: fine, said of the first by code.
        let used = [held(
            second(CouponStatus::Used, Some("P123"), t0() + h(100)),
            0,
            2000,
            CouponLockStatus::Used,
        )];
        let mut f = facts(&o, Some(&first), None);
        f.further = &used;
        let checks = check_order(&f);
        assert_eq!(overall(&checks), CheckResult::Ok, "{checks:#?}");
        let status = find(&checks, COUPON_STATUS);
        assert_eq!(status.coupon.as_deref(), Some("K7QM-3XPA-9RTD"));
        // The further coupon freed behind the order's back: a warning
        // naming it, though the coupon the order names is fine.
        let freed = [held(
            second(CouponStatus::Available, None, t0() + h(100)),
            0,
            2000,
            CouponLockStatus::Used,
        )];
        f.further = &freed;
        let check = coupon_status_of_each(&f);
        assert_eq!(check.result, CheckResult::Warning, "{}", check.zh());
        assert_eq!(check.coupon.as_deref(), Some("D2D2-D2D2-D2D2"));
        assert!(
            check.zh().starts_with("券 D2D2-D2D2-D2D2："),
            "{}",
            check.zh()
        );
        assert!(check.en().contains("D2D2-D2D2-D2D2"), "{}", check.en());
        // Still locked on the paid order: a problem, and no repair is
        // suggested (the repairs work on the coupon the order names).
        let locked = [held(
            second(CouponStatus::Locked, Some("P123"), t0() + h(100)),
            0,
            2000,
            CouponLockStatus::Used,
        )];
        f.further = &locked;
        let check = coupon_status_of_each(&f);
        assert_eq!(check.result, CheckResult::Problem, "{}", check.en());
        assert_eq!(check.coupon.as_deref(), Some("D2D2-D2D2-D2D2"));
        assert_eq!(check.suggested_action, None);
        // A deposit-paid order is not read coupon by coupon here.
        let live = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let mut g = facts(&live, Some(&first), None);
        g.further = &freed;
        assert_eq!(coupon_status_of_each(&g).coupon, None);
    }

    #[test]
    fn a_further_coupon_of_a_paid_order_bound_to_another_order_breaks_the_link_by_its_code() {
        let mut o = order(OrderKind::Normal, OrderStatus::Paid);
        o.coupon_lock_status = CouponLockStatus::Used;
        let first = coupon(CouponStatus::Used, Some("P123"), t0() + h(100));
        let closed = PartnerOrder {
            order_no: "P999".into(),
            status: OrderStatus::Closed,
            coupon_id: Some("c2".into()),
            coupon_lock_status: CouponLockStatus::Locked,
        };
        let mut elsewhere = held(
            second(CouponStatus::Locked, Some("P999"), t0() + h(100)),
            0,
            2000,
            CouponLockStatus::Used,
        );
        elsewhere.coupon_order = Some(closed);
        let further = [elsewhere];
        let mut f = facts(&o, Some(&first), None);
        f.further = &further;
        let check = lock_link_of_each(&f);
        assert_eq!(check.result, CheckResult::Problem, "{}", check.en());
        assert!(
            check.zh().starts_with("券 D2D2-D2D2-D2D2："),
            "{}",
            check.zh()
        );
        assert_eq!(
            check.suggested_action,
            Some(SuggestedAction::ReleaseCoupon {
                coupon_id: "c2".into()
            })
        );
        // A stray of the order comes first, as for an order of one coupon.
        let mut stray = coupon(CouponStatus::Locked, Some("P123"), t0() + h(1));
        stray.id = "c9".into();
        let strays = [stray];
        f.strays = &strays;
        assert_eq!(
            lock_link_of_each(&f).suggested_action,
            Some(SuggestedAction::ReleaseCoupon {
                coupon_id: "c9".into()
            })
        );
    }

    #[test]
    fn after_a_strict_final_payment_a_further_coupon_that_lost_its_discount_is_suggested_for_its_own_snapshot()
     {
        // 50.00 promised: the first coupon 30.00 (used), a further 20.00
        // that ended before the window and gave nothing.
        let mut o = order(OrderKind::Presale, OrderStatus::FinalPaid);
        o.coupon_lock_status = CouponLockStatus::Used;
        o.money.discount = Cents::from_stored(3000);
        let first = coupon(CouponStatus::Used, Some("P123"), t0() + h(100));
        let mut lost = held(
            second(CouponStatus::Expired, Some("P123"), t0() + h(12)),
            2000,
            0,
            CouponLockStatus::Released,
        );
        let cmp = campaign(Policy::Strict);
        let further = [lost.clone()];
        let mut f = facts(&o, Some(&first), Some(&cmp));
        f.now = t0() + h(30);
        f.further = &further;
        // Compensation given for the first coupon is not this one's.
        f.compensated = Some(CompensationGiven {
            cents: 3000,
            last_at: t0() + h(31),
        });
        let checks = check_order(&f);
        let v = find(&checks, COUPON_VALIDITY);
        assert_eq!(v.result, CheckResult::Warning, "{}", v.en());
        assert!(v.zh().starts_with("券 D2D2-D2D2-D2D2："), "{}", v.zh());
        assert!(v.en().contains("20.00"), "its own discount: {}", v.en());
        assert_eq!(
            v.suggested_action,
            Some(SuggestedAction::IssueCompensation {
                user_id: "u1".into(),
                order_no: "P123".into(),
                amount_cents: 2000,
                coupon_id: Some("c2".into()),
            })
        );
        // The other checks are content: each coupon is where it should be.
        assert_eq!(find(&checks, COUPON_STATUS).result, CheckResult::Ok);
        assert_eq!(find(&checks, LOCK_LINK).result, CheckResult::Ok);
        // Compensated for itself: it says so and suggests nothing.
        lost.compensated = Some(CompensationGiven {
            cents: 2000,
            last_at: t0() + h(31),
        });
        let further = [lost];
        f.further = &further;
        let v = coupon_validity_of_each(&f);
        assert_eq!(v.result, CheckResult::Ok, "{}", v.en());
        assert_eq!(v.suggested_action, None);
    }

    /// The headline case: a strict presale paid with its coupon expired
    /// before the final payment opened, so no discount.
    fn paid_without_the_expired_coupon() -> (OrderFacts, CouponFacts) {
        let mut o = order(OrderKind::Presale, OrderStatus::FinalPaid);
        o.coupon_lock_status = CouponLockStatus::Released;
        o.money.discount = Cents::ZERO;
        let c = coupon(CouponStatus::Expired, Some("P123"), t0() + h(12));
        (o, c)
    }

    #[test]
    fn a_strict_presale_paid_without_its_expired_coupon_is_a_warning_that_suggests_the_lost_discount()
     {
        let (o, c) = paid_without_the_expired_coupon();
        let cmp = campaign(Policy::Strict);
        let mut f = facts(&o, Some(&c), Some(&cmp));
        f.now = t0() + h(30);
        let checks = check_order(&f);
        let v = find(&checks, COUPON_VALIDITY);
        assert_eq!(v.result, CheckResult::Warning, "{}", v.en());
        assert!(v.en().contains("50.00"), "{}", v.en());
        assert_eq!(
            v.suggested_action,
            Some(SuggestedAction::IssueCompensation {
                user_id: "u1".into(),
                order_no: "P123".into(),
                amount_cents: 5000,
                coupon_id: Some("c1".into()),
            })
        );
        assert_eq!(overall(&checks), CheckResult::Warning, "not all normal");
        // Once compensated, it says so and suggests nothing more.
        f.compensated = Some(CompensationGiven {
            cents: 5000,
            last_at: t0() + h(31),
        });
        let checks = check_order(&f);
        let v = find(&checks, COUPON_VALIDITY);
        assert_eq!(v.result, CheckResult::Ok, "{}", v.en());
        assert!(v.en().contains("compensat"), "{}", v.en());
        assert_eq!(v.suggested_action, None);
        // Under `lock` the discount applied; nothing of this is said.
        let lock = campaign(Policy::Lock);
        let mut applied = o.clone();
        applied.money.discount = Cents::from_stored(5000);
        let checks = check_order(&facts(&applied, Some(&c), Some(&lock)));
        assert_eq!(find(&checks, COUPON_VALIDITY).result, CheckResult::Ok);
    }

    fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("check {name} present"))
    }

    #[test]
    fn a_healthy_deposit_paid_order_is_ok_everywhere_and_says_what_the_customer_gets() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
        let cmp = campaign(Policy::Strict);
        let checks = check_order(&facts(&o, Some(&c), Some(&cmp)));
        assert_eq!(checks.len(), 6);
        assert_eq!(overall(&checks), CheckResult::Ok, "{checks:#?}");
        assert_eq!(
            find(&checks, COUPON_STATUS).zh(),
            "这张券已为订单 P123 锁定，付尾款时自动抵扣 50.00 元。"
        );
    }

    #[test]
    fn a_pending_normal_order_past_its_checkout_lock_is_a_problem_with_a_stuck_coupon() {
        let mut o = order(OrderKind::Normal, OrderStatus::PendingPayment);
        o.checkout_lock_expires_at = Some(t0() - h(1));
        let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
        let checks = check_order(&facts(&o, Some(&c), None));
        let s = find(&checks, ORDER_STATUS);
        assert_eq!(s.result, CheckResult::Problem);
        assert_eq!(
            s.suggested_action.as_ref().map(SuggestedAction::code),
            Some("cancel_order")
        );
        let l = find(&checks, CHECKOUT_LOCK);
        assert_eq!(l.result, CheckResult::Problem);
        assert_eq!(
            l.suggested_action,
            Some(SuggestedAction::ReleaseCoupon {
                coupon_id: "c1".into()
            })
        );
        assert_eq!(overall(&checks), CheckResult::Problem);
    }

    #[test]
    fn a_running_checkout_lock_is_fine() {
        let mut o = order(OrderKind::Normal, OrderStatus::PendingPayment);
        o.checkout_lock_expires_at = Some(t0() + h(1));
        let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
        let checks = check_order(&facts(&o, Some(&c), None));
        assert_eq!(overall(&checks), CheckResult::Ok, "{checks:#?}");
    }

    #[test]
    fn a_deposit_paid_order_after_its_window_is_a_warning() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
        let cmp = campaign(Policy::Lock);
        let mut f = facts(&o, Some(&c), Some(&cmp));
        f.now = t0() + h(49);
        assert_eq!(order_status(&f).result, CheckResult::Warning);
    }

    #[test]
    fn a_coupon_still_locked_to_a_closed_or_refunded_order_is_a_problem_to_release() {
        for status in [OrderStatus::Closed, OrderStatus::Refunded] {
            let mut o = order(OrderKind::Presale, status);
            o.coupon_lock_status = CouponLockStatus::Released;
            let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
            let check = coupon_status(&facts(&o, Some(&c), None));
            assert_eq!(check.result, CheckResult::Problem);
            assert_eq!(
                check.suggested_action,
                Some(SuggestedAction::ReleaseCoupon {
                    coupon_id: "c1".into()
                })
            );
        }
    }

    #[test]
    fn a_live_order_whose_coupon_is_not_locked_is_a_problem() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        // Still available and valid: lock it to the order again.
        let c = coupon(CouponStatus::Available, None, t0() + h(100));
        let check = coupon_status(&facts(&o, Some(&c), None));
        assert_eq!(check.result, CheckResult::Problem);
        assert_eq!(
            check.suggested_action,
            Some(SuggestedAction::RepairLink {
                order_no: "P123".into(),
                coupon_id: "c1".into()
            })
        );
        // Ended meanwhile: the promised discount as compensation.
        let ended = coupon(CouponStatus::Available, None, t0() - h(1));
        let check = coupon_status(&facts(&o, Some(&ended), None));
        assert_eq!(check.result, CheckResult::Problem);
        assert_eq!(
            check.suggested_action,
            Some(SuggestedAction::IssueCompensation {
                user_id: "u1".into(),
                order_no: "P123".into(),
                amount_cents: 5000,
                coupon_id: Some("c1".into()),
            })
        );
        let n = order(OrderKind::Normal, OrderStatus::PendingPayment);
        let check = coupon_status(&facts(&n, Some(&c), None));
        assert_eq!(check.result, CheckResult::Problem);
        assert_eq!(
            check.suggested_action.as_ref().map(SuggestedAction::code),
            Some("cancel_order")
        );
    }

    #[test]
    fn a_missing_coupon_is_a_problem() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let f = facts(&o, None, None);
        assert_eq!(coupon_status(&f).result, CheckResult::Problem);
    }

    #[test]
    fn paid_orders_expect_a_used_coupon_and_a_withdrawn_discount_expects_none() {
        let o = order(OrderKind::Normal, OrderStatus::Paid);
        let used = coupon(CouponStatus::Used, Some("P123"), t0() + h(1));
        assert_eq!(
            coupon_status(&facts(&o, Some(&used), None)).result,
            CheckResult::Ok
        );
        let avail = coupon(CouponStatus::Available, None, t0() + h(1));
        assert_eq!(
            coupon_status(&facts(&o, Some(&avail), None)).result,
            CheckResult::Warning
        );
        let mut fp = order(OrderKind::Presale, OrderStatus::FinalPaid);
        fp.coupon_lock_status = CouponLockStatus::Released;
        let expired = coupon(CouponStatus::Expired, None, t0() - h(1));
        assert_eq!(
            coupon_status(&facts(&fp, Some(&expired), None)).result,
            CheckResult::Ok
        );
    }

    #[test]
    fn a_coupon_still_locked_to_the_order_paid_with_it_is_a_problem_marked_used() {
        let mark = Some(SuggestedAction::MarkCouponUsed {
            order_no: "P123".into(),
            coupon_id: "c1".into(),
        });
        let locked = coupon(CouponStatus::Locked, Some("P123"), t0() + h(1));
        let mut paid = order(OrderKind::Normal, OrderStatus::Paid);
        paid.coupon_lock_status = CouponLockStatus::Used;
        let check = coupon_status(&facts(&paid, Some(&locked), None));
        assert_eq!(check.result, CheckResult::Problem);
        assert_eq!(check.suggested_action, mark);
        assert!(check.zh().contains("应标记为已在本订单使用"), "{check:?}");
        let mut fp = order(OrderKind::Presale, OrderStatus::FinalPaid);
        fp.coupon_lock_status = CouponLockStatus::Used;
        let check = coupon_status(&facts(&fp, Some(&locked), None));
        assert_eq!(check.suggested_action, mark);
        assert_eq!(
            overall(&check_order(&facts(&fp, Some(&locked), None))),
            CheckResult::Problem
        );
        // A final payment that withdrew the discount: the lock is released.
        fp.coupon_lock_status = CouponLockStatus::Released;
        let check = coupon_status(&facts(&fp, Some(&locked), None));
        assert_eq!(
            check.suggested_action.as_ref().map(SuggestedAction::code),
            Some("release_coupon")
        );
        // Seen from the user's locks: mark it used, never release it.
        let partner = PartnerOrder {
            order_no: "P123".into(),
            status: OrderStatus::Paid,
            coupon_id: Some("c1".into()),
            coupon_lock_status: CouponLockStatus::Used,
        };
        let stray = stray_lock(&locked, Some(&partner)).expect("a stale lock");
        assert_eq!(stray.result, CheckResult::Problem);
        assert_eq!(stray.suggested_action, mark);
    }

    #[test]
    fn a_refunded_order_whose_coupon_still_reads_used_is_a_warning() {
        let o = order(OrderKind::Normal, OrderStatus::Refunded);
        let c = coupon(CouponStatus::Used, Some("P123"), t0() + h(1));
        assert_eq!(
            coupon_status(&facts(&o, Some(&c), None)).result,
            CheckResult::Warning
        );
    }

    #[test]
    fn a_coupon_kept_for_units_is_fine_and_one_kept_after_every_unit_is_to_return() {
        use crate::domain::facts::CouponUnits;
        let mut o = order(OrderKind::Normal, OrderStatus::Paid);
        o.coupon_lock_status = CouponLockStatus::Used;
        o.coupon_units = Some(CouponUnits {
            kept: 2,
            refunded: 1,
        });
        let c = coupon(CouponStatus::Used, Some("P123"), t0() + h(1));
        let kept = coupon_status(&facts(&o, Some(&c), None));
        assert_eq!(kept.result, CheckResult::Ok, "{}", kept.en());
        assert_eq!(kept.suggested_action, None);
        o.coupon_units = Some(CouponUnits {
            kept: 0,
            refunded: 3,
        });
        let stuck = coupon_status(&facts(&o, Some(&c), None));
        assert_eq!(stuck.result, CheckResult::Problem, "{}", stuck.en());
        // Returned (by the last refund or the repair) while other items
        // are kept: the paid order no longer holds it, and that is fine.
        let mut returned_order = o.clone();
        returned_order.coupon_lock_status = CouponLockStatus::Released;
        let back = coupon(CouponStatus::Available, None, t0() + h(1));
        let fine = coupon_status(&facts(&returned_order, Some(&back), None));
        assert_eq!(fine.result, CheckResult::Ok, "{}", fine.en());
        assert_eq!(
            stuck.suggested_action,
            Some(SuggestedAction::ReturnCoupon {
                order_no: "P123".into(),
                coupon_id: "c1".into(),
            })
        );
    }

    #[test]
    fn a_coupon_bound_to_another_order_breaks_the_lock_link() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let c = coupon(CouponStatus::Locked, Some("P999"), t0() + h(100));
        let closed = PartnerOrder {
            order_no: "P999".into(),
            status: OrderStatus::Closed,
            coupon_id: Some("c1".into()),
            coupon_lock_status: CouponLockStatus::Locked,
        };
        let mut f = facts(&o, Some(&c), None);
        f.coupon_order = Some(&closed);
        let check = lock_link(&f);
        assert_eq!(check.result, CheckResult::Problem);
        assert_eq!(
            check.suggested_action.as_ref().map(SuggestedAction::code),
            Some("release_coupon")
        );
        let live = PartnerOrder {
            status: OrderStatus::DepositPaid,
            ..closed.clone()
        };
        f.coupon_order = Some(&live);
        let check = lock_link(&f);
        assert_eq!(
            check.suggested_action.as_ref().map(SuggestedAction::code),
            Some("issue_compensation"),
            "the partner legitimately holds it: make it up to this customer"
        );
    }

    #[test]
    fn a_coupon_locked_to_the_order_that_the_order_does_not_name_is_a_stray() {
        let o = order(OrderKind::Normal, OrderStatus::Paid);
        let mut stray = coupon(CouponStatus::Locked, Some("P123"), t0() + h(1));
        stray.id = "c9".into();
        let strays = [stray];
        let mut f = facts(&o, None, None);
        f.strays = &strays;
        let check = lock_link(&f);
        assert_eq!(check.result, CheckResult::Problem);
        assert_eq!(
            check.suggested_action,
            Some(SuggestedAction::ReleaseCoupon {
                coupon_id: "c9".into()
            })
        );
    }

    #[test]
    fn matching_links_and_unbound_coupons_are_fine() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
        assert_eq!(
            lock_link(&facts(&o, Some(&c), None)).result,
            CheckResult::Ok
        );
        let free = coupon(CouponStatus::Available, None, t0() + h(100));
        assert_eq!(
            lock_link(&facts(&o, Some(&free), None)).result,
            CheckResult::Ok
        );
    }

    #[test]
    fn coupon_validity_follows_each_policy() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid);
        let short = coupon(CouponStatus::Locked, Some("P123"), t0() + h(2));
        let long = coupon(CouponStatus::Locked, Some("P123"), t0() + h(100));
        let mid = coupon(CouponStatus::Locked, Some("P123"), t0() + h(30));
        let lock = campaign(Policy::Lock);
        let strict = campaign(Policy::Strict);
        let swap = campaign(Policy::SwapOrCompensate);
        let v =
            |c: &CouponFacts, cmp: &CampaignFacts| coupon_validity(&facts(&o, Some(c), Some(cmp)));
        for cmp in [&lock, &strict, &swap] {
            assert_eq!(v(&long, cmp).result, CheckResult::Ok);
        }
        assert_eq!(v(&short, &lock).result, CheckResult::Ok);
        assert!(v(&short, &lock).zh().contains("仍自动抵扣 50.00 元"));
        let s = v(&short, &strict);
        assert_eq!(s.result, CheckResult::Warning);
        assert_eq!(
            s.suggested_action.as_ref().map(SuggestedAction::code),
            Some("issue_compensation")
        );
        let m = v(&mid, &strict);
        assert_eq!(m.result, CheckResult::Warning);
        assert_eq!(
            m.suggested_action, None,
            "paying in time keeps the discount"
        );
        assert_eq!(v(&short, &swap).result, CheckResult::Ok);
        assert_eq!(v(&mid, &swap).result, CheckResult::Warning);
    }

    #[test]
    fn coupon_validity_has_nothing_to_say_outside_a_deposit_paid_presale_order() {
        let o = order(OrderKind::Normal, OrderStatus::PendingPayment);
        let c = coupon(CouponStatus::Locked, Some("P123"), t0() + h(2));
        assert_eq!(
            coupon_validity(&facts(&o, Some(&c), None)).result,
            CheckResult::Ok
        );
    }

    #[test]
    fn template_stock_reports_the_last_reconciliations_verdict() {
        let o = order(OrderKind::Normal, OrderStatus::Paid);
        let never = StockFacts {
            template_id: "t1".into(),
            template_name: "满300减50".into(),
            claimed: 3,
            checked_at: None,
            mismatch: None,
        };
        let ok = StockFacts {
            checked_at: Some(t0()),
            ..never.clone()
        };
        let off = StockFacts {
            mismatch: Some((4, 3)),
            ..ok.clone()
        };
        let mut f = facts(&o, None, None);
        f.stock = Some(&never);
        assert_eq!(template_stock(&f).result, CheckResult::Ok);
        f.stock = Some(&ok);
        assert_eq!(template_stock(&f).result, CheckResult::Ok);
        f.stock = Some(&off);
        let c = template_stock(&f);
        assert_eq!(c.result, CheckResult::Warning);
        assert!(c.en().contains("4 claimed but 3"));
        f.stock = None;
        assert_eq!(template_stock(&f).result, CheckResult::Ok);
    }

    #[test]
    fn stray_locks_are_found_for_missing_dead_or_other_orders() {
        let c = coupon(CouponStatus::Locked, Some("P1"), t0() + h(1));
        assert!(stray_lock(&c, None).is_some());
        let mut o = PartnerOrder {
            order_no: "P1".into(),
            status: OrderStatus::Closed,
            coupon_id: Some("c1".into()),
            coupon_lock_status: CouponLockStatus::Released,
        };
        assert!(stray_lock(&c, Some(&o)).is_some());
        o.status = OrderStatus::DepositPaid;
        assert!(stray_lock(&c, Some(&o)).is_none());
        o.coupon_id = Some("c2".into());
        assert!(stray_lock(&c, Some(&o)).is_some());
        let avail = coupon(CouponStatus::Available, None, t0() + h(1));
        assert!(stray_lock(&avail, None).is_none());
    }

    #[test]
    fn overall_is_the_worst_result_and_results_serialise_in_snake_case() {
        let checks = vec![
            Check::ok("a", Msg::new("health-order-uses-no-coupon")),
            Check::warning("b", Msg::new("health-order-uses-no-coupon")),
            Check::ok("c", Msg::new("health-order-uses-no-coupon")),
        ];
        assert_eq!(overall(&checks), CheckResult::Warning);
        assert_eq!(overall(&[]), CheckResult::Ok);
        assert_eq!(
            serde_json::to_string(&CheckResult::Problem).unwrap_or_default(),
            "\"problem\""
        );
        let a = SuggestedAction::ReleaseCoupon {
            coupon_id: "c1".into(),
        };
        assert_eq!(
            serde_json::to_value(&a).unwrap_or_default(),
            serde_json::json!({"code": "release_coupon", "coupon_id": "c1"})
        );
    }
}
