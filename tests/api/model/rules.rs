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
    /// `None`: a platform coupon; a shop's id: only on that shop's lines.
    pub shop: Option<&'static str>,
    /// `false`: its coupon must be an order's only coupon.
    pub stackable: bool,
    /// The discount its coupons may give together (`None`: no budget).
    pub budget_cents: Option<i64>,
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
    pub shop: Option<&'static str>,
    pub stackable: bool,
    /// What it holds of its template's budget: its discount on the order
    /// it was locked (or used) for, from the lock until it leaves the
    /// order (API.md, Budgets); 0 otherwise.
    pub reserved_cents: i64,
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
    pub shop: Option<&'static str>,
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

/// A line as `POST /orders` is asked for it: `(line_id, shop_id,
/// category, quantity, unit_price_cents)`.
pub type LineSpec = (&'static str, Option<&'static str>, &'static str, i64, i64);

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

/// What a refund by line answers: the money back and, for each coupon
/// spent on the order, its outcome (API.md gives the list no order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundOutcome {
    pub refund_cents: i64,
    /// `(coupon, outcome)`, in the order's order of coupons.
    pub coupons: Vec<(usize, &'static str)>,
}

/// One coupon of an order (API.md, Several coupons on one order): the
/// first is the one the order row names (the platform coupon, else the
/// first shop coupon), then the others as they were asked for.
#[derive(Debug, Clone)]
pub struct Held {
    /// Index into [`Model::coupons`]; after a swap, the replacement.
    pub coupon: usize,
    pub discount_cents: i64,
    /// Its discount as snapshotted at the lock (0 before).
    pub snapshot_cents: i64,
    pub compensation_cents: i64,
    /// The lock state of a further coupon; the first coupon's is the
    /// order's [`Order::lock`].
    pub lock: Lock,
    /// The expired coupon a swap replaced.
    pub replaced: Option<usize>,
    /// Its share of each line it covers (`None`: a line it does not
    /// cover, or a split that was dropped).
    pub split: Vec<Option<i64>>,
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
    /// Its coupons, the order row's first.
    pub coupons: Vec<Held>,
    pub status: OrderStatus,
    /// `coupon_lock_status`: the first coupon's lock, or `released` after
    /// a forced release took the coupon off the order.
    pub lock: Lock,
    /// The snapshot of a coupon a forced release took off the order: the
    /// order keeps `discount_snapshot_cents` (service behaviour).
    pub detached_snapshot_cents: i64,
    pub checkout_lock_expires_s: Option<i64>,
    pub final_payment_cents: Option<i64>,
    /// The single-category form is line "1" of one unit at the total.
    pub lines: Vec<Line>,
    /// What refunds gave back.
    pub refunded_cents: i64,
}

impl Order {
    /// The discounts of its coupons, summed (`coupon_discount_cents`).
    pub fn discount_cents(&self) -> i64 {
        self.coupons.iter().map(|h| h.discount_cents).sum()
    }

    /// `discount_snapshot_cents`.
    pub fn snapshot_cents(&self) -> i64 {
        self.detached_snapshot_cents + self.coupons.iter().map(|h| h.snapshot_cents).sum::<i64>()
    }

    /// `compensation_cents`.
    pub fn compensation_cents(&self) -> i64 {
        self.coupons.iter().map(|h| h.compensation_cents).sum()
    }

    /// The lock state of its `k`th coupon.
    pub fn lock_of(&self, k: usize) -> Lock {
        if k == 0 {
            self.lock
        } else {
            self.coupons[k].lock
        }
    }

    fn set_lock(&mut self, k: usize, lock: Lock) {
        if k == 0 {
            self.lock = lock;
        }
        self.coupons[k].lock = lock;
    }
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
    /// Sent as `coupon_id` when there is one, as `coupon_ids` when more.
    pub coupons: Vec<usize>,
    /// Sent as `lines` in place of `category` and `total_cents` (which
    /// are then the first line's category and the lines' sum).
    pub lines: Option<&'static [LineSpec]>,
}

impl NewOrder {
    /// The order's lines: the ones sent, or line "1" of the single form.
    pub fn lines(&self) -> Vec<Line> {
        let line = |(line_id, shop, category, quantity, unit_price_cents): LineSpec| Line {
            line_id,
            shop,
            category,
            quantity,
            unit_price_cents,
            refunded_quantity: 0,
            refunded_cents: 0,
        };
        match self.lines {
            Some(ls) => ls.iter().copied().map(line).collect(),
            None => vec![line(("1", None, self.category, 1, self.total_cents))],
        }
    }
}

/// What the final payment does with one coupon (API.md,
/// final-payment-quote `coupons`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub outcome: &'static str,
    pub discount_cents: i64,
    pub compensation_cents: i64,
    pub replacement: Option<usize>,
    /// The amounts of the lines it was judged on: list prices for a shop
    /// coupon (and a single coupon), what the shop coupons' deposit
    /// shares left for the platform coupon among several.
    pub judged_on: Vec<i64>,
}

/// The final-payment decision (API.md, final-payment-quote): the sums,
/// the first coupon's outcome and replacement, and each coupon's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub outcome: &'static str,
    pub discount_cents: i64,
    pub compensation_cents: i64,
    pub replacement: Option<usize>,
    pub amount_due_cents: i64,
    pub parts: Vec<Part>,
}

/// One coupon applied to an order's lines: its discount and split.
#[derive(Debug, Clone)]
struct Applied {
    discount_cents: i64,
    split: Vec<Option<i64>>,
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

/// `discount` split over the lines `covered` marks, in proportion to
/// `on` (API.md, Allocation); `None` for the others.
fn split_covered(discount: i64, covered: &[bool], on: &[i64]) -> Vec<Option<i64>> {
    let amounts: Vec<i64> = covered
        .iter()
        .zip(on)
        .filter(|(c, _)| **c)
        .map(|(_, a)| *a)
        .collect();
    let mut parts = split(discount, &amounts).into_iter();
    covered
        .iter()
        .map(|c| c.then(|| parts.next().unwrap_or(0)))
        .collect()
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

    /// `budget_used_cents` of template `t`: what its coupons hold.
    pub fn budget_used(&self, t: usize) -> i64 {
        self.coupons
            .iter()
            .filter(|c| c.template == Some(t))
            .map(|c| c.reserved_cents)
            .sum()
    }

    /// What template `t`'s budget has left; `None` without a budget.
    fn budget_left(&self, t: usize) -> Option<i64> {
        self.templates[t]
            .budget_cents
            .map(|b| b - self.budget_used(t))
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
            shop: t.shop,
            stackable: t.stackable,
            reserved_cents: 0,
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

    /// Whether coupon `ci` covers line `l`: its categories (empty: all)
    /// and, for a shop coupon, the line's shop (API.md, Lines).
    fn covers(&self, ci: usize, l: &Line) -> bool {
        let c = &self.coupons[ci];
        (c.categories.is_empty() || c.categories.contains(&l.category))
            && c.shop.is_none_or(|s| l.shop == Some(s))
    }

    /// Whether coupon `ci` could go on `user`'s order of `lines` alone:
    /// owner, status, start, an eligible line, the threshold at list
    /// price, in that order (the service's order; API.md lists the codes).
    fn check_alone(&self, ci: usize, user: usize, lines: &[Line]) -> Result<(), Refusal> {
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
        let eligible: Vec<&Line> = lines.iter().filter(|l| self.covers(ci, l)).collect();
        if eligible.is_empty() {
            return Err("coupon_not_applicable");
        }
        let eligible_amount: i64 = eligible.iter().map(|l| l.amount()).sum();
        if eligible_amount < c.min_order_cents {
            return Err("threshold_not_met");
        }
        Ok(())
    }

    /// The coupons asked for, in the order the order keeps them: the
    /// first platform coupon first, the others as asked.
    fn in_order_order(&self, asked: &[usize]) -> Vec<usize> {
        let mut ids = asked.to_vec();
        if let Some(p) = ids.iter().position(|&ci| self.coupons[ci].shop.is_none()) {
            let platform = ids.remove(p);
            ids.insert(0, platform);
        }
        ids
    }

    /// `ids` (in the order's order) on `user`'s order of `lines` (API.md,
    /// Several coupons on one order): each usable alone; then combinable
    /// (a coupon that is not stackable alone, at most one platform coupon
    /// and one per shop); then every shop coupon on its lines at list
    /// price and the platform coupon on what they leave, its threshold
    /// judged there; together at most `cap` (the total, or what a
    /// presale deposit leaves), taken back from the last applied first
    /// (service rule: nobody is owed money at the final payment).
    fn apply(
        &self,
        ids: &[usize],
        user: usize,
        lines: &[Line],
        cap: i64,
    ) -> Result<Vec<Applied>, Refusal> {
        for &ci in ids {
            self.check_alone(ci, user, lines)?;
        }
        if ids.len() > 1 {
            let platform = ids
                .iter()
                .filter(|&&ci| self.coupons[ci].shop.is_none())
                .count();
            let mut shops: Vec<&str> = ids.iter().filter_map(|&ci| self.coupons[ci].shop).collect();
            let n = shops.len();
            shops.sort_unstable();
            shops.dedup();
            let any_alone = ids.iter().any(|&ci| !self.coupons[ci].stackable);
            if any_alone || platform > 1 || shops.len() < n {
                return Err("coupons_not_combinable");
            }
        }
        let amounts: Vec<i64> = lines.iter().map(Line::amount).collect();
        let mut order: Vec<usize> = (0..ids.len())
            .filter(|&k| self.coupons[ids[k]].shop.is_some())
            .collect();
        order.extend((0..ids.len()).filter(|&k| self.coupons[ids[k]].shop.is_none()));
        let mut remaining = amounts.clone();
        let mut applied: Vec<Applied> = vec![
            Applied {
                discount_cents: 0,
                split: vec![None; lines.len()],
            };
            ids.len()
        ];
        let mut judged: Vec<Vec<i64>> = vec![Vec::new(); ids.len()];
        for &k in &order {
            let ci = ids[k];
            let on = if self.coupons[ci].shop.is_some() {
                amounts.clone()
            } else {
                remaining.clone()
            };
            let covered: Vec<bool> = lines.iter().map(|l| self.covers(ci, l)).collect();
            let eligible: i64 = covered
                .iter()
                .zip(&on)
                .filter(|(c, _)| **c)
                .map(|(_, a)| *a)
                .sum();
            if eligible < self.coupons[ci].min_order_cents {
                return Err("threshold_not_met");
            }
            let d = self.coupons[ci].rule.discount_cents(eligible);
            let split = split_covered(d, &covered, &on);
            for (left, share) in remaining.iter_mut().zip(&split) {
                *left -= share.unwrap_or(0);
            }
            applied[k] = Applied {
                discount_cents: d,
                split,
            };
            judged[k] = on;
        }
        let mut over = applied.iter().map(|a| a.discount_cents).sum::<i64>() - cap;
        for &k in order.iter().rev() {
            if over <= 0 {
                break;
            }
            let a = &mut applied[k];
            let back = over.min(a.discount_cents);
            let kept = a.discount_cents - back;
            let covered: Vec<bool> = a.split.iter().map(Option::is_some).collect();
            a.split = split_covered(kept, &covered, &judged[k]);
            a.discount_cents = kept;
            over -= back;
        }
        Ok(applied)
    }

    /// Whether the budgets of `ids`' templates can take `applied`, each
    /// coupon's discount reserved as it is locked (API.md, Budgets).
    fn budgets_take(&self, ids: &[usize], applied: &[Applied]) -> Result<(), Refusal> {
        let mut taken: Vec<(usize, i64)> = Vec::new();
        for (&ci, a) in ids.iter().zip(applied) {
            let Some(t) = self.coupons[ci].template else {
                continue;
            };
            let before: i64 = taken.iter().filter(|(x, _)| *x == t).map(|(_, d)| d).sum();
            if self
                .budget_left(t)
                .is_some_and(|left| left - before < a.discount_cents)
            {
                return Err("budget_exhausted");
            }
            taken.push((t, a.discount_cents));
        }
        Ok(())
    }

    /// Binds coupon `ci` to order `no` as `status`, reserving `cents`.
    fn bind(&mut self, ci: usize, no: &str, status: CouponStatus, cents: i64) {
        let c = &mut self.coupons[ci];
        c.stored = status;
        c.order_no = Some(no.to_string());
        c.reserved_cents = if c.template.is_some() { cents } else { 0 };
    }

    /// Lets coupon `ci` go from the order it was locked to or used by: by
    /// the release rule, or `to` (an expiry at the final payment); its
    /// reservation is given back.
    fn unbind(&mut self, ci: usize, to: Option<CouponStatus>) {
        let now = self.now_s;
        let c = &mut self.coupons[ci];
        c.stored = to.unwrap_or_else(|| release_target(c.ends_s, now));
        c.order_no = None;
        c.reserved_cents = 0;
    }

    /// Whether coupon `ci` is still locked to or used by order `o`.
    fn bound_to(&self, ci: usize, o: &Order) -> bool {
        let c = &self.coupons[ci];
        c.order_no.as_deref() == Some(o.order_no.as_str())
            && matches!(c.stored, CouponStatus::Locked | CouponStatus::Used)
    }

    /// Lets the coupons of order `oi` at positions `ks` go: each one still
    /// bound to the order is released or returned by the release rule, and
    /// each is recorded `released` on the order.
    fn let_go(&mut self, oi: usize, ks: &[usize]) {
        for &k in ks {
            let ci = self.orders[oi].coupons[k].coupon;
            if self.bound_to(ci, &self.orders[oi]) {
                self.unbind(ci, None);
            }
            self.orders[oi].set_lock(k, Lock::Released);
        }
    }

    /// `POST /orders`. A presale order on a campaign whose window has
    /// ended is refused `outside_payment_window` (service rule; API.md
    /// names the code only for the final payment). A normal order locks its
    /// coupons for the checkout, reserving their discounts; a presale one
    /// only validates them.
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
        let ids = self.in_order_order(&n.coupons);
        let cap = match n.kind {
            Kind::Normal => n.total_cents,
            Kind::Presale => n.total_cents - n.deposit_cents,
        };
        let applied = if ids.is_empty() {
            Vec::new()
        } else {
            self.apply(&ids, n.user, &lines, cap)?
        };
        let locks_now = n.kind == Kind::Normal && !ids.is_empty();
        if locks_now {
            self.budgets_take(&ids, &applied)?;
            for (&ci, a) in ids.iter().zip(&applied) {
                self.bind(ci, &n.order_no, CouponStatus::Locked, a.discount_cents);
            }
        }
        let lock = if locks_now { Lock::Locked } else { Lock::None };
        self.orders.push(Order {
            order_no: n.order_no.clone(),
            user: n.user,
            kind: n.kind,
            category: n.category,
            total_cents: n.total_cents,
            deposit_cents: n.deposit_cents,
            campaign: n.campaign,
            // A presale order shows the discounts it would get now; the
            // snapshot is taken at the deposit (service behaviour).
            coupons: ids
                .iter()
                .zip(applied)
                .map(|(&ci, a)| Held {
                    coupon: ci,
                    discount_cents: a.discount_cents,
                    snapshot_cents: if locks_now { a.discount_cents } else { 0 },
                    compensation_cents: 0,
                    lock,
                    replaced: None,
                    split: a.split,
                })
                .collect(),
            status: match n.kind {
                Kind::Normal => OrderStatus::PendingPayment,
                Kind::Presale => OrderStatus::PendingDeposit,
            },
            lock,
            detached_snapshot_cents: 0,
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

    /// Whether coupon `ci` is locked to order `o`.
    fn locked_to(&self, ci: usize, o: &Order) -> bool {
        let c = &self.coupons[ci];
        c.stored == CouponStatus::Locked && c.order_no.as_deref() == Some(&o.order_no)
    }

    /// `POST /orders/{no}/pay`: every coupon `used`, order `paid`. After
    /// the checkout lock lapsed the payment is refused
    /// `checkout_lock_expired` (service rule: the lock "lapses"; API.md has
    /// no code for it). A coupon that ended while its checkout lock held
    /// is still used.
    pub fn pay(&mut self, oi: usize) -> Result<(), Refusal> {
        self.require(oi, Kind::Normal, &[OrderStatus::PendingPayment])?;
        let o = &self.orders[oi];
        if !o.coupons.is_empty() {
            if self.lapsed(o) {
                return Err("checkout_lock_expired");
            }
            if o.coupons.iter().any(|h| !self.locked_to(h.coupon, o)) {
                return Err("coupon_lock_mismatch");
            }
        }
        let ids: Vec<usize> = o.coupons.iter().map(|h| h.coupon).collect();
        for ci in ids {
            self.coupons[ci].stored = CouponStatus::Used;
        }
        let o = &mut self.orders[oi];
        for k in 0..o.coupons.len() {
            o.set_lock(k, Lock::Used);
        }
        o.status = OrderStatus::Paid;
        o.checkout_lock_expires_s = None;
        Ok(())
    }

    /// `POST /orders/{no}/deposit-payment`: the coupons validated and
    /// applied again and locked, their discounts reserved, the discounts
    /// and splits snapshotted. Refused once the campaign's window has
    /// ended (service rule, as at creation).
    pub fn pay_deposit(&mut self, oi: usize) -> Result<(), Refusal> {
        self.require(oi, Kind::Presale, &[OrderStatus::PendingDeposit])?;
        let o = &self.orders[oi];
        let campaign = &self.campaigns[o.campaign.unwrap_or_default()];
        if self.now_s >= campaign.ends_s {
            return Err("outside_payment_window");
        }
        let ids: Vec<usize> = o.coupons.iter().map(|h| h.coupon).collect();
        let applied = if ids.is_empty() {
            Vec::new()
        } else {
            self.apply(&ids, o.user, &o.lines, o.total_cents - o.deposit_cents)?
        };
        self.budgets_take(&ids, &applied)?;
        let no = o.order_no.clone();
        for (&ci, a) in ids.iter().zip(&applied) {
            self.bind(ci, &no, CouponStatus::Locked, a.discount_cents);
        }
        let o = &mut self.orders[oi];
        for (h, a) in o.coupons.iter_mut().zip(applied) {
            h.discount_cents = a.discount_cents;
            h.snapshot_cents = a.discount_cents;
            h.split = a.split;
            h.lock = Lock::Locked;
        }
        if !o.coupons.is_empty() {
            o.lock = Lock::Locked;
        }
        o.status = OrderStatus::DepositPaid;
        Ok(())
    }

    /// The final-payment plan of a `deposit_paid` order at `now` (API.md:
    /// policies and the replacement rule), each coupon judged on its own
    /// snapshot. Every coupon must still be locked to the order. `lock`
    /// and a still-valid coupon apply the snapshot; `strict` gives nothing
    /// for an expired coupon; `swap_or_compensate` swaps it for the user's
    /// available coupon of the same kind, valid now, applicable on the
    /// lines it was judged on, discount (capped so the order's discounts
    /// stay within what the deposit leaves) at least the snapshot and
    /// above zero, smallest discount then earliest end then id; among
    /// several coupons the stand-in must also be stackable, of the same
    /// shop (platform for platform), and not already one of the order's
    /// coupons or another's stand-in. A stand-in whose template's budget
    /// cannot take its discount is passed over (service rule: its lock
    /// would be refused). Else the snapshot is compensated in cash.
    pub fn plan(&self, oi: usize) -> Result<Plan, Refusal> {
        let o = &self.orders[oi];
        if o.coupons.iter().any(|h| !self.locked_to(h.coupon, o)) {
            return Err("coupon_lock_mismatch");
        }
        let policy = self.campaigns[o.campaign.unwrap_or_default()].policy;
        let stacked = o.coupons.len() > 1;
        let list: Vec<i64> = o.lines.iter().map(Line::amount).collect();
        let after_shops: Vec<i64> = (0..o.lines.len())
            .map(|i| {
                list[i]
                    - o.coupons
                        .iter()
                        .filter(|h| self.coupons[h.coupon].shop.is_some())
                        .filter_map(|h| h.split[i])
                        .sum::<i64>()
            })
            .collect();
        let snapshots = o.snapshot_cents();
        let now = self.now_s;
        let mut taken: Vec<usize> = o.coupons.iter().map(|h| h.coupon).collect();
        let mut parts = Vec::with_capacity(o.coupons.len());
        for h in &o.coupons {
            let c = &self.coupons[h.coupon];
            let judged_on = if stacked && c.shop.is_none() {
                after_shops.clone()
            } else {
                list.clone()
            };
            let part = |outcome, discount_cents, compensation_cents, replacement| Part {
                outcome,
                discount_cents,
                compensation_cents,
                replacement,
                judged_on: judged_on.clone(),
            };
            if policy == Policy::Lock || now < c.ends_s {
                parts.push(part("applied", h.snapshot_cents, 0, None));
                continue;
            }
            if policy == Policy::Strict {
                parts.push(part("no_discount_expired", 0, 0, None));
                continue;
            }
            let cap = o.total_cents - o.deposit_cents - (snapshots - h.snapshot_cents);
            let judged: Vec<Line> = o
                .lines
                .iter()
                .zip(&judged_on)
                .map(|(l, a)| Line {
                    quantity: 1,
                    unit_price_cents: *a,
                    ..l.clone()
                })
                .collect();
            let best = (0..self.coupons.len())
                .filter(|&r| !taken.contains(&r))
                .filter(|&r| {
                    let k = &self.coupons[r];
                    k.user == o.user
                        && k.stored == CouponStatus::Available
                        && k.rule.same_kind(c.rule)
                        && k.starts_s <= now
                        && now < k.ends_s
                        && (!stacked || (k.stackable && k.shop == c.shop))
                })
                .filter_map(|r| {
                    let covered: Vec<&Line> = judged.iter().filter(|l| self.covers(r, l)).collect();
                    let eligible: i64 = covered.iter().map(|l| l.amount()).sum();
                    let k = &self.coupons[r];
                    (!covered.is_empty() && eligible >= k.min_order_cents)
                        .then(|| (r, k.rule.discount_cents(eligible).min(cap)))
                })
                .filter(|&(_, d)| d >= h.snapshot_cents && d > 0)
                .filter(|&(r, d)| {
                    self.coupons[r]
                        .template
                        .and_then(|t| self.budget_left(t))
                        .is_none_or(|left| left >= d)
                })
                .min_by(|&(a, da), &(b, db)| {
                    let (ka, kb) = (&self.coupons[a], &self.coupons[b]);
                    da.cmp(&db)
                        .then(ka.ends_s.cmp(&kb.ends_s))
                        .then(ka.id.cmp(&kb.id))
                });
            match best {
                Some((r, d)) => {
                    taken.push(r);
                    parts.push(part("swapped", d, 0, Some(r)));
                }
                None => parts.push(part("compensated", 0, h.snapshot_cents, None)),
            }
        }
        let discount: i64 = parts.iter().map(|p| p.discount_cents).sum();
        let compensation: i64 = parts.iter().map(|p| p.compensation_cents).sum();
        let first = parts.first();
        Ok(Plan {
            outcome: first.map_or("none", |p| p.outcome),
            discount_cents: discount,
            compensation_cents: compensation,
            replacement: first.and_then(|p| p.replacement),
            amount_due_cents: final_amount(o.total_cents, o.deposit_cents, discount, compensation),
            parts,
        })
    }

    /// `GET /orders/{no}/final-payment-quote`: the plan, for a presale
    /// order that is `deposit_paid`; read-only, at any time.
    pub fn quote(&self, oi: usize) -> Result<Plan, Refusal> {
        self.require(oi, Kind::Presale, &[OrderStatus::DepositPaid])?;
        self.plan(oi)
    }

    /// `POST /orders/{no}/final-payment`: only inside `[starts, ends)`;
    /// each coupon settles by its part: applied, used; expired, off the
    /// order with its reservation given back, its split dropped (no
    /// discount), kept (a compensation takes its place on the lines) or
    /// the stand-in's over the lines as the expired coupon saw them.
    pub fn pay_final(&mut self, oi: usize) -> Result<(), Refusal> {
        self.require(oi, Kind::Presale, &[OrderStatus::DepositPaid])?;
        let o = &self.orders[oi];
        let campaign = &self.campaigns[o.campaign.unwrap_or_default()];
        if !(campaign.starts_s <= self.now_s && self.now_s < campaign.ends_s) {
            return Err("outside_payment_window");
        }
        let plan = self.plan(oi)?;
        let no = o.order_no.clone();
        let own: Vec<usize> = o.coupons.iter().map(|h| h.coupon).collect();
        let lines = o.lines.len();
        let mut splits = Vec::with_capacity(own.len());
        for (&ci, part) in own.iter().zip(&plan.parts) {
            let split = match (part.outcome, part.replacement) {
                ("applied", _) => {
                    self.coupons[ci].stored = CouponStatus::Used;
                    None
                }
                (_, Some(r)) => {
                    self.unbind(ci, Some(CouponStatus::Expired));
                    self.bind(r, &no, CouponStatus::Used, part.discount_cents);
                    let covered: Vec<bool> = self.orders[oi]
                        .lines
                        .iter()
                        .map(|l| self.covers(r, l))
                        .collect();
                    Some(split_covered(
                        part.discount_cents,
                        &covered,
                        &part.judged_on,
                    ))
                }
                (outcome, None) => {
                    self.unbind(ci, Some(CouponStatus::Expired));
                    (outcome == "no_discount_expired").then(|| vec![None; lines])
                }
            };
            splits.push(split);
        }
        let o = &mut self.orders[oi];
        for (k, (part, split)) in plan.parts.iter().zip(splits).enumerate() {
            let h = &mut o.coupons[k];
            h.discount_cents = part.discount_cents;
            h.compensation_cents = part.compensation_cents;
            if let Some(split) = split {
                h.split = split;
            }
            if let Some(r) = part.replacement {
                h.replaced = Some(h.coupon);
                h.coupon = r;
            }
            let lock = match part.outcome {
                "applied" | "swapped" => Lock::Used,
                _ => Lock::Released,
            };
            o.set_lock(k, lock);
        }
        // No coupon: the order keeps `none`, or `released` after a forced
        // release (the service wrote `none` until this test caught it; a
        // normal order's payment always kept it).
        o.status = OrderStatus::FinalPaid;
        o.final_payment_cents = Some(plan.amount_due_cents);
        Ok(())
    }

    /// Cancel (`closed`, from any status awaiting a payment) or refund
    /// (`refunded`, from `paid`, `deposit_paid` or `final_paid`); every
    /// coupon still bound to the order is released or returned in the
    /// same transaction (`available` while valid, else `expired`), its
    /// reservation given back.
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
        // The first coupon by whether it is bound; a further one by its
        // lock on the order.
        let letting_go: Vec<usize> = (0..o.coupons.len())
            .filter(|&k| match k {
                0 => self.bound_to(o.coupons[0].coupon, o),
                _ => matches!(o.lock_of(k), Lock::Locked | Lock::Used),
            })
            .collect();
        self.let_go(oi, &letting_go);
        let o = &mut self.orders[oi];
        o.status = if refund {
            OrderStatus::Refunded
        } else {
            OrderStatus::Closed
        };
        o.checkout_lock_expires_s = None;
        Ok(())
    }

    /// Each line's discount: every coupon's share of it (API.md,
    /// Allocation); a compensation deducted at the final payment keeps the
    /// deposit's share.
    pub fn shares(&self, oi: usize) -> Vec<i64> {
        let o = &self.orders[oi];
        (0..o.lines.len())
            .map(|i| o.coupons.iter().filter_map(|h| h.split[i]).sum())
            .collect()
    }

    /// `POST /orders/{no}/refunds` of `quantity` units of line `line`:
    /// only `paid` and `final_paid` orders; no more units than are left.
    /// The money is the floor formula over the line's payable amount; each
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
        let o = &mut self.orders[oi];
        o.lines[line].refunded_quantity += quantity;
        o.lines[line].refunded_cents += money;
        o.refunded_cents += money;
        let all_refunded = o.lines.iter().all(|l| l.refunded_quantity == l.quantity);
        let o = &self.orders[oi];
        let mut outcomes = Vec::new();
        let mut returned = Vec::new();
        for (k, h) in o.coupons.iter().enumerate() {
            if o.lock_of(k) != Lock::Used {
                continue;
            }
            let covered: Vec<usize> = (0..o.lines.len())
                .filter(|&i| h.split[i].is_some())
                .collect();
            let discounted: Vec<usize> = covered
                .iter()
                .copied()
                .filter(|&i| h.split[i].unwrap_or(0) > 0)
                .collect();
            let holding = if discounted.is_empty() {
                covered
            } else {
                discounted
            };
            let back = holding
                .iter()
                .all(|&i| o.lines[i].refunded_quantity == o.lines[i].quantity);
            outcomes.push((h.coupon, if back { "returned" } else { "kept" }));
            if back {
                returned.push(k);
            }
        }
        self.let_go(oi, &returned);
        let o = &mut self.orders[oi];
        if all_refunded {
            o.status = OrderStatus::Refunded;
        }
        Ok(RefundOutcome {
            refund_cents: money,
            coupons: outcomes,
        })
    }

    /// `POST /coupons/{id}/release`: only a `locked` coupon; 409
    /// `order_active` while its order is live and still holds it, unless
    /// `force`. An order of several coupons holds them together: while it
    /// is live, none of them is released, even with `force` (cancel or
    /// refund the order). Service rules where API.md is silent: a normal
    /// order whose checkout lock lapsed no longer holds it; a forced
    /// release detaches the coupon from the live order (no coupon, no
    /// discount, no checkout lock); either way the order records the lock
    /// as `released`.
    pub fn release(&mut self, ci: usize, force: bool) -> Result<(), Refusal> {
        let c = &self.coupons[ci];
        if c.stored != CouponStatus::Locked {
            return Err("coupon_not_available");
        }
        let on = c.order_no.as_deref().and_then(|no| self.order_index(no));
        let position = on.and_then(|oi| {
            self.orders[oi]
                .coupons
                .iter()
                .position(|h| h.coupon == ci)
                .map(|k| (oi, k))
        });
        let live = |oi: usize| {
            let o = &self.orders[oi];
            o.status.is_live() && !self.lapsed(o)
        };
        if let Some((oi, k)) = position
            && (k > 0 || self.orders[oi].coupons.len() > 1)
            && live(oi)
        {
            return Err("order_active");
        }
        let holder = position.filter(|&(_, k)| k == 0).map(|(oi, _)| oi);
        let active = holder.is_some_and(live);
        if active && !force {
            return Err("order_active");
        }
        if let Some((oi, k)) = position {
            let o = &mut self.orders[oi];
            if k > 0 {
                if o.coupons[k].lock == Lock::Locked {
                    o.coupons[k].lock = Lock::Released;
                }
            } else if o.status.is_live() || o.lock == Lock::Locked {
                o.lock = Lock::Released;
                if active {
                    o.detached_snapshot_cents = o.snapshot_cents();
                    o.coupons.clear();
                    o.checkout_lock_expires_s = None;
                }
            }
        }
        self.unbind(ci, None);
        Ok(())
    }

    /// `POST /users/{u}/compensation-coupons` with a typed amount: a fixed
    /// coupon for every category and shop and any total, valid `valid_s`
    /// from now, outside any stock and budget. An order named must be the
    /// user's (`order_not_owned`). The API token is not capped (support
    /// staff in the console are; not modelled).
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
            shop: None,
            stackable: true,
            reserved_cents: 0,
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
            OrderStatus::PendingPayment => (o.total_cents - o.discount_cents()).max(0),
            OrderStatus::PendingDeposit => o.deposit_cents,
            OrderStatus::DepositPaid => match self.plan(oi) {
                Ok(p) => p.amount_due_cents,
                Err(_) => final_amount(
                    o.total_cents,
                    o.deposit_cents,
                    o.discount_cents(),
                    o.compensation_cents(),
                ),
            },
            _ => 0,
        }
    }
}
