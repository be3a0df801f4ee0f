//! The story: the shop's last ten days, told through the real service
//! operations (customers claim, order, pay, deposit, pay the rest, cancel
//! and get refunds; the jobs expire and close what is due), so every
//! coupon and order has a real timeline.

use std::collections::BTreeMap;

use chrono::Duration;

use super::anomalies::ToPlant;
use super::catalogue::Catalogue;
use super::seed::{Cpn, Seed, step, user};
use super::{DemoError, USERS};
use crate::domain::category::CategoryName;
use crate::domain::coupon::CouponStatus;
use crate::domain::ids::OrderNo;
use crate::service::ServiceError;
use crate::service::support::Authority;

const CATEGORIES: [&str; 5] = ["phones", "appliances", "books", "snacks", "apparel"];

impl Seed {
    /// The shop's last ten days. Returns the orders the anomalies are
    /// planted on.
    pub(super) async fn story(&mut self) -> Result<ToPlant, DemoError> {
        for (code, zh, en) in [
            ("phones", "手机", "Phones"),
            ("appliances", "家电", "Appliances"),
            ("books", "图书", "Books"),
            ("snacks", "零食", "Snacks"),
            ("apparel", "服饰", "Apparel"),
            ("beauty", "美妆", "Beauty"),
        ] {
            let name = CategoryName::parse(code, zh, en)
                .map_err(|e| step("name the categories")(ServiceError::from(e)))?;
            self.svc
                .name_category_as(&self.ctx, &Authority::Api, name, None)
                .await
                .map_err(step("name the categories"))?;
        }
        let d = Duration::days;
        let h = Duration::hours;
        let m = Duration::minutes;

        let Catalogue {
            t300,
            t199,
            t90,
            beauty,
            newbie,
            flash,
            h72,
            h60,
            over,
            open,
            future,
        } = self.catalogue().await?;

        // Day -10, an hour later: the customers claim.
        self.at(d(10) - h(1));
        let mut c300: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut c199: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut c90: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut cbeauty: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut cnew: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut cflash: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut c72: BTreeMap<u32, Cpn> = BTreeMap::new();
        for n in 1..=USERS {
            cnew.insert(n, self.claim(n, &newbie).await?);
            // u10034 never claims 满300减50: its presale ends compensated.
            if n != 34 {
                c300.insert(n, self.claim(n, &t300).await?);
            }
            if n <= 20 || n == 36 {
                c199.insert(n, self.claim(n, &t199).await?);
            }
            if n <= 12 {
                c90.insert(n, self.claim(n, &t90).await?);
            }
            if (13..=24).contains(&n) {
                cbeauty.insert(n, self.claim(n, &beauty).await?);
            }
            if n == 31 || n == 32 {
                c72.insert(n, self.claim(n, &h72).await?);
            }
            self.tick(1);
        }
        // The flash sale: eight coupons, gone in minutes; the ninth is refused.
        for n in 21..=28 {
            cflash.insert(n, self.claim(n, &flash).await?);
        }
        self.claim_sold_out(29, &flash).await?;

        let need = |map: &BTreeMap<u32, Cpn>, n: u32| -> Result<Cpn, DemoError> {
            map.get(&n).cloned().ok_or_else(|| DemoError::Step {
                step: format!("find the coupon of {}", user(n)),
                source: ServiceError::IllegalTransition("the story lost a coupon".into()),
            })
        };
        let placed = |order: &Option<OrderNo>, what: &str| -> Result<OrderNo, DemoError> {
            order.clone().ok_or_else(|| DemoError::Step {
                step: format!("find the order {what}"),
                source: ServiceError::IllegalTransition("the story lost an order".into()),
            })
        };

        // Day -9: normal orders.
        self.at(d(9));
        for n in 1..=8u32 {
            let c = need(&c300, n)?;
            let cat = CATEGORIES[(n as usize) % CATEGORIES.len()];
            let no = self
                .normal(n, Some(&c), 32900 + i64::from(n) * 1100, cat)
                .await?;
            self.tick(2);
            self.pay(&no).await?;
            self.tick(7);
        }
        for n in [9u32, 10] {
            let c = need(&c90, n)?;
            let no = self.normal(n, Some(&c), 45900, "appliances").await?;
            self.tick(3);
            self.pay(&no).await?;
            self.tick(5);
        }
        for n in [13u32, 14] {
            let c = need(&cbeauty, n)?;
            let no = self.normal(n, Some(&c), 25900, "beauty").await?;
            self.tick(2);
            self.pay(&no).await?;
            self.tick(6);
        }
        for n in 21..=24u32 {
            let c = need(&cnew, n)?;
            let no = self.normal(n, Some(&c), 3990, "snacks").await?;
            self.tick(1);
            self.pay(&no).await?;
            self.tick(4);
        }
        let mut refund_later = Vec::new();
        for n in [11u32, 12] {
            let c = need(&c199, n)?;
            let no = self.normal(n, Some(&c), 21900, "apparel").await?;
            self.tick(2);
            self.pay(&no).await?;
            refund_later.push(no);
            self.tick(5);
        }
        for n in [15u32, 16] {
            let c = need(&c199, n)?;
            let no = self.normal(n, Some(&c), 23900, "apparel").await?;
            self.tick(4);
            self.cancel(&no, "不想要了").await?;
            self.tick(3);
        }
        // Two customers walk away from checkout: the lapse job closes them.
        for n in [17u32, 18] {
            let c = need(&c199, n)?;
            self.normal(n, Some(&c), 20900, "books").await?;
            self.tick(2);
        }
        for n in [19u32, 20] {
            let no = self.normal(n, None, 8900, "books").await?;
            self.tick(1);
            self.pay(&no).await?;
            self.tick(3);
        }

        // Day -9: the 618 presale (strict) takes deposits.
        let mut p_over_applied = None;
        let mut p_over_refund_final = None;
        let mut p_over_strict = None;
        for n in [26u32, 28, 29, 31, 32] {
            let c = if n == 31 {
                need(&c72, n)?
            } else {
                need(&c300, n)?
            };
            let no = self.presale(n, Some(&c), &over, 39900, 10000).await?;
            self.tick(2);
            self.deposit(&no).await?;
            self.tick(5);
            match n {
                26 => p_over_applied = Some(no),
                28 => p_over_refund_final = Some(no),
                29 => {} // never pays the rest: closed by the presale timeout
                31 => p_over_strict = Some(no), // its 72-hour coupon expires first
                _ => refund_later.push(no), // 32: deposit refunded on day -7
            }
        }
        let no = self
            .presale(30, Some(&need(&c300, 30)?), &over, 32900, 5000)
            .await?;
        self.tick(3);
        self.jobs().await?;

        // Day -8: refunds, a cancelled presale, the flash-sale coupons used.
        self.at(d(8));
        self.cancel(&no, "定金未付，取消预订").await?;
        self.tick(10);
        let nos = std::mem::take(&mut refund_later);
        let (normal_refunds, presale_refunds): (Vec<OrderNo>, Vec<OrderNo>) =
            nos.into_iter().partition(|n| n.contains("-N-"));
        for no in &normal_refunds {
            self.refund(no, "尺码不合适，七天无理由退货").await?;
            self.tick(20);
        }
        for n in 21..=23u32 {
            let c = need(&cflash, n)?;
            let no = self.normal(n, Some(&c), 12900, "snacks").await?;
            self.tick(2);
            self.pay(&no).await?;
            self.tick(9);
        }
        self.jobs().await?;

        // Day -7: a presale deposit refunded; the newcomer coupons lapse.
        self.at(d(7) - h(2));
        for no in &presale_refunds {
            self.refund(no, "预售定金退款：客户改变主意").await?;
            self.tick(15);
        }
        self.at(d(6) + h(20));
        self.jobs().await?;

        // Day -6: 72-hour coupons for the 双11 presale (swap_or_compensate).
        self.at(d(6));
        for n in [33u32, 34] {
            c72.insert(n, self.claim(n, &h72).await?);
            self.tick(3);
        }
        let mut p_swap = None;
        let mut p_comp = None;
        for n in [33u32, 34] {
            let c = need(&c72, n)?;
            let no = self.presale(n, Some(&c), &open, 39900, 10000).await?;
            self.tick(2);
            self.deposit(&no).await?;
            self.tick(6);
            if n == 33 {
                p_swap = Some(no);
            } else {
                p_comp = Some(no);
            }
        }

        // Day -5: the 618 window is open: final payments.
        self.at(d(5));
        let p_over_applied = placed(&p_over_applied, "of u10026")?;
        let p_over_refund_final = placed(&p_over_refund_final, "of u10028")?;
        let p_over_strict = placed(&p_over_strict, "of u10031")?;
        self.final_payment(&p_over_applied, "applied").await?;
        self.tick(30);
        self.final_payment(&p_over_refund_final, "applied").await?;
        self.tick(45);
        self.final_payment(&p_over_strict, "no_discount_expired")
            .await?;
        self.tick(30);
        let mut p_open = Vec::new();
        for n in [35u32, 36, 38] {
            let c = if n == 36 {
                need(&c199, n)?
            } else {
                need(&c300, n)?
            };
            let no = self.presale(n, Some(&c), &open, 32900, 5000).await?;
            self.tick(2);
            self.deposit(&no).await?;
            self.tick(8);
            p_open.push(no);
        }
        self.jobs().await?;

        // Day -4: one 618 order refunded after its final payment.
        self.at(d(4));
        self.refund(&p_over_refund_final, "商品质量问题，整单退款")
            .await?;
        self.jobs().await?;

        // Day -2: the 618 window has ended; unpaid presales time out.
        // A 72-hour coupon on the 双12 presale (lock): it ends before the
        // final-payment window opens, and the lock policy still honours it.
        self.at(d(2));
        self.jobs().await?;
        self.tick(30);
        c72.insert(39, self.claim(39, &h72).await?);
        self.tick(5);
        let c = need(&c72, 39)?;
        let no = self.presale(39, Some(&c), &future, 39900, 10000).await?;
        self.tick(3);
        self.deposit(&no).await?;

        // Day -1: the 双11 window opens.
        self.at(d(1) - h(2));
        let c = need(&c300, 40)?;
        let no = self.presale(40, Some(&c), &future, 59900, 20000).await?;
        self.tick(2);
        self.deposit(&no).await?;
        self.at(d(1) - h(4));
        if let Some(no) = p_open.get(2) {
            self.cancel(no, "客户申请取消预售").await?;
        }
        self.tick(60);
        self.final_payment(&placed(&p_swap, "of u10033")?, "swapped")
            .await?;
        self.tick(40);
        self.final_payment(&placed(&p_comp, "of u10034")?, "compensated")
            .await?;
        self.jobs().await?;

        // Day 0.
        self.at(h(6));
        if let Some(no) = p_open.first() {
            self.final_payment(no, "applied").await?;
        }
        // A paid order, re-pointed at another coupon later (anomaly).
        self.at(h(5));
        for n in 1..=6 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c199, 4)?;
        let mismatch_order = self.normal(4, Some(&c), 26900, "apparel").await?;
        self.tick(3);
        self.pay(&mismatch_order).await?;
        let other = need(&c90, 4)?;
        // A cart of two beauty lines and a snack with the 美妆 coupon, paid;
        // one lipstick of two comes back (the coupon stays for the rest).
        // Its remaining beauty items are marked refunded later by hand
        // (anomaly): the coupon stays used after every item it discounted.
        self.at(h(4));
        let c = need(&cbeauty, 15)?;
        let cart_order = self
            .normal_lines(
                15,
                Some(&c),
                &[
                    ("1", "LIP-01", "beauty", 2, 12900),
                    ("2", "EYE-07", "beauty", 1, 9900),
                    ("3", "TEA-12", "snacks", 1, 2990),
                ],
            )
            .await?;
        self.tick(2);
        self.pay(&cart_order).await?;
        self.tick(30);
        self.refund_line(&cart_order, "RT-1501", "1", 1, "口红色号不合适，退一支")
            .await?;
        // A deposit whose coupon is freed later (anomaly).
        self.at(h(3));
        for n in 7..=12 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c199, 3)?;
        let free_order = self.presale(3, Some(&c), &future, 39900, 10000).await?;
        self.tick(2);
        self.deposit(&free_order).await?;
        self.tick(10);
        let c = need(&c199, 1)?;
        self.presale(1, Some(&c), &future, 29900, 5000).await?;
        self.at(h(2));
        for n in 13..=18 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c300, 37)?;
        self.presale(37, Some(&c), &open, 39900, 10000).await?;
        self.at(h(1));
        for n in 19..=24 {
            self.claim(n, &h60).await?;
        }
        self.normal(7, None, 6900, "books").await?;
        // The main support case: a 双12 deposit, its order closed later
        // while the coupon stays locked (anomaly).
        self.at(m(40));
        for n in 25..=30 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c199, 2)?;
        let closed_order = self.presale(2, Some(&c), &future, 39900, 10000).await?;
        self.tick(2);
        self.deposit(&closed_order).await?;
        self.at(m(4));
        let c = need(&c199, 6)?;
        self.normal(6, Some(&c), 25900, "apparel").await?;
        self.at(m(2));
        let c = need(&c199, 5)?;
        let stale_order = self.normal(5, Some(&c), 20900, "books").await?;
        // Support voided a coupon of an account caught reselling coupons.
        for n in (25..=33).rev() {
            let Some(c) = c300.get(&n) else { continue };
            let view = self
                .svc
                .get_coupon(&c.id)
                .await
                .map_err(step(format!("read {}", c.id)))?;
            if view.status == CouponStatus::Available {
                self.svc
                    .invalidate_coupon(
                        &self.ctx,
                        &Authority::Api,
                        None,
                        c.id.clone(),
                        Some("账号倒卖优惠券，作废 · the account resold coupons".into()),
                    )
                    .await
                    .map_err(step(format!("invalidate {}", c.id)))?;
                break;
            }
        }
        self.at(Duration::zero());
        self.jobs().await?;

        Ok(ToPlant {
            closed_with_locked_coupon: closed_order,
            active_with_free_coupon: (free_order, need(&c199, 3)?.id),
            mismatch: (mismatch_order, other.id),
            stale_checkout: stale_order,
            refunds_left_used: cart_order,
        })
    }
}
