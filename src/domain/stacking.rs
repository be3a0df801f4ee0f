//! Several coupons on one order (叠加): which coupons may go together
//! ([`check_combinable`]), what each gives in the order the contract
//! applies them ([`apply`]), and the best combination of a customer's
//! usable coupons for a cart ([`best_combination`]).
//!
//! The rules (the HTTP contract's "Several coupons on one order"):
//! - at most one shop coupon per shop and at most one platform coupon; a
//!   coupon whose template is not stackable goes alone;
//! - every shop coupon is judged and split on its shop's eligible lines at
//!   list price; then the platform coupon on its eligible lines' amounts
//!   after the shop coupons' shares, its threshold judged on that amount;
//! - a presale order's discounts together stay within what the deposit
//!   leaves: what is over is taken back from the last coupon applied
//!   first (the platform coupon, then the shop coupons in reverse).
//!
//! The best combination is the largest total discount; on a tie, fewer
//! coupons; then the combination whose `ends_at` list, sorted earliest
//! first, is smaller element by element. It is found without trying every
//! subset: shop coupons of different shops touch different lines, so each
//! shop is one choice (none, or one of its coupons); the only coupling is
//! the platform coupon, whose base is its eligible amount less the shop
//! coupons' shares on its lines. For each platform coupon (and for none),
//! the shops are folded one by one into a set of partial choices, keeping
//! only those no other partial choice beats whatever comes after
//! (a larger or equal discount, a smaller or equal share on the platform
//! coupon's lines, fewer coupons or earlier ends; or a larger
//! discount that meets the threshold whatever comes after, ahead by more
//! than the platform coupon could give back on the larger base the other
//! leaves: [`DiscountRule::most_gain`]). Without that last rule, eight
//! shops of three choices each fold into up to 3^8 = 6,561 choices; with
//! it, a platform coupon of a fixed amount or a percentage below 100
//! keeps a handful. The set is bounded by [`MAX_STATES`], and an answer
//! found past the bound says it may not be the best (`exact: false`).
//! Choosing the largest shop coupon of each shop would not do: a larger
//! shop coupon can leave the platform coupon's threshold unmet.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::allocation::{Split, allocate, split};
use super::discount::{CouponTerms, DiscountRule, NotApplicable};
use super::ids::ShopId;
use super::line::Line;
use super::money::Cents;
use super::picker::{CouponOnOrder, OrderTerms, Unfit, discount_on_order};

/// Most partial choices the search keeps while folding in the shops.
pub const MAX_STATES: usize = 4_096;

/// A coupon as stacking reads it.
#[derive(Debug, Clone, Copy)]
pub struct Offer<'a> {
    pub terms: &'a CouponTerms,
    /// False: the coupon must be the order's only coupon.
    pub stackable: bool,
    /// For the tie-break between equal discounts.
    pub ends_at: DateTime<Utc>,
}

impl<'a> Offer<'a> {
    /// A coupon on an order as stacking reads it.
    pub fn of(coupon: &CouponOnOrder<'a>) -> Offer<'a> {
        Offer {
            terms: coupon.terms,
            stackable: coupon.terms.stackable,
            ends_at: coupon.ends_at,
        }
    }

    /// The shop of a shop coupon; `None` for a platform coupon.
    pub fn shop(&self) -> Option<&ShopId> {
        self.terms.scope.shop_id.as_ref()
    }
}

/// Why coupons cannot go on one order together (`coupons_not_combinable`);
/// the numbers are positions in the list asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clash {
    /// A coupon that must go alone, with others.
    NotStackable { coupon: usize },
    /// Two shop coupons of one shop.
    SameShop {
        shop: ShopId,
        first: usize,
        second: usize,
    },
    /// Two platform coupons.
    TwoPlatform { first: usize, second: usize },
}

/// Whether `offers` may go on one order together.
pub fn check_combinable(offers: &[Offer<'_>]) -> Result<(), Clash> {
    if offers.len() > 1
        && let Some(coupon) = offers.iter().position(|o| !o.stackable)
    {
        return Err(Clash::NotStackable { coupon });
    }
    let mut platform: Option<usize> = None;
    let mut shops: BTreeMap<&ShopId, usize> = BTreeMap::new();
    for (i, o) in offers.iter().enumerate() {
        match o.shop() {
            None => match platform {
                Some(first) => return Err(Clash::TwoPlatform { first, second: i }),
                None => platform = Some(i),
            },
            Some(shop) => match shops.get(shop) {
                Some(&first) => {
                    return Err(Clash::SameShop {
                        shop: shop.clone(),
                        first,
                        second: i,
                    });
                }
                None => {
                    shops.insert(shop, i);
                }
            },
        }
    }
    Ok(())
}

/// One coupon of an applied combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedCoupon {
    pub discount: Cents,
    /// Its share of each line it covers.
    pub split: Split,
}

/// What a combination gives on an order's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// One per offer, in the order the offers were given.
    pub coupons: Vec<AppliedCoupon>,
    pub total: Cents,
}

impl Applied {
    /// Each line's amount less every coupon's share of it.
    pub fn payable(&self, lines: &[Line]) -> Vec<Cents> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                self.coupons.iter().fold(l.amount(), |left, c| {
                    left.saturating_sub(c.split.get(i).copied().flatten().unwrap_or(Cents::ZERO))
                })
            })
            .collect()
    }
}

/// A coupon of a combination that does not apply, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotApplied {
    /// Its position in the list asked for.
    pub coupon: usize,
    pub why: NotApplicable,
    /// How far its base is below its minimum spend (zero when no line is
    /// eligible).
    pub shortfall: Cents,
}

/// Why coupons asked for together cannot go on an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// One of them does not fit: its position in the list and why.
    Unfit { coupon: usize, why: Unfit },
    /// They may not go together.
    Clash(Clash),
}

/// The coupons of one order, checked and applied as the contract orders
/// it: each usable (owner, status, validity) and applicable alone at list
/// price, in the order listed; then combinable; then applied (a platform
/// coupon's threshold judged on what the shop coupons leave). The
/// discounts together stay within [`OrderTerms::discount_cap`].
pub fn apply_on_order(
    order: &OrderTerms<'_>,
    coupons: &[CouponOnOrder<'_>],
    now: DateTime<Utc>,
) -> Result<Applied, Refused> {
    for (i, c) in coupons.iter().enumerate() {
        discount_on_order(c, order, now).map_err(|why| Refused::Unfit { coupon: i, why })?;
    }
    let offers: Vec<Offer<'_>> = coupons.iter().map(Offer::of).collect();
    check_combinable(&offers).map_err(Refused::Clash)?;
    apply(order.lines, &offers, order.discount_cap()).map_err(|n| Refused::Unfit {
        coupon: n.coupon,
        why: match n.why {
            NotApplicable::ThresholdNotMet => Unfit::ThresholdNotMet {
                shortfall: n.shortfall,
            },
            NotApplicable::NoEligibleLine => Unfit::NoEligibleLine,
        },
    })
}

/// The positions of `offers` in the order they apply: shop coupons in the
/// order given, then the platform coupon.
fn application_order(offers: &[Offer<'_>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..offers.len())
        .filter(|&i| offers[i].shop().is_some())
        .collect();
    order.extend((0..offers.len()).filter(|&i| offers[i].shop().is_none()));
    order
}

/// The discounts of `offers` (combinable: see [`check_combinable`]) on
/// `lines`, each split over the lines it covers, the discounts together
/// at most `cap` (the order's total for a normal order, what the deposit
/// leaves for a presale one). Refused with the first coupon, in the order
/// of application, that does not apply.
pub fn apply(lines: &[Line], offers: &[Offer<'_>], cap: Cents) -> Result<Applied, NotApplied> {
    let order = application_order(offers);
    let mut remaining: Vec<Cents> = lines.iter().map(Line::amount).collect();
    let mut coupons: Vec<Option<AppliedCoupon>> = vec![None; offers.len()];
    // What each coupon was judged and split on: list prices for a shop
    // coupon, what the shop coupons left for the platform coupon.
    let mut judged_on: Vec<Vec<Cents>> = vec![Vec::new(); offers.len()];
    for &i in &order {
        let terms = offers[i].terms;
        let on: Vec<Cents> = if offers[i].shop().is_some() {
            lines.iter().map(Line::amount).collect()
        } else {
            remaining.clone()
        };
        let applied = judge(terms, lines, &on).map_err(|(why, shortfall)| NotApplied {
            coupon: i,
            why,
            shortfall,
        })?;
        for (left, share) in remaining.iter_mut().zip(&applied.split) {
            *left = left.saturating_sub(share.unwrap_or(Cents::ZERO));
        }
        judged_on[i] = on;
        coupons[i] = Some(applied);
    }
    let mut coupons: Vec<AppliedCoupon> = coupons
        .into_iter()
        .map(|c| {
            c.unwrap_or(AppliedCoupon {
                discount: Cents::ZERO,
                split: vec![None; lines.len()],
            })
        })
        .collect();
    // Over the cap: taken back from the last coupon applied first.
    let sum = coupons
        .iter()
        .fold(Cents::ZERO, |s, c| s.saturating_add(c.discount));
    let mut over = sum.saturating_sub(cap);
    for &i in order.iter().rev() {
        if over.is_zero() {
            break;
        }
        let c = &mut coupons[i];
        let back = over.min(c.discount);
        let kept = c.discount.saturating_sub(back);
        c.split = split_over(&c.split, kept, &judged_on[i]);
        c.discount = kept;
        over = over.saturating_sub(back);
    }
    let total = coupons
        .iter()
        .fold(Cents::ZERO, |s, c| s.saturating_add(c.discount));
    Ok(Applied { coupons, total })
}

/// `discount` split over the lines `like` covers, in proportion to the
/// amounts `on` (by [`split`]).
fn split_over(like: &Split, discount: Cents, on: &[Cents]) -> Split {
    let amounts: Vec<Cents> = like
        .iter()
        .zip(on)
        .filter(|(s, _)| s.is_some())
        .map(|(_, a)| *a)
        .collect();
    let mut parts = split(discount, &amounts).into_iter();
    like.iter()
        .map(|s| s.map(|_| parts.next().unwrap_or(Cents::ZERO)))
        .collect()
}

/// A coupon judged on the amounts `on` of the lines it covers: no covered
/// line, or their amounts below its minimum spend, and it does not apply;
/// else its rule on their sum, split over them in proportion. On list
/// prices this is [`CouponTerms::discount_on`] split by [`allocate`].
fn judge(
    terms: &CouponTerms,
    lines: &[Line],
    on: &[Cents],
) -> Result<AppliedCoupon, (NotApplicable, Cents)> {
    let covered: Split = lines
        .iter()
        .zip(on)
        .map(|(l, a)| terms.covers(l).then_some(*a))
        .collect();
    if covered.iter().all(Option::is_none) {
        return Err((NotApplicable::NoEligibleLine, Cents::ZERO));
    }
    let base = covered
        .iter()
        .flatten()
        .fold(Cents::ZERO, |s, a| s.saturating_add(*a));
    if base < terms.min_order {
        return Err((
            NotApplicable::ThresholdNotMet,
            terms.min_order.saturating_sub(base),
        ));
    }
    let discount = terms.rule.discount(base);
    Ok(AppliedCoupon {
        discount,
        split: split_over(&covered, discount, on),
    })
}

/// The best combination found for a cart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Best {
    /// Positions in the offers, in the order given.
    pub chosen: Vec<usize>,
    pub applied: Applied,
    /// False when the search passed [`MAX_STATES`] and dropped partial
    /// choices: the answer is a good one, not proven the best.
    pub exact: bool,
    /// The most partial choices kept at once by any fold: what the search
    /// cost.
    pub peak_states: usize,
}

/// How a combination ranks: total discount, then fewer coupons, then the
/// sorted `ends_at` list, smaller first.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rank {
    total: Cents,
    count: usize,
    ends: Vec<DateTime<Utc>>,
}

impl Rank {
    /// `Greater` when `self` is the better combination.
    fn cmp_better(&self, other: &Rank) -> Ordering {
        self.total
            .cmp(&other.total)
            .then(other.count.cmp(&self.count))
            .then_with(|| other.ends.cmp(&self.ends))
    }
}

/// One partial choice of shop coupons while the shops are folded in.
#[derive(Debug, Clone)]
struct State {
    /// The chosen shop coupons' discounts, summed.
    discount: Cents,
    /// Their shares on the platform coupon's lines, summed (zero without
    /// a platform coupon).
    overlap: Cents,
    /// Sorted.
    ends: Vec<DateTime<Utc>>,
    chosen: Vec<usize>,
}

/// A shop coupon that applies alone, with what stacking needs of it.
struct ShopOption {
    index: usize,
    discount: Cents,
    split: Split,
    ends_at: DateTime<Utc>,
}

/// How a fold may drop partial choices.
#[derive(Debug, Clone, Copy)]
struct Fold<'r> {
    /// Past this share on the platform coupon's lines, its threshold can
    /// no longer be met: such choices are dropped.
    overlap_limit: Option<Cents>,
    /// The cap cannot bind (a normal order: the discounts never add up to
    /// more than the lines), so a choice with a larger discount and no
    /// larger share beats one with a smaller discount outright.
    strict: bool,
    /// The platform coupon's rule and the amount of its lines at list
    /// price. With `strict`, a choice `k` that meets the threshold
    /// whatever comes after beats a choice `s` of a smaller share when its
    /// discount is ahead by more than the platform coupon can give back
    /// on the difference ([`DiscountRule::most_gain`] from the smallest
    /// base `k` can leave): for every completion, `k`'s total is then the
    /// larger. A platform coupon that gives the same on every base past
    /// its threshold (满300减30) gives nothing back, so any larger sure
    /// discount wins.
    platform: Option<(&'r DiscountRule, Cents)>,
}

/// How many of the kept choices sure to meet the threshold a new choice is
/// compared with (the one of the largest discount and the latest ones):
/// dropping fewer choices only costs time, never the answer, so the
/// comparisons per choice are bounded.
const SURE_WINDOW: usize = 32;

/// Folds the shops' options into the partial choices; `overlap_of` is an
/// option's share on the platform coupon's lines. A choice is dropped only
/// when another is at least as good for every completion: the same
/// discount and share with fewer coupons or earlier ends (sorted ends
/// compared in order: adding the same coupons to both keeps that order),
/// or (when `fold.strict`) a larger discount with no larger share, whose
/// total is then larger for every completion. Returns the choices and
/// whether none was dropped for [`MAX_STATES`].
fn fold_shops(
    shops: &[Vec<&ShopOption>],
    overlap_of: impl Fn(&ShopOption) -> Cents,
    fold: Fold<'_>,
    peak: &mut usize,
) -> (Vec<State>, bool) {
    let mut exact = true;
    // The most the shops from `k` on can add to the share: `rest[k]`.
    let mut rest = vec![Cents::ZERO; shops.len() + 1];
    for (k, options) in shops.iter().enumerate().rev() {
        let most = options
            .iter()
            .map(|o| overlap_of(o))
            .max()
            .unwrap_or(Cents::ZERO);
        rest[k] = rest[k + 1].saturating_add(most);
    }
    let mut states = vec![State {
        discount: Cents::ZERO,
        overlap: Cents::ZERO,
        ends: Vec::new(),
        chosen: Vec::new(),
    }];
    for (k, options) in shops.iter().enumerate() {
        let after = rest.get(k + 1).copied().unwrap_or(Cents::ZERO);
        let mut next: Vec<State> = Vec::with_capacity(states.len() * (options.len() + 1));
        for s in &states {
            next.push(s.clone());
            for o in options {
                let overlap = s.overlap.saturating_add(overlap_of(o));
                if fold.overlap_limit.is_some_and(|limit| overlap > limit) {
                    continue;
                }
                let mut ends = s.ends.clone();
                let at = ends.partition_point(|e| *e <= o.ends_at);
                ends.insert(at, o.ends_at);
                let mut chosen = s.chosen.clone();
                chosen.push(o.index);
                next.push(State {
                    discount: s.discount.saturating_add(o.discount),
                    overlap,
                    ends,
                    chosen,
                });
            }
        }
        // Best first: larger discount, smaller share, fewer coupons,
        // earlier ends.
        next.sort_by(|a, b| {
            b.discount
                .cmp(&a.discount)
                .then(a.overlap.cmp(&b.overlap))
                .then(a.chosen.len().cmp(&b.chosen.len()))
                .then_with(|| a.ends.cmp(&b.ends))
        });
        let mut kept: Vec<State> = Vec::with_capacity(next.len());
        // The smallest share among the kept choices of a larger discount.
        let mut least_above: Option<Cents> = None;
        let mut group_least: Option<Cents> = None;
        let mut group_discount: Option<Cents> = None;
        // The kept choices that meet the threshold whatever the shops
        // after add: (discount, share), largest discount first.
        let mut sure_kept: Vec<(Cents, Cents)> = Vec::new();
        for s in next {
            if group_discount != Some(s.discount) {
                least_above = match (least_above, group_least) {
                    (Some(a), Some(g)) => Some(a.min(g)),
                    (a, g) => a.or(g),
                };
                group_least = None;
                group_discount = Some(s.discount);
            }
            let duplicate = kept
                .last()
                .is_some_and(|k| k.discount == s.discount && k.overlap == s.overlap);
            let beaten = fold.strict && least_above.is_some_and(|a| a <= s.overlap);
            let outdone = fold.strict
                && fold.platform.is_some_and(|(rule, list)| {
                    let window = sure_kept
                        .first()
                        .into_iter()
                        .chain(sure_kept.iter().skip(1).rev().take(SURE_WINDOW));
                    window.into_iter().any(|&(discount, overlap)| {
                        overlap > s.overlap && {
                            let lowest = list.saturating_sub(overlap).saturating_sub(after);
                            let back = rule.most_gain(lowest, overlap.saturating_sub(s.overlap));
                            discount.saturating_sub(s.discount) > back
                        }
                    })
                });
            if duplicate || beaten || outdone {
                continue;
            }
            let sure = fold
                .overlap_limit
                .is_none_or(|limit| s.overlap.saturating_add(after) <= limit);
            if sure {
                sure_kept.push((s.discount, s.overlap));
            }
            group_least = Some(group_least.map_or(s.overlap, |g| g.min(s.overlap)));
            kept.push(s);
        }
        if kept.len() > MAX_STATES {
            kept.truncate(MAX_STATES);
            exact = false;
        }
        *peak = (*peak).max(kept.len());
        states = kept;
    }
    (states, exact)
}

/// The best combination of `offers` (a customer's coupons usable now on
/// this order) on `lines`, the discounts together at most `cap`; `None`
/// when no coupon applies. Exactly what [`apply`] gives for the chosen
/// coupons.
///
/// Coupons of the same terms and end (several claims of one template)
/// are one choice: two of them never go on one order (same shop, or two
/// platform coupons), and either ranks the same, so only the first is
/// searched. A customer holding 200 coupons of 20 templates is searched as
/// 20.
pub fn best_combination(lines: &[Line], offers: &[Offer<'_>], cap: Cents) -> Option<Best> {
    let mut distinct: Vec<usize> = Vec::with_capacity(offers.len());
    for (i, o) in offers.iter().enumerate() {
        let seen = distinct.iter().any(|&j| {
            let d = &offers[j];
            d.stackable == o.stackable && d.ends_at == o.ends_at && d.terms == o.terms
        });
        if !seen {
            distinct.push(i);
        }
    }
    let firsts: Vec<Offer<'_>> = distinct.iter().map(|&i| offers[i]).collect();
    let mut found = best_of_distinct(lines, &firsts, cap)?;
    for c in &mut found.chosen {
        *c = distinct.get(*c).copied().unwrap_or(*c);
    }
    Some(found)
}

/// [`best_combination`] over offers no two of which are alike.
fn best_of_distinct(lines: &[Line], offers: &[Offer<'_>], cap: Cents) -> Option<Best> {
    let mut best: Option<(Rank, Vec<usize>)> = None;
    let mut exact = true;
    let mut peak_states = 0;
    let consider = |chosen: Vec<usize>, total: Cents, best: &mut Option<(Rank, Vec<usize>)>| {
        if chosen.is_empty() {
            return;
        }
        let mut ends: Vec<DateTime<Utc>> = chosen.iter().map(|&i| offers[i].ends_at).collect();
        ends.sort();
        let rank = Rank {
            total,
            count: chosen.len(),
            ends,
        };
        if best
            .as_ref()
            .is_none_or(|(b, _)| rank.cmp_better(b) == Ordering::Greater)
        {
            *best = Some((rank, chosen));
        }
    };

    // Each coupon alone (a coupon that must go alone can only go so).
    for i in 0..offers.len() {
        if let Ok(a) = apply(lines, &offers[i..=i], cap) {
            consider(vec![i], a.total, &mut best);
        }
    }

    // Stackable shop coupons that apply, by shop; a coupon that gives
    // nothing only adds to the count.
    let mut by_shop: BTreeMap<&ShopId, Vec<ShopOption>> = BTreeMap::new();
    for (i, o) in offers.iter().enumerate() {
        let Some(shop) = o.shop().filter(|_| o.stackable) else {
            continue;
        };
        if let Ok(discount) = o.terms.discount_on(lines)
            && !discount.is_zero()
        {
            by_shop.entry(shop).or_default().push(ShopOption {
                index: i,
                discount,
                split: allocate(o.terms, lines, discount),
                ends_at: o.ends_at,
            });
        }
    }
    let shops: Vec<Vec<&ShopOption>> = by_shop.values().map(|v| v.iter().collect()).collect();

    // Shop coupons only: the discounts add up.
    let list_total = lines
        .iter()
        .fold(Cents::ZERO, |s, l| s.saturating_add(l.amount()));
    let strict = cap >= list_total;
    let (states, fold_exact) = fold_shops(
        &shops,
        |_| Cents::ZERO,
        Fold {
            overlap_limit: None,
            strict,
            platform: None,
        },
        &mut peak_states,
    );
    exact &= fold_exact;
    for s in states.into_iter().filter(|s| s.chosen.len() > 1) {
        consider(s.chosen, s.discount.min(cap), &mut best);
    }

    // Each stackable platform coupon on what the shop coupons leave.
    for (p, o) in offers.iter().enumerate() {
        if o.shop().is_some() || !o.stackable {
            continue;
        }
        let covered: Vec<bool> = lines.iter().map(|l| o.terms.covers(l)).collect();
        if !covered.iter().any(|c| *c) {
            continue;
        }
        let list = lines
            .iter()
            .zip(&covered)
            .filter(|(_, c)| **c)
            .fold(Cents::ZERO, |s, (l, _)| s.saturating_add(l.amount()));
        if list < o.terms.min_order {
            continue;
        }
        let (states, fold_exact) = fold_shops(
            &shops,
            |opt| {
                opt.split
                    .iter()
                    .zip(&covered)
                    .filter(|(_, c)| **c)
                    .fold(Cents::ZERO, |s, (share, _)| {
                        s.saturating_add(share.unwrap_or(Cents::ZERO))
                    })
            },
            Fold {
                overlap_limit: Some(list.saturating_sub(o.terms.min_order)),
                strict,
                platform: Some((&o.terms.rule, list)),
            },
            &mut peak_states,
        );
        exact &= fold_exact;
        for s in states.into_iter().filter(|s| !s.chosen.is_empty()) {
            let base = list.saturating_sub(s.overlap);
            if base < o.terms.min_order {
                continue;
            }
            let total = s
                .discount
                .saturating_add(o.terms.rule.discount(base))
                .min(cap);
            let mut chosen = s.chosen;
            chosen.push(p);
            consider(chosen, total, &mut best);
        }
    }

    let (_, mut chosen) = best?;
    chosen.sort_unstable();
    let picked: Vec<Offer<'_>> = chosen.iter().map(|&i| offers[i]).collect();
    let applied = apply(lines, &picked, cap).ok()?;
    Some(Best {
        chosen,
        applied,
        exact,
        peak_states,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::discount::{DiscountRule, LineScope, PartialRefundRule};
    use crate::domain::ids::LineId;
    use proptest::prelude::*;

    fn c(v: i64) -> Cents {
        Cents::from_stored(v)
    }

    fn t(days: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + days * 86_400, 0).unwrap_or_default()
    }

    fn line(id: &str, category: &str, shop: Option<&str>, q: i64, p: i64) -> Line {
        Line {
            line_id: LineId::from_stored(id.into()),
            sku: None,
            category: category.into(),
            shop_id: shop.map(|s| ShopId::from_stored(s.into())),
            quantity: q,
            unit_price: c(p),
        }
    }

    fn terms(rule: DiscountRule, min: i64, categories: &[&str], shop: Option<&str>) -> CouponTerms {
        CouponTerms {
            rule,
            min_order: c(min),
            categories: categories.iter().map(|s| s.to_string()).collect(),
            scope: LineScope {
                shop_id: shop.map(|s| ShopId::from_stored(s.into())),
                ..LineScope::default()
            },
            refund_rule: PartialRefundRule::Proportional,
            stackable: true,
        }
    }

    fn fixed(v: i64) -> DiscountRule {
        DiscountRule::Fixed { value: c(v) }
    }

    fn offer(terms: &CouponTerms, days: i64) -> Offer<'_> {
        Offer {
            terms,
            stackable: true,
            ends_at: t(days),
        }
    }

    #[test]
    fn a_choice_that_later_shops_could_push_past_the_threshold_does_not_hide_another() {
        // Shops A and B, 100.00 each; the platform coupon gives a constant
        // 20.00 from 180.00, so only one 15.00 shop coupon fits beside it.
        // After shop A, taking A's coupon meets the threshold for now but
        // not whatever B adds: it must not outdo leaving A out, because
        // B's coupon (ending sooner) is the better partner on a tie.
        let lines = [
            line("a", "x", Some("A"), 1, 10_000),
            line("b", "x", Some("B"), 1, 10_000),
        ];
        let a = terms(fixed(1_500), 0, &[], Some("A"));
        let b = terms(fixed(1_500), 0, &[], Some("B"));
        let p = terms(fixed(2_000), 18_000, &[], None);
        let offers = [offer(&a, 5), offer(&b, 2), offer(&p, 9)];
        let best = best_combination(&lines, &offers, c(20_000)).expect("a combination");
        assert_eq!(best.applied.total, c(3_500));
        assert_eq!(best.chosen, vec![1, 2], "B's coupon ends sooner");
    }

    #[test]
    fn one_coupon_per_shop_one_platform_coupon_and_a_lone_coupon_alone() {
        let a1 = terms(fixed(500), 0, &[], Some("A"));
        let a2 = terms(fixed(300), 0, &[], Some("A"));
        let b = terms(fixed(300), 0, &[], Some("B"));
        let p1 = terms(fixed(1000), 0, &[], None);
        let p2 = terms(fixed(800), 0, &[], None);
        assert_eq!(
            check_combinable(&[offer(&a1, 1), offer(&b, 1), offer(&p1, 1)]),
            Ok(())
        );
        assert_eq!(
            check_combinable(&[offer(&a1, 1), offer(&a2, 1)]),
            Err(Clash::SameShop {
                shop: ShopId::from_stored("A".into()),
                first: 0,
                second: 1
            })
        );
        assert_eq!(
            check_combinable(&[offer(&p1, 1), offer(&b, 1), offer(&p2, 1)]),
            Err(Clash::TwoPlatform {
                first: 0,
                second: 2
            })
        );
        let mut lone = offer(&b, 1);
        lone.stackable = false;
        assert_eq!(check_combinable(&[lone]), Ok(()));
        assert_eq!(
            check_combinable(&[offer(&p1, 1), lone]),
            Err(Clash::NotStackable { coupon: 1 })
        );
    }

    #[test]
    fn shop_coupons_apply_at_list_price_and_the_platform_coupon_on_what_they_leave() {
        // Shop A: 200.00 of beauty; shop B: 100.00 of food.
        let lines = [
            line("a", "beauty", Some("A"), 2, 10_000),
            line("b", "food", Some("B"), 1, 10_000),
        ];
        let shop_a = terms(fixed(5_000), 15_000, &[], Some("A"));
        // 满250减30 on everything: 300.00 at list, 250.00 after shop A's
        // 50.00: still met.
        let platform = terms(fixed(3_000), 25_000, &[], None);
        let offers = [offer(&platform, 1), offer(&shop_a, 1)];
        let a = apply(&lines, &offers, c(30_000)).unwrap();
        assert_eq!(a.coupons[1].discount, c(5_000));
        assert_eq!(a.coupons[1].split, vec![Some(c(5_000)), None]);
        assert_eq!(a.coupons[0].discount, c(3_000));
        // 30.00 over 150.00 and 100.00 left: 18.00 and 12.00.
        assert_eq!(a.coupons[0].split, vec![Some(c(1_800)), Some(c(1_200))]);
        assert_eq!(a.total, c(8_000));
        assert_eq!(a.payable(&lines), vec![c(13_200), c(8_800)]);
        // 满260减30: 300.00 at list but 250.00 after the shop coupon.
        let platform = terms(fixed(3_000), 26_000, &[], None);
        assert_eq!(
            apply(&lines, &[offer(&platform, 1), offer(&shop_a, 1)], c(30_000)),
            Err(NotApplied {
                coupon: 0,
                why: NotApplicable::ThresholdNotMet,
                shortfall: c(1_000),
            })
        );
    }

    #[test]
    fn a_cap_takes_the_excess_back_from_the_last_coupon_applied() {
        let lines = [line("a", "x", Some("A"), 1, 10_000)];
        let shop = terms(fixed(3_000), 0, &[], Some("A"));
        let platform = terms(fixed(5_000), 0, &[], None);
        let a = apply(&lines, &[offer(&shop, 1), offer(&platform, 1)], c(6_000)).unwrap();
        assert_eq!(
            (a.coupons[0].discount, a.coupons[1].discount, a.total),
            (c(3_000), c(3_000), c(6_000))
        );
        let a = apply(&lines, &[offer(&shop, 1), offer(&platform, 1)], c(2_000)).unwrap();
        assert_eq!(
            (a.coupons[0].discount, a.coupons[1].discount),
            (c(2_000), c(0))
        );
        assert_eq!(a.coupons[1].split, vec![Some(c(0))]);
    }

    #[test]
    fn the_best_is_not_always_the_biggest_shop_coupon_when_the_platform_threshold_binds() {
        // Shop A's 60.00 coupon leaves the platform's 满250 unmet; its
        // 40.00 coupon keeps it: 40 + 30 beats 60.
        let lines = [
            line("a", "beauty", Some("A"), 2, 10_000),
            line("b", "food", Some("B"), 1, 9_000),
        ];
        let big = terms(fixed(6_000), 0, &[], Some("A"));
        let small = terms(fixed(4_000), 0, &[], Some("A"));
        let platform = terms(fixed(3_000), 25_000, &[], None);
        let offers = [offer(&big, 1), offer(&small, 2), offer(&platform, 3)];
        let best = best_combination(&lines, &offers, c(29_000)).unwrap();
        assert_eq!(best.chosen, vec![1, 2]);
        assert_eq!(best.applied.total, c(7_000));
        assert!(best.exact);
    }

    #[test]
    fn equal_discounts_prefer_fewer_coupons_then_the_earlier_ends() {
        let lines = [line("a", "x", Some("A"), 1, 10_000)];
        let shop = terms(fixed(1_000), 0, &[], Some("A"));
        let late = terms(fixed(2_000), 0, &[], None);
        let early = terms(fixed(2_000), 0, &[], None);
        let lone = terms(fixed(3_000), 0, &[], None);
        let mut alone = offer(&lone, 7);
        alone.stackable = false;
        let offers = [offer(&shop, 5), offer(&late, 9), offer(&early, 3), alone];
        // 30.00 with one coupon beats 30.00 with two.
        let best = best_combination(&lines, &offers, c(10_000)).unwrap();
        assert_eq!(best.chosen, vec![3]);
        // Without it, the pair whose ends, sorted, are earlier: [3, 5]
        // before [5, 9].
        let best = best_combination(&lines, &offers[..3], c(10_000)).unwrap();
        assert_eq!(best.chosen, vec![0, 2]);
        assert_eq!(best.applied.total, c(3_000));
    }

    #[test]
    fn two_hundred_coupons_and_a_twenty_line_cart_over_five_shops_stay_within_the_bound() {
        // 20 lines over 5 shops; 20 shop coupons (4 a shop) and 180
        // platform coupons, fixed and percent, thresholds spread out: the
        // shops fold into at most 5^5 = 3,125 partial choices.
        let lines: Vec<Line> = (0..20)
            .map(|i| {
                let shop = format!("S{}", i % 5);
                line(
                    &format!("L{i}"),
                    CATEGORIES[i % 2],
                    Some(&shop),
                    1 + (i as i64 % 3),
                    1_999 + 137 * i as i64,
                )
            })
            .collect();
        let all: Vec<CouponTerms> = (0..200)
            .map(|k| {
                let rule = if k % 3 == 0 {
                    DiscountRule::Percent {
                        percent_off: (5 + k % 20) as u8,
                        max_discount: Some(c(500 + 37 * k as i64)),
                    }
                } else {
                    fixed(100 + 53 * k as i64 % 3_000)
                };
                let shop = (k < 20).then(|| format!("S{}", k % 5));
                terms(rule, 211 * (k as i64 % 40), &[], shop.as_deref())
            })
            .collect();
        let offers: Vec<Offer<'_>> = all
            .iter()
            .enumerate()
            .map(|(k, terms)| offer(terms, k as i64 % 30))
            .collect();
        let total = lines
            .iter()
            .fold(Cents::ZERO, |s, l| s.saturating_add(l.amount()));
        let best = best_combination(&lines, &offers, total).expect("some coupon applies");
        assert!(best.exact, "the partial choices stayed under {MAX_STATES}");
        assert!(
            check_combinable(&best.chosen.iter().map(|&i| offers[i]).collect::<Vec<_>>()).is_ok()
        );
        assert!(
            best.chosen.len() > 1,
            "shop coupons and a platform coupon together"
        );
    }

    /// Every subset that may go together and applies, ranked the same way.
    fn brute_force(lines: &[Line], offers: &[Offer<'_>], cap: Cents) -> Option<Rank> {
        let mut best: Option<Rank> = None;
        for mask in 1u32..(1 << offers.len()) {
            let picked: Vec<Offer<'_>> = (0..offers.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| offers[i])
                .collect();
            if check_combinable(&picked).is_err() {
                continue;
            }
            let Ok(a) = apply(lines, &picked, cap) else {
                continue;
            };
            let mut ends: Vec<DateTime<Utc>> = picked.iter().map(|o| o.ends_at).collect();
            ends.sort();
            let rank = Rank {
                total: a.total,
                count: picked.len(),
                ends,
            };
            if best
                .as_ref()
                .is_none_or(|b| rank.cmp_better(b) == Ordering::Greater)
            {
                best = Some(rank);
            }
        }
        best
    }

    fn rule() -> impl Strategy<Value = DiscountRule> {
        prop_oneof![
            (0i64..8_000).prop_map(|v| DiscountRule::Fixed { value: c(v) }),
            (1u8..=60, proptest::option::of(0i64..5_000)).prop_map(|(p, cap)| {
                DiscountRule::Percent {
                    percent_off: p,
                    max_discount: cap.map(c),
                }
            }),
        ]
    }

    const SHOPS: [Option<&str>; 3] = [None, Some("A"), Some("B")];
    const CATEGORIES: [&str; 2] = ["x", "y"];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The search finds what trying every allowed subset finds: the
        /// same total, count and ends, and its choice applies to that
        /// total.
        #[test]
        fn the_best_combination_equals_a_brute_force_search(
            cart in prop::collection::vec((0usize..2, 0usize..3, 1i64..=4, 1i64..=9_000), 1..=6),
            coupons in prop::collection::vec(
                (rule(), 0i64..25_000, 0usize..4, 0usize..3, proptest::bool::weighted(0.85), 0i64..4),
                1..=7,
            ),
            capped in proptest::bool::weighted(0.3),
            cap_cents in 0i64..20_000,
        ) {
            let lines: Vec<Line> = cart
                .iter()
                .enumerate()
                .map(|(i, (cat, shop, q, p))| line(&format!("L{i}"), CATEGORIES[*cat], SHOPS[*shop], *q, *p))
                .collect();
            let all: Vec<CouponTerms> = coupons
                .iter()
                .map(|(r, min, cats, shop, _, _)| {
                    let categories: &[&str] = match cats {
                        0 | 1 => &[],
                        2 => &["x"],
                        _ => &["y"],
                    };
                    terms(*r, *min, categories, SHOPS[*shop])
                })
                .collect();
            let offers: Vec<Offer<'_>> = all
                .iter()
                .zip(&coupons)
                .map(|(terms, (_, _, _, _, stackable, ends))| Offer {
                    terms,
                    stackable: *stackable,
                    ends_at: t(*ends),
                })
                .collect();
            let total = lines.iter().fold(Cents::ZERO, |s, l| s.saturating_add(l.amount()));
            let cap = if capped { c(cap_cents).min(total) } else { total };
            let want = brute_force(&lines, &offers, cap);
            let got = best_combination(&lines, &offers, cap);
            match (&want, &got) {
                (None, None) => {}
                (Some(w), Some(g)) => {
                    prop_assert!(g.exact);
                    let mut ends: Vec<DateTime<Utc>> = g.chosen.iter().map(|&i| offers[i].ends_at).collect();
                    ends.sort();
                    let rank = Rank { total: g.applied.total, count: g.chosen.len(), ends };
                    prop_assert_eq!(&rank, w);
                    let picked: Vec<Offer<'_>> = g.chosen.iter().map(|&i| offers[i]).collect();
                    prop_assert!(check_combinable(&picked).is_ok());
                    prop_assert_eq!(apply(&lines, &picked, cap).ok(), Some(g.applied.clone()));
                    // The shares add up to each coupon's discount.
                    for a in &g.applied.coupons {
                        let shares = a.split.iter().flatten().fold(Cents::ZERO, |s, x| s.saturating_add(*x));
                        prop_assert_eq!(shares, a.discount);
                    }
                }
                _ => prop_assert!(false, "brute force {:?}, search {:?}", want, got),
            }
        }
    }

    const MANY_SHOPS: [Option<&str>; 6] =
        [None, Some("A"), Some("B"), Some("C"), Some("D"), Some("E")];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// With five shops, two or three choices a shop and platform
        /// coupons that grow with their base, the partial choices dropped
        /// for a larger discount never hide the best.
        #[test]
        fn the_best_combination_over_five_shops_equals_a_brute_force_search(
            cart in prop::collection::vec((0usize..2, 1usize..6, 1i64..=3, 1i64..=20_000), 5..=10),
            coupons in prop::collection::vec(
                (rule(), 0i64..40_000, 0usize..4, 0usize..6, 0i64..4),
                4..=10,
            ),
        ) {
            let lines: Vec<Line> = cart
                .iter()
                .enumerate()
                .map(|(i, (cat, shop, q, p))| line(&format!("L{i}"), CATEGORIES[*cat], MANY_SHOPS[*shop], *q, *p))
                .collect();
            let all: Vec<CouponTerms> = coupons
                .iter()
                .map(|(r, min, cats, shop, _)| {
                    let categories: &[&str] = match cats {
                        0 | 1 => &[],
                        2 => &["x"],
                        _ => &["y"],
                    };
                    terms(*r, *min, categories, MANY_SHOPS[*shop])
                })
                .collect();
            let offers: Vec<Offer<'_>> = all
                .iter()
                .zip(&coupons)
                .map(|(terms, (_, _, _, _, ends))| offer(terms, *ends))
                .collect();
            let total = lines.iter().fold(Cents::ZERO, |s, l| s.saturating_add(l.amount()));
            let want = brute_force(&lines, &offers, total);
            let got = best_combination(&lines, &offers, total);
            match (&want, &got) {
                (None, None) => {}
                (Some(w), Some(g)) => {
                    prop_assert!(g.exact);
                    let mut ends: Vec<DateTime<Utc>> = g.chosen.iter().map(|&i| offers[i].ends_at).collect();
                    ends.sort();
                    let rank = Rank { total: g.applied.total, count: g.chosen.len(), ends };
                    prop_assert_eq!(&rank, w);
                }
                _ => prop_assert!(false, "brute force {:?}, search {:?}", want, got),
            }
        }
    }

    #[test]
    fn eight_shops_of_three_choices_under_a_growing_platform_coupon_keep_few_partial_choices() {
        // 16 lines over 8 shops; each shop has a fixed and a percent
        // coupon (three choices with none), so a fold that kept every
        // choice not beaten on both discount and share would hold up to
        // 3^8 = 6,561. The platform coupon takes 10% without a cap, so a
        // larger shop discount gives back at most a tenth of itself.
        let lines: Vec<Line> = (0..16)
            .map(|i| {
                let shop = format!("S{}", i % 8);
                line(
                    &format!("L{i}"),
                    "x",
                    Some(&shop),
                    1 + (i as i64 % 3),
                    3_000 + 911 * i as i64,
                )
            })
            .collect();
        let mut all: Vec<CouponTerms> = (0..8)
            .flat_map(|k| {
                let shop = format!("S{k}");
                [
                    terms(fixed(500 + 100 * k), 0, &[], Some(&shop)),
                    terms(
                        DiscountRule::Percent {
                            percent_off: 5,
                            max_discount: None,
                        },
                        5_000,
                        &[],
                        Some(&shop),
                    ),
                ]
            })
            .collect();
        all.push(terms(
            DiscountRule::Percent {
                percent_off: 10,
                max_discount: None,
            },
            0,
            &[],
            None,
        ));
        let offers: Vec<Offer<'_>> = all.iter().map(|terms| offer(terms, 3)).collect();
        let total = lines
            .iter()
            .fold(Cents::ZERO, |s, l| s.saturating_add(l.amount()));
        let best = best_combination(&lines, &offers, total).expect("a combination");
        assert!(best.exact);
        assert!(
            best.peak_states <= 8,
            "kept {} partial choices at once",
            best.peak_states
        );
        assert_eq!(
            best.chosen.len(),
            9,
            "a coupon of every shop and the platform's"
        );
        assert_eq!(
            Some(best.applied.total),
            brute_force(&lines, &offers, total).map(|r| r.total)
        );
    }
}
