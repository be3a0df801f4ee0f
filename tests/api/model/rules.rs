//! A small in-memory model of API.md's coupon and order rules, for the
//! model-based HTTP test (`tests/api/model.rs`). Pure: no I/O, no clock but
//! `now_s`, no ids but those the driver copies in from the service.
//!
//! Times are whole seconds after the harness's epoch; money is cents. Every
//! operation either refuses with the API's 409 code and leaves the model as
//! it was (the service rolls the transaction back), or changes it as the
//! service must. Where API.md is silent the model follows what the service
//! does, and the comment on that rule says so.
//!
//! The harness runs no background jobs (no scheduler is installed), so
//! nothing changes between requests but the clock: an `available` coupon
//! past its end reads `expired` without any write, and a normal order whose
//! checkout lock lapsed stays `pending_payment` until someone acts on it.

/// Customers in the world.
pub const USERS: usize = 3;
/// `COUPONKEEPER_CHECKOUT_LOCK_SECONDS` default (API.md, `POST /orders`).
pub const CHECKOUT_LOCK_SECONDS: i64 = 900;
/// How long an `Idempotency-Key`'s first answer is replayed (API.md: 24 h).
pub const IDEMPOTENCY_RETENTION_SECONDS: i64 = 24 * 3600;

/// A business refusal: the API answers 409 with this code.
pub type Refusal = &'static str;

/// How a coupon takes money off an order (API.md, Discount).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Fixed {
        value_cents: i64,
    },
    Percent {
        percent_off: i64,
        max_discount_cents: Option<i64>,
    },
}

impl Rule {
    /// fixed = min(value, total); percent = floor(total * p / 100), capped.
    pub fn discount_cents(self, total_cents: i64) -> i64 {
        match self {
            Rule::Fixed { value_cents } => value_cents.min(total_cents),
            Rule::Percent {
                percent_off,
                max_discount_cents,
            } => {
                let raw = total_cents * percent_off / 100;
                max_discount_cents.map_or(raw, |cap| raw.min(cap))
            }
        }
    }

    /// Whether two rules are of the same `kind` (a swap keeps the kind).
    pub fn same_kind(self, other: Rule) -> bool {
        matches!(
            (self, other),
            (Rule::Fixed { .. }, Rule::Fixed { .. }) | (Rule::Percent { .. }, Rule::Percent { .. })
        )
    }
}

/// A template's validity: seconds after the claim, or an absolute window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    Relative { seconds: i64 },
    Absolute { from_s: i64, until_s: i64 },
}

/// A template as created at the start, with its claim counters.
#[derive(Debug, Clone)]
pub struct Template {
    pub rule: Rule,
    pub min_order_cents: i64,
    /// Empty: every category.
    pub categories: &'static [&'static str],
    pub validity: Validity,
    pub total_stock: i64,
    pub per_user_limit: i64,
    pub claimed: i64,
    pub claimed_by: [i64; USERS],
}

/// A campaign's presale policy (API.md, Campaigns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Lock,
    Strict,
    SwapOrCompensate,
}

impl Policy {
    /// The API's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Lock => "lock",
            Policy::Strict => "strict",
            Policy::SwapOrCompensate => "swap_or_compensate",
        }
    }
}

/// A presale campaign; its final-payment window is `[starts_s, ends_s)`.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub policy: Policy,
    pub starts_s: i64,
    pub ends_s: i64,
}

/// A coupon's status, stored or as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CouponStatus {
    Available,
    Locked,
    Used,
    Expired,
    Invalidated,
}

impl CouponStatus {
    /// The API's word.
    pub fn as_str(self) -> &'static str {
        match self {
            CouponStatus::Available => "available",
            CouponStatus::Locked => "locked",
            CouponStatus::Used => "used",
            CouponStatus::Expired => "expired",
            CouponStatus::Invalidated => "invalidated",
        }
    }
}

/// A coupon a customer holds.
#[derive(Debug, Clone)]
pub struct Coupon {
    /// The service's id, copied in by the driver after the claim answers.
    pub id: String,
    pub user: usize,
    /// None for a compensation coupon (outside any template and stock).
    pub template: Option<usize>,
    pub rule: Rule,
    pub min_order_cents: i64,
    pub categories: &'static [&'static str],
    /// The stored status; [`Model::coupon_status`] is what a reader sees.
    pub stored: CouponStatus,
    pub starts_s: i64,
    pub ends_s: i64,
    /// The order it is locked to or used by; none otherwise.
    pub order_no: Option<String>,
}

/// An order's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Presale,
}

impl Kind {
    /// The API's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Normal => "normal",
            Kind::Presale => "presale",
        }
    }
}

/// An order's status (both machines of API.md, Objects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderStatus {
    PendingPayment,
    Paid,
    PendingDeposit,
    DepositPaid,
    FinalPaid,
    Closed,
    Refunded,
}

impl OrderStatus {
    /// The API's word.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::PendingPayment => "pending_payment",
            OrderStatus::Paid => "paid",
            OrderStatus::PendingDeposit => "pending_deposit",
            OrderStatus::DepositPaid => "deposit_paid",
            OrderStatus::FinalPaid => "final_paid",
            OrderStatus::Closed => "closed",
            OrderStatus::Refunded => "refunded",
        }
    }

    /// Orders still awaiting a payment may hold a coupon lock.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            OrderStatus::PendingPayment | OrderStatus::PendingDeposit | OrderStatus::DepositPaid
        )
    }
}

/// `coupon_lock_status` of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    None,
    Locked,
    Used,
    Released,
}

impl Lock {
    /// The API's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Lock::None => "none",
            Lock::Locked => "locked",
            Lock::Used => "used",
            Lock::Released => "released",
        }
    }
}

/// One line of an order (API.md, Carts).
#[derive(Debug, Clone)]
pub struct Line {
    pub line_id: &'static str,
    pub category: &'static str,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub refunded_quantity: i64,
    pub refunded_cents: i64,
}

impl Line {
    pub fn amount(&self) -> i64 {
        self.quantity * self.unit_price_cents
    }
}

/// A line as `POST /orders` is asked for it: `(line_id, category,
/// quantity, unit_price_cents)`.
pub type LineSpec = (&'static str, &'static str, i64, i64);

/// API.md, Allocation: `discount` over `amounts` in proportion, in whole
/// cents, by largest remainder (ties: the earlier line). Written apart
/// from the service's `domain::allocation`, from the contract's words.
pub fn split(discount: i64, amounts: &[i64]) -> Vec<i64> {
    let total: i128 = amounts.iter().map(|a| i128::from(*a)).sum();
    if total == 0 || discount == 0 {
        return vec![0; amounts.len()];
    }
    let d = i128::from(discount);
    let mut parts: Vec<i64> = amounts
        .iter()
        .map(|a| i64::try_from(d * i128::from(*a) / total).unwrap_or(0))
        .collect();
    let mut left = discount - parts.iter().sum::<i64>();
    let mut order: Vec<usize> = (0..amounts.len()).collect();
    // Largest remainder first; the earlier line first among equals.
    order.sort_by_key(|&i| (std::cmp::Reverse(d * i128::from(amounts[i]) % total), i));
    for i in order {
        if left == 0 {
            break;
        }
        if parts[i] < amounts[i] {
            parts[i] += 1;
            left -= 1;
        }
    }
    parts
}

/// `floor(x × (r+q) / n) − floor(x × r / n)` (API.md, Partial refunds).
fn units_share(x: i64, n: i64, r: i64, q: i64) -> i64 {
    let at = |k: i64| i64::try_from(i128::from(x) * i128::from(k) / i128::from(n)).unwrap_or(0);
    at(r + q) - at(r)
}

/// What a refund by line answers: the money back and, when the order's
/// coupon was spent on it, the coupon's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundOutcome {
    pub refund_cents: i64,
    pub coupon: Option<&'static str>,
}

/// An order as the service must show it.
#[derive(Debug, Clone)]
pub struct Order {
    pub order_no: String,
    pub user: usize,
    pub kind: Kind,
    pub category: &'static str,
    pub total_cents: i64,
    pub deposit_cents: i64,
    pub campaign: Option<usize>,
    /// Index into [`Model::coupons`].
    pub coupon: Option<usize>,
    /// The expired coupon a swap replaced.
    pub replaced: Option<usize>,
    pub status: OrderStatus,
    pub discount_cents: i64,
    pub snapshot_cents: i64,
    pub lock: Lock,
    pub compensation_cents: i64,
    pub checkout_lock_expires_s: Option<i64>,
    pub final_payment_cents: Option<i64>,
    /// The single-category form is line "1" of one unit at the total.
    pub lines: Vec<Line>,
    /// What refunds gave back.
    pub refunded_cents: i64,
}

/// What `POST /orders` is asked for.
#[derive(Debug, Clone)]
pub struct NewOrder {
    pub order_no: String,
    pub user: usize,
    pub kind: Kind,
    pub category: &'static str,
    pub total_cents: i64,
    pub deposit_cents: i64,
    pub campaign: Option<usize>,
    pub coupon: Option<usize>,
    /// Sent as `lines` in place of `category` and `total_cents` (which
    /// are then the first line's category and the lines' sum).
    pub lines: Option<&'static [LineSpec]>,
}

impl NewOrder {
    /// The order's lines: the ones sent, or line "1" of the single form.
    pub fn lines(&self) -> Vec<Line> {
        let line = |(line_id, category, quantity, unit_price_cents): LineSpec| Line {
            line_id,
            category,
            quantity,
            unit_price_cents,
            refunded_quantity: 0,
            refunded_cents: 0,
        };
        match self.lines {
            Some(ls) => ls.iter().copied().map(line).collect(),
            None => vec![line(("1", self.category, 1, self.total_cents))],
        }
    }
}

/// The final-payment decision (API.md, final-payment-quote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub outcome: &'static str,
    pub discount_cents: i64,
    pub compensation_cents: i64,
    pub replacement: Option<usize>,
    pub amount_due_cents: i64,
}

/// The world as API.md says it must be.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub now_s: i64,
    pub templates: Vec<Template>,
    pub campaigns: Vec<Campaign>,
    pub coupons: Vec<Coupon>,
    pub orders: Vec<Order>,
}

/// Where a released or returned coupon goes: `available` while still
/// valid, else `expired` (API.md, cancel and refund).
fn release_target(ends_s: i64, now_s: i64) -> CouponStatus {
    if now_s < ends_s {
        CouponStatus::Available
    } else {
        CouponStatus::Expired
    }
}

/// What is left to pay at the final payment, never below zero.
fn final_amount(total: i64, deposit: i64, discount: i64, compensation: i64) -> i64 {
    (total - deposit - discount - compensation).max(0)
}

impl Model {
    /// Moves the model's clock, as the test moves the manual clock.
    pub fn advance(&mut self, seconds: i64) {
        self.now_s += seconds;
    }

    /// The effective status: an `available` coupon past `ends_at` reads
    /// `expired` before any job has run (`ends_at` is exclusive).
    pub fn coupon_status(&self, i: usize) -> CouponStatus {
        let c = &self.coupons[i];
        if c.stored == CouponStatus::Available && self.now_s >= c.ends_s {
            CouponStatus::Expired
        } else {
            c.stored
        }
    }

    fn order_index(&self, order_no: &str) -> Option<usize> {
        self.orders.iter().position(|o| o.order_no == order_no)
    }

    /// `POST /users/{u}/coupons`. Refusals in the service's order: a
    /// template whose coupon would be dead on arrival is inactive, then the
    /// per-user limit, then the stock (API.md names the codes, not their
    /// order). The per-user count is of coupons ever claimed, not held.
    pub fn claim(&mut self, user: usize, template: usize) -> Result<usize, Refusal> {
        let now = self.now_s;
        let t = &self.templates[template];
        let (starts_s, ends_s) = match t.validity {
            Validity::Relative { seconds } => (now, now + seconds),
            Validity::Absolute { from_s, until_s } => (from_s, until_s),
        };
        if ends_s <= starts_s || ends_s <= now {
            return Err("template_inactive");
        }
        if t.claimed_by[user] >= t.per_user_limit {
            return Err("claim_limit_reached");
        }
        if t.claimed >= t.total_stock {
            return Err("out_of_stock");
        }
        let coupon = Coupon {
            id: String::new(),
            user,
            template: Some(template),
            rule: t.rule,
            min_order_cents: t.min_order_cents,
            categories: t.categories,
            stored: CouponStatus::Available,
            starts_s,
            ends_s,
            order_no: None,
        };
        let t = &mut self.templates[template];
        t.claimed += 1;
        t.claimed_by[user] += 1;
        self.coupons.push(coupon);
        Ok(self.coupons.len() - 1)
    }

    /// The discount coupon `ci` gives `user`'s order now, or the refusal:
    /// owner, status, start, threshold, category, in that order (the
    /// service's order; API.md lists the codes). A presale discount is
    /// capped at what the deposit leaves (service rule: nobody is owed
    /// money at the final payment).
    fn validate(
        &self,
        ci: usize,
        user: usize,
        kind: Kind,
        lines: &[Line],
        deposit: i64,
    ) -> Result<i64, Refusal> {
        let total: i64 = lines.iter().map(Line::amount).sum();
        let c = &self.coupons[ci];
        if c.user != user {
            return Err("coupon_not_owned");
        }
        match self.coupon_status(ci) {
            CouponStatus::Available => {}
            CouponStatus::Expired => return Err("coupon_expired"),
            _ => return Err("coupon_not_available"),
        }
        if self.now_s < c.starts_s {
            return Err("coupon_not_started");
        }
        // Some line must be eligible before the eligible amount is judged
        // against the threshold (API.md, Carts: "No eligible line: 409
        // coupon_not_applicable").
        let eligible: Vec<&Line> = lines
            .iter()
            .filter(|l| c.categories.is_empty() || c.categories.contains(&l.category))
            .collect();
        if eligible.is_empty() {
            return Err("coupon_not_applicable");
        }
        let eligible_amount: i64 = eligible.iter().map(|l| l.amount()).sum();
        if eligible_amount < c.min_order_cents {
            return Err("threshold_not_met");
        }
        let d = c.rule.discount_cents(eligible_amount);
        Ok(match kind {
            Kind::Normal => d,
            Kind::Presale => d.min(total - deposit),
        })
    }

    /// `POST /orders`. A presale order on a campaign whose window has
    /// ended is refused `outside_payment_window` (service rule; API.md
    /// names the code only for the final payment). A normal order locks its
    /// coupon for the checkout; a presale one only validates it.
    pub fn create_order(&mut self, n: &NewOrder) -> Result<usize, Refusal> {
        if self.order_index(&n.order_no).is_some() {
            return Err("order_exists");
        }
        if let Some(k) = n.campaign
            && self.now_s >= self.campaigns[k].ends_s
        {
            return Err("outside_payment_window");
        }
        let lines = n.lines();
        let discount = match n.coupon {
            Some(ci) => self.validate(ci, n.user, n.kind, &lines, n.deposit_cents)?,
            None => 0,
        };
        let locks_now = n.kind == Kind::Normal && n.coupon.is_some();
        if locks_now && let Some(ci) = n.coupon {
            let c = &mut self.coupons[ci];
            c.stored = CouponStatus::Locked;
            c.order_no = Some(n.order_no.clone());
        }
        self.orders.push(Order {
            order_no: n.order_no.clone(),
            user: n.user,
            kind: n.kind,
            category: n.category,
            total_cents: n.total_cents,
            deposit_cents: n.deposit_cents,
            campaign: n.campaign,
            coupon: n.coupon,
            replaced: None,
            status: match n.kind {
                Kind::Normal => OrderStatus::PendingPayment,
                Kind::Presale => OrderStatus::PendingDeposit,
            },
            // A presale order shows the discount it would get now; the
            // snapshot is taken at the deposit (service behaviour).
            discount_cents: discount,
            snapshot_cents: if locks_now { discount } else { 0 },
            lock: if locks_now { Lock::Locked } else { Lock::None },
            compensation_cents: 0,
            checkout_lock_expires_s: locks_now.then_some(self.now_s + CHECKOUT_LOCK_SECONDS),
            final_payment_cents: None,
            lines,
            refunded_cents: 0,
        });
        Ok(self.orders.len() - 1)
    }

    fn require(&self, oi: usize, kind: Kind, statuses: &[OrderStatus]) -> Result<(), Refusal> {
        let o = &self.orders[oi];
        if o.kind != kind {
            return Err("order_kind_mismatch");
        }
        if !statuses.contains(&o.status) {
            return Err("invalid_order_status");
        }
        Ok(())
    }

    /// Whether a normal order awaiting payment has outlived its checkout
    /// lock (at `checkout_lock_expires_at` exactly, it has).
    fn lapsed(&self, o: &Order) -> bool {
        o.kind == Kind::Normal
            && o.status == OrderStatus::PendingPayment
            && o.checkout_lock_expires_s.is_some_and(|t| t <= self.now_s)
    }

    /// `POST /orders/{no}/pay`: coupon `used`, order `paid`. After the
    /// checkout lock lapsed the payment is refused `checkout_lock_expired`
    /// (service rule: the lock "lapses"; API.md has no code for it). A
    /// coupon that ended while its checkout lock held is still used.
    pub fn pay(&mut self, oi: usize) -> Result<(), Refusal> {
        self.require(oi, Kind::Normal, &[OrderStatus::PendingPayment])?;
        let o = &self.orders[oi];
        if let Some(ci) = o.coupon {
            if self.lapsed(o) {
                return Err("checkout_lock_expired");
            }
            let c = &self.coupons[ci];
            if c.stored != CouponStatus::Locked || c.order_no.as_deref() != Some(&o.order_no) {
                return Err("coupon_lock_mismatch");
            }
            self.coupons[ci].stored = CouponStatus::Used;
        }
        let o = &mut self.orders[oi];
        if o.coupon.is_some() {
            o.lock = Lock::Used;
        }
        o.status = OrderStatus::Paid;
        o.checkout_lock_expires_s = None;
        Ok(())
    }

    /// `POST /orders/{no}/deposit-payment`: the coupon validated again and
    /// locked, the discount snapshotted. Refused once the campaign's
    /// window has ended (service rule, as at creation).
    pub fn pay_deposit(&mut self, oi: usize) -> Result<(), Refusal> {
        self.require(oi, Kind::Presale, &[OrderStatus::PendingDeposit])?;
        let o = &self.orders[oi];
        let campaign = &self.campaigns[o.campaign.unwrap_or_default()];
        if self.now_s >= campaign.ends_s {
            return Err("outside_payment_window");
        }
        let discount = match o.coupon {
            Some(ci) => self.validate(ci, o.user, Kind::Presale, &o.lines, o.deposit_cents)?,
            None => 0,
        };
        let no = o.order_no.clone();
        if let Some(ci) = o.coupon {
            let c = &mut self.coupons[ci];
            c.stored = CouponStatus::Locked;
            c.order_no = Some(no);
        }
        let o = &mut self.orders[oi];
        o.discount_cents = discount;
        o.snapshot_cents = discount;
        if o.coupon.is_some() {
            o.lock = Lock::Locked;
        }
        o.status = OrderStatus::DepositPaid;
        Ok(())
    }

    /// The final-payment plan of a `deposit_paid` order at `now` (API.md:
    /// policies and the replacement rule). `lock` and a still-valid coupon
    /// apply the snapshot; `strict` gives nothing for an expired coupon;
    /// `swap_or_compensate` swaps for the user's available coupon of the
    /// same kind, valid now, applicable, discount (capped like the deposit's)
    /// at least the snapshot and above zero, smallest discount then
    /// earliest end then id; else compensates the snapshot in cash.
    pub fn plan(&self, oi: usize) -> Result<Plan, Refusal> {
        let o = &self.orders[oi];
        let base = final_amount(o.total_cents, o.deposit_cents, 0, 0);
        let Some(ci) = o.coupon else {
            return Ok(Plan {
                outcome: "none",
                discount_cents: 0,
                compensation_cents: 0,
                replacement: None,
                amount_due_cents: base,
            });
        };
        let c = &self.coupons[ci];
        if c.stored != CouponStatus::Locked || c.order_no.as_deref() != Some(&o.order_no) {
            return Err("coupon_lock_mismatch");
        }
        let policy = self.campaigns[o.campaign.unwrap_or_default()].policy;
        let applied = |d: i64| Plan {
            outcome: "applied",
            discount_cents: d,
            compensation_cents: 0,
            replacement: None,
            amount_due_cents: final_amount(o.total_cents, o.deposit_cents, d, 0),
        };
        if policy == Policy::Lock || self.now_s < c.ends_s {
            return Ok(applied(o.snapshot_cents));
        }
        if policy == Policy::Strict {
            return Ok(Plan {
                outcome: "no_discount_expired",
                discount_cents: 0,
                compensation_cents: 0,
                replacement: None,
                amount_due_cents: base,
            });
        }
        let cap = o.total_cents - o.deposit_cents;
        let now = self.now_s;
        let best = self
            .coupons
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.user == o.user
                    && r.stored == CouponStatus::Available
                    && r.rule.same_kind(c.rule)
                    && r.starts_s <= now
                    && now < r.ends_s
                    && o.total_cents >= r.min_order_cents
                    && (r.categories.is_empty() || r.categories.contains(&o.category))
            })
            .map(|(i, r)| (i, r, r.rule.discount_cents(o.total_cents).min(cap)))
            .filter(|(_, _, d)| *d >= o.snapshot_cents && *d > 0)
            .min_by(|(_, a, da), (_, b, db)| {
                da.cmp(db)
                    .then(a.ends_s.cmp(&b.ends_s))
                    .then(a.id.cmp(&b.id))
            });
        Ok(match best {
            Some((i, _, d)) => Plan {
                outcome: "swapped",
                discount_cents: d,
                compensation_cents: 0,
                replacement: Some(i),
                amount_due_cents: final_amount(o.total_cents, o.deposit_cents, d, 0),
            },
            None => Plan {
                outcome: "compensated",
                discount_cents: 0,
                compensation_cents: o.snapshot_cents,
                replacement: None,
                amount_due_cents: final_amount(o.total_cents, o.deposit_cents, 0, o.snapshot_cents),
            },
        })
    }

    /// `GET /orders/{no}/final-payment-quote`: the plan, for a presale
    /// order that is `deposit_paid`; read-only, at any time.
    pub fn quote(&self, oi: usize) -> Result<Plan, Refusal> {
        self.require(oi, Kind::Presale, &[OrderStatus::DepositPaid])?;
        self.plan(oi)
    }

    /// `POST /orders/{no}/final-payment`: only inside `[starts, ends)`.
    pub fn pay_final(&mut self, oi: usize) -> Result<(), Refusal> {
        self.require(oi, Kind::Presale, &[OrderStatus::DepositPaid])?;
        let o = &self.orders[oi];
        let campaign = &self.campaigns[o.campaign.unwrap_or_default()];
        if !(campaign.starts_s <= self.now_s && self.now_s < campaign.ends_s) {
            return Err("outside_payment_window");
        }
        let plan = self.plan(oi)?;
        let no = o.order_no.clone();
        let own = o.coupon;
        match plan.outcome {
            "applied" => {
                if let Some(ci) = own {
                    self.coupons[ci].stored = CouponStatus::Used;
                }
            }
            "none" => {}
            _ => {
                if let Some(ci) = own {
                    let c = &mut self.coupons[ci];
                    c.stored = CouponStatus::Expired;
                    c.order_no = None;
                }
                if let Some(r) = plan.replacement {
                    let c = &mut self.coupons[r];
                    c.stored = CouponStatus::Used;
                    c.order_no = Some(no);
                }
            }
        }
        let o = &mut self.orders[oi];
        o.status = OrderStatus::FinalPaid;
        o.final_payment_cents = Some(plan.amount_due_cents);
        o.discount_cents = plan.discount_cents;
        o.compensation_cents = plan.compensation_cents;
        o.lock = match plan.outcome {
            "applied" | "swapped" => Lock::Used,
            // No coupon: the order keeps `none`, or `released` after a
            // forced release (the service wrote `none` until this test
            // caught it; a normal order's payment always kept it).
            "none" => o.lock,
            _ => Lock::Released,
        };
        if let Some(r) = plan.replacement {
            o.replaced = own;
            o.coupon = Some(r);
        }
        Ok(())
    }

    /// Cancel (`closed`, from any status awaiting a payment) or refund
    /// (`refunded`, from `paid`, `deposit_paid` or `final_paid`); a coupon
    /// still bound to the order is released or returned in the same
    /// transaction: `available` while valid, else `expired`.
    pub fn end(&mut self, oi: usize, refund: bool) -> Result<(), Refusal> {
        let allowed: &[OrderStatus] = if refund {
            &[
                OrderStatus::Paid,
                OrderStatus::DepositPaid,
                OrderStatus::FinalPaid,
            ]
        } else {
            &[
                OrderStatus::PendingPayment,
                OrderStatus::PendingDeposit,
                OrderStatus::DepositPaid,
            ]
        };
        let o = &self.orders[oi];
        if !allowed.contains(&o.status) {
            return Err("invalid_order_status");
        }
        // A paid order's refund refunds every unit left, by line.
        if refund && matches!(o.status, OrderStatus::Paid | OrderStatus::FinalPaid) {
            let shares = self.shares(oi);
            let o = &mut self.orders[oi];
            for (l, share) in o.lines.iter_mut().zip(shares) {
                let payable = l.amount() - share;
                o.refunded_cents += payable - l.refunded_cents;
                l.refunded_cents = payable;
                l.refunded_quantity = l.quantity;
            }
        }
        let o = &self.orders[oi];
        let bound = o
            .coupon
            .filter(|&ci| self.coupons[ci].order_no.as_deref() == Some(&o.order_no));
        let now = self.now_s;
        if let Some(ci) = bound {
            let c = &mut self.coupons[ci];
            if matches!(c.stored, CouponStatus::Locked | CouponStatus::Used) {
                c.stored = release_target(c.ends_s, now);
                c.order_no = None;
            }
        }
        let o = &mut self.orders[oi];
        if bound.is_some() {
            o.lock = Lock::Released;
        }
        o.status = if refund {
            OrderStatus::Refunded
        } else {
            OrderStatus::Closed
        };
        o.checkout_lock_expires_s = None;
        Ok(())
    }

    /// Each line's share of the order's discount (API.md, Allocation): the
    /// discount the order took for its coupon (with a deducted
    /// compensation, which keeps the deposit's split) split over the lines
    /// the coupon covers.
    pub fn shares(&self, oi: usize) -> Vec<i64> {
        let o = &self.orders[oi];
        let taken = o.discount_cents + o.compensation_cents;
        let Some(ci) = o.coupon.filter(|_| taken > 0) else {
            return vec![0; o.lines.len()];
        };
        let amounts: Vec<i64> = o
            .lines
            .iter()
            .map(|l| if self.covers(ci, l) { l.amount() } else { 0 })
            .collect();
        split(taken.min(amounts.iter().sum()), &amounts)
    }

    fn covers(&self, ci: usize, l: &Line) -> bool {
        let c = &self.coupons[ci];
        c.categories.is_empty() || c.categories.contains(&l.category)
    }

    /// `POST /orders/{no}/refunds` of `quantity` units of line `line`:
    /// only `paid` and `final_paid` orders; no more units than are left.
    /// The money is the floor formula over the line's payable amount; a
    /// coupon spent on the order (`used`) is kept until every unit of the
    /// lines it discounted (those with a share, else every line it
    /// covers) is refunded, then returned by the release rule. The order is
    /// `refunded` with its last unit. The model's coupons all refund
    /// `proportional`ly (the property tests cover `clawback`).
    pub fn refund_lines(
        &mut self,
        oi: usize,
        line: usize,
        quantity: i64,
    ) -> Result<RefundOutcome, Refusal> {
        let o = &self.orders[oi];
        if !matches!(o.status, OrderStatus::Paid | OrderStatus::FinalPaid) {
            return Err("invalid_order_status");
        }
        let l = &o.lines[line];
        if quantity > l.quantity - l.refunded_quantity {
            return Err("refund_exceeds_order");
        }
        let shares = self.shares(oi);
        let payable = l.amount() - shares[line];
        let money = units_share(payable, l.quantity, l.refunded_quantity, quantity);
        let spent = o.coupon.filter(|_| o.lock == Lock::Used);
        let o = &mut self.orders[oi];
        o.lines[line].refunded_quantity += quantity;
        o.lines[line].refunded_cents += money;
        o.refunded_cents += money;
        let all_refunded = o.lines.iter().all(|l| l.refunded_quantity == l.quantity);
        let mut outcome = None;
        if let Some(ci) = spent {
            let o = &self.orders[oi];
            let covered: Vec<usize> = (0..o.lines.len())
                .filter(|&i| self.covers(ci, &o.lines[i]))
                .collect();
            let discounted: Vec<usize> =
                covered.iter().copied().filter(|&i| shares[i] > 0).collect();
            let holding = if discounted.is_empty() {
                covered
            } else {
                discounted
            };
            let returned = holding
                .iter()
                .all(|&i| o.lines[i].refunded_quantity == o.lines[i].quantity);
            outcome = Some(if returned { "returned" } else { "kept" });
            if returned {
                let no = o.order_no.clone();
                let now = self.now_s;
                let c = &mut self.coupons[ci];
                if c.order_no.as_deref() == Some(no.as_str())
                    && matches!(c.stored, CouponStatus::Locked | CouponStatus::Used)
                {
                    c.stored = release_target(c.ends_s, now);
                    c.order_no = None;
                }
                self.orders[oi].lock = Lock::Released;
            }
        }
        if all_refunded {
            self.orders[oi].status = OrderStatus::Refunded;
        }
        Ok(RefundOutcome {
            refund_cents: money,
            coupon: outcome,
        })
    }

    /// `POST /coupons/{id}/release`: only a `locked` coupon; 409
    /// `order_active` while its order is live and still holds it, unless
    /// `force`. Service rules where API.md is silent: a normal order whose
    /// checkout lock lapsed no longer holds it; a forced release detaches
    /// the coupon from the live order (no coupon, no discount, no checkout
    /// lock); either way the order records the lock as `released`.
    pub fn release(&mut self, ci: usize, force: bool) -> Result<(), Refusal> {
        let c = &self.coupons[ci];
        if c.stored != CouponStatus::Locked {
            return Err("coupon_not_available");
        }
        let holder = c.order_no.as_deref().and_then(|no| {
            self.order_index(no)
                .filter(|&oi| self.orders[oi].coupon == Some(ci))
        });
        let live = holder.filter(|&oi| self.orders[oi].status.is_live());
        let active = live.is_some_and(|oi| !self.lapsed(&self.orders[oi]));
        if active && !force {
            return Err("order_active");
        }
        let recorded = holder.filter(|&oi| {
            let o = &self.orders[oi];
            o.status.is_live() || o.lock == Lock::Locked
        });
        let now = self.now_s;
        if let Some(oi) = recorded {
            let o = &mut self.orders[oi];
            o.lock = Lock::Released;
            if active {
                o.coupon = None;
                o.discount_cents = 0;
                o.checkout_lock_expires_s = None;
            }
        }
        let c = &mut self.coupons[ci];
        c.stored = release_target(c.ends_s, now);
        c.order_no = None;
        Ok(())
    }

    /// `POST /users/{u}/compensation-coupons` with a typed amount: a fixed
    /// coupon for every category and any total, valid `valid_s` from now,
    /// outside any stock. An order named must be the user's
    /// (`order_not_owned`). The API token is not capped (support staff in
    /// the console are; not modelled).
    pub fn compensate(
        &mut self,
        user: usize,
        value_cents: i64,
        valid_s: i64,
        order: Option<usize>,
    ) -> Result<usize, Refusal> {
        if order.is_some_and(|oi| self.orders[oi].user != user) {
            return Err("order_not_owned");
        }
        self.coupons.push(Coupon {
            id: String::new(),
            user,
            template: None,
            rule: Rule::Fixed { value_cents },
            min_order_cents: 0,
            categories: &[],
            stored: CouponStatus::Available,
            starts_s: self.now_s,
            ends_s: self.now_s + valid_s,
            order_no: None,
        });
        Ok(self.coupons.len() - 1)
    }

    /// `POST /coupons/{id}/invalidate`: `available` (as read) only.
    pub fn invalidate(&mut self, ci: usize) -> Result<(), Refusal> {
        if self.coupon_status(ci) != CouponStatus::Available {
            return Err("coupon_not_available");
        }
        self.coupons[ci].stored = CouponStatus::Invalidated;
        Ok(())
    }

    /// `PATCH /presale-campaigns/{id}` with a policy: only before the
    /// window opens (at `final_payment_starts_at` exactly it has), else
    /// `campaign_window_open`, even for the policy already set (service
    /// order of checks).
    pub fn change_policy(&mut self, k: usize, policy: Policy) -> Result<usize, Refusal> {
        if self.now_s >= self.campaigns[k].starts_s {
            return Err("campaign_window_open");
        }
        self.campaigns[k].policy = policy;
        Ok(k)
    }

    /// `amount_due_cents`: what the next payment asks for; for a
    /// `deposit_paid` order, as the final payment would compute it now.
    pub fn amount_due(&self, oi: usize) -> i64 {
        let o = &self.orders[oi];
        match o.status {
            OrderStatus::PendingPayment => (o.total_cents - o.discount_cents).max(0),
            OrderStatus::PendingDeposit => o.deposit_cents,
            OrderStatus::DepositPaid => match self.plan(oi) {
                Ok(p) => p.amount_due_cents,
                Err(_) => final_amount(
                    o.total_cents,
                    o.deposit_cents,
                    o.discount_cents,
                    o.compensation_cents,
                ),
            },
            _ => 0,
        }
    }
}
