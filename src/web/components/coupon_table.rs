//! A table of coupons, each linking to its page, its user and its order.

use leptos::prelude::*;

use crate::service::views::CouponView;
use crate::web::context::lang;
use crate::web::layout::coupon_terms_text;
use crate::web::paths;

use super::{CouponBadge, Time};

/// Code, status, user, discount, end and order of each coupon; a note
/// when there are none.
#[component]
pub fn CouponTable(coupons: Vec<CouponView>) -> impl IntoView {
    let l = lang();
    if coupons.is_empty() {
        return view! { <p class="note">{l.t("no-coupons-match")}</p> }.into_any();
    }
    let rows = coupons
        .into_iter()
        .map(|c| {
            let href = paths::coupon(&c.id);
            let user_href = paths::user(&c.user_id);
            let terms = coupon_terms_text(l, &c);
            let order = c.order_no.clone().map(|no| {
                let h = paths::order(&no);
                view! { <a href=h>{no}</a> }
            });
            view! {
                <tr>
                    <td class="mono"><a href=href>{c.code.clone()}</a></td>
                    <td><CouponBadge status=c.status/></td>
                    <td><a href=user_href>{c.user_id.clone()}</a></td>
                    <td>{terms}</td>
                    <td class="nowrap"><Time at=c.ends_at.clone()/></td>
                    <td>{order}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table data-testid="coupon-table">
                <thead><tr>
                    <th scope="col">{l.t("code")}</th>
                    <th scope="col">{l.t("status")}</th>
                    <th scope="col">{l.t("user")}</th>
                    <th scope="col">{l.t("discount")}</th>
                    <th scope="col">{l.t("ends-2")}</th>
                    <th scope="col">{l.t("order")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}
