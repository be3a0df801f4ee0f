//! Orders: create (normal orders checkout-lock their coupon), pay, presale
//! deposit and final payment by campaign policy, cancel and refund. Each
//! operation is one transaction that changes the order row first and the
//! coupon rows second (a fixed lock order, so two operations can never
//! deadlock on each other), each change a conditional update.
//!
//! One file per stage of an order:
//! - [`create`]: a new order (a normal order checkout-locks its coupon);
//! - [`pay`]: the payment of a normal order;
//! - [`deposit`]: a presale order's deposit (its coupon locked);
//! - [`final_payment`]: the quote and the final payment (尾款) by campaign
//!   policy;
//! - [`end`]: cancel and refund, with the coupon released or returned;
//! - [`view`]: the order as the API shows it;
//! - [`list`]: the order list for support (filters, keyset pages, CSV).
//!
//! [`cart`] reads and writes an order's lines and each coupon's share of
//! them; [`refunds`] refunds by line.
//!
//! [`steps`] holds what every stage uses: loading rows, the kind and
//! status checks, the coupon checks and the conditional transitions;
//! [`coupons`] an order's several coupons, moved together; [`plan`] the
//! final-payment plan (the quote, the final payment and the view read
//! it).

mod cart;
mod coupons;
mod create;
mod deposit;
mod end;
mod final_payment;
mod list;
mod pay;
mod plan;
mod refunds;
mod steps;
mod view;

pub(crate) use cart::{load_cart, load_carts};
pub(crate) use end::end_order;
pub use list::{
    DEFAULT_ORDER_PAGE, MAX_ORDER_EXPORT_ROWS, MAX_ORDER_PAGE, OrderFilter, OrderListParams,
    OrderPage,
};
pub(crate) use plan::plan_for;
pub(crate) use steps::release_bound_coupon;
pub(crate) use steps::{kind_of, on_order, status_of, unfit_refusal};
pub(crate) use view::{order_view, order_view_of};
