//! "Try a cart" (试算购物车) on the console's user page: support types a
//! cart (kind, total, category, campaign, deposit) and reads the checkout
//! picker's answer in words — which of this user's coupons fit, for how
//! much, the best one, and why the others do not — so "why can't I use
//! this coupon" is answered before the order exists.
//!
//! A read: the form is a GET on the user page (`?cart=1&…#try-cart`), so
//! the answer has an address and the back button works. A field that does
//! not parse comes back with what was typed and its message beside it.

use leptos::prelude::*;
use serde::Deserialize;

use super::auth::WebError;
use super::components::Time;
use super::context::lang;
use super::i18n::Lang;
use super::layout::{FieldErrors, coupon_terms_text, field_error};
use super::order_cart::{CouponCodes, OrderLines};
use super::paths;
use crate::domain::cart::{CartInput, CartSpec};
use crate::domain::ids::ShopId;
use crate::domain::ids::UserId;
use crate::domain::line::LineInput;
use crate::domain::money::Cents;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::checkout::{BestCombination, CouponOptions};
use crate::service::views::CampaignView;
use crate::service::views::OrderLineView;

/// Campaigns the form offers.
const FORM_CAMPAIGNS: i64 = 100;

/// The form's fields as typed (all text, so a bad one can be shown again).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CartQuery {
    /// Present when the form was sent.
    pub cart: Option<String>,
    pub kind: Option<String>,
    pub total: Option<String>,
    pub category: Option<String>,
    pub campaign: Option<String>,
    pub deposit: Option<String>,
    /// Order lines, one a row: `shop category quantity unit-price`.
    pub lines: Option<String>,
}

impl CartQuery {
    fn presale(&self) -> bool {
        self.kind.as_deref() == Some("presale")
    }

    fn text(v: &Option<String>) -> String {
        v.clone().unwrap_or_default()
    }

    /// The lines as typed, without blank rows.
    fn typed_lines(&self) -> Vec<&str> {
        self.lines
            .as_deref()
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .collect()
    }
}

/// Most lines the form takes (the contract's 500).
const FORM_LINES: usize = 500;

/// One typed row, `shop category quantity unit-price` (`-` for no
/// shop), as the picker's line numbered `row`; `None` when it does not
/// read so.
fn parse_line(row: usize, text: &str) -> Option<LineInput> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [shop, category, quantity, price] = fields.as_slice() else {
        return None;
    };
    let quantity: i64 = quantity.parse().ok().filter(|q| (1..=9_999).contains(q))?;
    let unit_price = Cents::parse_yuan(price)?;
    Some(LineInput {
        line_id: Some(row.to_string()),
        sku: None,
        category: Some((*category).to_string()),
        shop_id: (*shop != "-").then(|| (*shop).to_string()),
        quantity: Some(quantity),
        unit_price_cents: Some(unit_price),
    })
}

/// What the section shows under the form.
enum Answer {
    /// The form was not sent.
    Nothing,
    /// A field is wrong; the messages are at the fields.
    Refused(FieldErrors),
    /// The picker's answer, with the lines as asked (none for a total).
    Options(CouponOptions, Vec<LineInput>),
}

/// Reads the form into the picker's cart, or the messages at its fields:
/// a total and a category, or lines (not both).
fn parse(l: Lang, q: &CartQuery) -> Result<CartInput, FieldErrors> {
    let mut errors = FieldErrors::default();
    let typed = q.typed_lines();
    let mut lines = None;
    let mut total = None;
    let mut category = None;
    if typed.is_empty() {
        total = q
            .total
            .as_deref()
            .and_then(Cents::parse_yuan)
            .filter(|c| *c > 0);
        if total.is_none() {
            errors.add("total", l.t("try-cart-error-total").to_string());
        }
        let typed_category = q.category.clone().unwrap_or_default().trim().to_string();
        if typed_category.len() > 64 {
            errors.add("category", l.t("try-cart-error-category").to_string());
        }
        category = Some(typed_category);
    } else if [&q.total, &q.category]
        .iter()
        .any(|v| v.as_deref().is_some_and(|t| !t.trim().is_empty()))
    {
        errors.add("lines", l.t("try-cart-error-lines-and-total").to_string());
    } else if typed.len() > FORM_LINES {
        errors.add("lines", l.t("try-cart-error-lines-too-many").to_string());
    } else {
        let parsed: Vec<Option<LineInput>> = typed
            .iter()
            .enumerate()
            .map(|(i, t)| parse_line(i + 1, t))
            .collect();
        match parsed.iter().position(Option::is_none) {
            Some(bad) => errors.add(
                "lines",
                crate::tr!(l, "try-cart-error-line", row = bad + 1).to_string(),
            ),
            None => lines = Some(parsed.into_iter().flatten().collect()),
        }
    }
    let (kind, campaign_id, deposit_cents) = if q.presale() {
        let campaign = q.campaign.clone().filter(|c| !c.is_empty());
        if campaign.is_none() {
            errors.add("campaign", l.t("try-cart-error-campaign").to_string());
        }
        let deposit = q.deposit.as_deref().and_then(Cents::parse_yuan);
        // With lines the total is theirs: the picker checks the deposit
        // against it.
        let fits = match (deposit, total) {
            (Some(d), Some(t)) => d > 0 && d <= t,
            (Some(d), None) => d > 0,
            _ => false,
        };
        if !fits {
            errors.add("deposit", l.t("try-cart-error-deposit").to_string());
        }
        ("presale", campaign, deposit)
    } else {
        ("normal", None, None)
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(CartInput {
        kind: Some(kind.into()),
        category,
        total_cents: total,
        lines,
        campaign_id,
        deposit_cents,
    })
}

/// What the section shows: the form's campaigns, the form as typed, and
/// the picker's answer when the form was sent. Rendered by [`TryCart`].
pub struct TryCartData {
    /// The user id as the user page's address gave it.
    user_id: String,
    query: CartQuery,
    campaigns: Vec<CampaignView>,
    answer: Answer,
}

/// The section's data for the user page: the open campaigns and, when the
/// form was sent, the picker's answer. A service failure other than a
/// refusal of the cart is the page's error.
pub async fn section(
    s: &AppState,
    l: Lang,
    user_id: &str,
    q: &CartQuery,
) -> Result<TryCartData, WebError> {
    let campaigns = s
        .service
        .open_campaigns(FORM_CAMPAIGNS)
        .await
        .map_err(|e| WebError::from_service(l, e))?;
    let answer = if q.cart.is_none() {
        Answer::Nothing
    } else {
        match parse(l, q) {
            Err(errors) => Answer::Refused(errors),
            Ok(cart) => {
                let asked = cart.lines.clone().unwrap_or_default();
                let user = UserId::parse(user_id)
                    .map_err(|e| WebError::from_service(l, ServiceError::Invalid(e)))?;
                let options = match CartSpec::parse(cart) {
                    Ok(cart) => s.service.coupon_options(user, cart).await,
                    Err(e) => Err(e.into()),
                };
                match options {
                    Ok(o) => Answer::Options(o, asked),
                    // The campaign is gone or its window has closed: the
                    // campaign field is at fault.
                    Err(ServiceError::NotFound { .. }) => {
                        let mut e = FieldErrors::default();
                        e.add("campaign", l.t("try-cart-error-campaign").to_string());
                        Answer::Refused(e)
                    }
                    Err(ServiceError::Refused { refusal, .. }) => {
                        let mut e = FieldErrors::default();
                        e.add("campaign", l.t(refusal.message_key()).to_string());
                        Answer::Refused(e)
                    }
                    Err(ServiceError::Invalid(f)) => {
                        let mut e = FieldErrors::default();
                        let (field, key) = match f.field {
                            "deposit_cents" => ("deposit", "try-cart-error-deposit"),
                            "category" => ("category", "try-cart-error-category"),
                            "campaign_id" => ("campaign", "try-cart-error-campaign"),
                            "lines" => ("lines", "try-cart-error-lines"),
                            _ => ("total", "try-cart-error-total"),
                        };
                        e.add(field, l.t(key).to_string());
                        Answer::Refused(e)
                    }
                    Err(other) => return Err(WebError::from_service(l, other)),
                }
            }
        }
    };
    Ok(TryCartData {
        user_id: user_id.to_string(),
        query: q.clone(),
        campaigns,
        answer,
    })
}

/// The "try a cart" section of the user page: the form with what was
/// typed (each refused field with its message), then the picker's answer
/// when the form was sent.
#[component]
pub fn TryCart(data: TryCartData) -> impl IntoView {
    let l = lang();
    let TryCartData {
        user_id,
        query: q,
        campaigns,
        answer,
    } = data;
    let errors = match &answer {
        Answer::Refused(e) => e.clone(),
        _ => FieldErrors::default(),
    };
    let action = paths::unparsed::user_try_cart(&user_id);
    let total = errors.input_attrs("total", "cart-total");
    let category = errors.input_attrs("category", "cart-category");
    let campaign = errors.input_attrs("campaign", "cart-campaign");
    let deposit = errors.input_attrs("deposit", "cart-deposit");
    let lines = errors.input_attrs("lines", "cart-lines");
    let lines_described = match &lines.described_by {
        Some(e) => format!("cart-lines-hint {e}"),
        None => "cart-lines-hint".to_string(),
    };
    let presale = q.presale();
    let chosen = CartQuery::text(&q.campaign);
    let options = campaigns
        .into_iter()
        .map(|c| {
            let selected = c.id == chosen;
            view! { <option value=c.id selected=selected>{c.name}</option> }
        })
        .collect_view();
    let result = match answer {
        Answer::Options(o, asked) => Some(view! { <CartAnswer options=o asked=asked/> }),
        _ => None,
    };
    view! {
        <section aria-labelledby="try-cart" data-testid="try-cart">
            <h2 id="try-cart">{l.t("try-cart-heading")}</h2>
            <p class="note">{l.t("try-cart-intro")}</p>
            <form method="get" action=action class="stack try-cart">
                <input type="hidden" name="cart" value="1"/>
                <div class="row">
                    <label for="cart-kind">{l.t("try-cart-kind")}</label>
                    <select id="cart-kind" name="kind">
                        <option value="normal" selected=!presale>{l.t("normal")}</option>
                        <option value="presale" selected=presale>{l.t("presale")}</option>
                    </select>
                </div>
                <div class="row">
                    <label for="cart-total">{l.t("try-cart-total")}</label>
                    <input type="text" id="cart-total" name="total" inputmode="decimal" autocomplete="off"
                        value=CartQuery::text(&q.total)
                        aria-invalid=total.invalid aria-describedby=total.described_by.clone()/>
                    {field_error(&total)}
                </div>
                <div class="row">
                    <label for="cart-category">{l.t("try-cart-category")}</label>
                    <input type="text" id="cart-category" name="category" autocomplete="off"
                        value=CartQuery::text(&q.category)
                        aria-invalid=category.invalid aria-describedby=category.described_by.clone()/>
                    {field_error(&category)}
                </div>
                <div class="row">
                    <label for="cart-lines">{l.t("try-cart-lines")}</label>
                    <textarea id="cart-lines" name="lines" rows="4" autocomplete="off" spellcheck="false"
                        aria-invalid=lines.invalid
                        aria-describedby=lines_described>
                        {CartQuery::text(&q.lines)}
                    </textarea>
                    <p class="note" id="cart-lines-hint">{l.t("try-cart-lines-hint")}</p>
                    {field_error(&lines)}
                </div>
                <div class="row">
                    <label for="cart-campaign">{l.t("try-cart-campaign")}</label>
                    <select id="cart-campaign" name="campaign"
                        aria-invalid=campaign.invalid aria-describedby=campaign.described_by.clone()>
                        <option value="">{l.t("try-cart-no-campaign")}</option>
                        {options}
                    </select>
                    {field_error(&campaign)}
                </div>
                <div class="row">
                    <label for="cart-deposit">{l.t("try-cart-deposit")}</label>
                    <input type="text" id="cart-deposit" name="deposit" inputmode="decimal" autocomplete="off"
                        value=CartQuery::text(&q.deposit)
                        aria-invalid=deposit.invalid aria-describedby=deposit.described_by.clone()/>
                    {field_error(&deposit)}
                </div>
                <p class="actions">
                    <button type="submit" class="primary" data-testid="try-cart-submit">{l.t("try-cart-submit")}</button>
                </p>
            </form>
            {result}
        </section>
    }
}

/// The picker's answer in words: the best, the best combination for a
/// cart of lines (its coupons by code and each line's shares), the usable
/// coupons (discount, end, caution) and the others with why.
#[component]
fn CartAnswer(options: CouponOptions, asked: Vec<LineInput>) -> impl IntoView {
    let (l, o) = (lang(), options);
    let codes: CouponCodes = o
        .usable
        .iter()
        .map(|u| (u.coupon.id.to_string(), u.coupon.code.clone()))
        .collect();
    let combination = o
        .best_combination
        .clone()
        .map(|b| view! { <Combination best=b asked=asked codes=codes/> });
    let best = o
        .best
        .as_ref()
        .and_then(|id| o.usable.iter().find(|u| &u.coupon.id == id))
        .map(|u| {
            crate::tr!(
                l,
                "try-cart-best",
                code = &u.coupon.code,
                discount = u.discount_cents.shown()
            )
        })
        .unwrap_or_else(|| l.t("try-cart-no-best").to_string());
    let best_id = o.best.clone();
    let n_usable = o.usable.len();
    let n_unusable = o.unusable.len();
    let usable = o
        .usable
        .into_iter()
        .map(|u| {
            let href = paths::coupon(&u.coupon.id);
            let is_best = best_id.as_deref() == Some(u.coupon.id.as_str());
            let terms = coupon_terms_text(l, &u.coupon);
            let note = u.warning.map(|w| l.msg(&w.msg)).unwrap_or_default();
            view! {
                <tr data-testid="cart-usable" data-best=is_best.then_some("true")>
                    <td class="mono"><a href=href>{u.coupon.code.clone()}</a></td>
                    <td>{terms}</td>
                    <td class="money">{u.discount_cents.shown()}</td>
                    <td class="nowrap"><Time at=u.coupon.ends_at.clone()/></td>
                    <td>{note}</td>
                </tr>
            }
        })
        .collect_view();
    let unusable = o
        .unusable
        .into_iter()
        .map(|u| {
            let href = paths::coupon(&u.coupon.id);
            let terms = coupon_terms_text(l, &u.coupon);
            let why = l.msg(&u.msg);
            view! {
                <tr data-testid="cart-unusable" data-reason=u.reason.clone()>
                    <td class="mono"><a href=href>{u.coupon.code.clone()}</a></td>
                    <td>{terms}</td>
                    <td>{why}</td>
                </tr>
            }
        })
        .collect_view();
    let none =
        (n_usable + n_unusable == 0).then(|| view! { <p class="note">{l.t("try-cart-none")}</p> });
    view! {
        <div class="try-cart-answer" data-testid="try-cart-answer">
            <p class="overall" data-testid="try-cart-best"><strong>{best}</strong></p>
            {combination}
            {none}
            {(n_usable > 0).then(|| view! {
                <h3 class="group-heading">{crate::tr!(l, "try-cart-usable", n = n_usable)}</h3>
                <div class="table-wrap"><table>
                    <thead><tr>
                        <th scope="col">{l.t("code")}</th>
                        <th scope="col">{l.t("try-cart-terms")}</th>
                        <th scope="col">{l.t("try-cart-saves")}</th>
                        <th scope="col">{l.t("ends")}</th>
                        <th scope="col">{l.t("try-cart-note")}</th>
                    </tr></thead>
                    <tbody>{usable}</tbody>
                </table></div>
            })}
            {(n_unusable > 0).then(|| view! {
                <h3 class="group-heading">{crate::tr!(l, "try-cart-unusable", n = n_unusable)}</h3>
                <div class="table-wrap"><table>
                    <thead><tr>
                        <th scope="col">{l.t("code")}</th>
                        <th scope="col">{l.t("try-cart-terms")}</th>
                        <th scope="col">{l.t("try-cart-why")}</th>
                    </tr></thead>
                    <tbody>{unusable}</tbody>
                </table></div>
            })}
        </div>
    }
}

/// The best combination for a cart of lines: its coupons by code and what
/// they take off together, then each line with every coupon's share and
/// what is left to pay (the order page's table, without refunds).
#[component]
fn Combination(
    best: Option<BestCombination>,
    asked: Vec<LineInput>,
    codes: CouponCodes,
) -> impl IntoView {
    let l = lang();
    let Some(best) = best else {
        return view! {
            <p class="note" data-testid="try-cart-combination">{l.t("try-cart-no-combination")}</p>
        }
        .into_any();
    };
    let named: Vec<String> = best
        .coupon_ids
        .iter()
        .map(|id| {
            codes
                .get(id.as_str())
                .cloned()
                .unwrap_or_else(|| l.t("coupon").to_string())
        })
        .collect();
    let lines: Vec<OrderLineView> = asked
        .into_iter()
        .zip(best.lines)
        .map(|(a, b)| {
            let quantity = a.quantity.unwrap_or_default();
            let unit_price = Cents::from_stored(a.unit_price_cents.unwrap_or_default());
            OrderLineView {
                line_id: b.line_id,
                sku: None,
                category: a.category.unwrap_or_default(),
                shop_id: a.shop_id.map(ShopId::from_stored),
                quantity,
                unit_price_cents: unit_price,
                amount_cents: Cents::from_stored(unit_price.get().saturating_mul(quantity)),
                discounts: b.discounts,
                payable_cents: b.payable_cents,
                refunded_quantity: 0,
                refunded_cents: Cents::ZERO,
            }
        })
        .collect();
    view! {
        <p class="overall" data-testid="try-cart-combination">
            <strong>{crate::tr!(
                l,
                "try-cart-combination",
                codes = named.join(" + "),
                discount = best.discount_cents.shown()
            )}</strong>
        </p>
        <OrderLines lines=lines codes=codes refunds=false/>
    }
    .into_any()
}
