//! The pieces console and self-check pages are built from, as leptos
//! `#[component]`s, one kind of piece a file. Each reads the page's
//! language (and, where it offers an action, who is signed in) from
//! [`super::context`], so a page hands a component its data and nothing
//! else.

mod badges;
mod confirm;
mod coupon_table;
mod frame;
mod health_report;
mod ids;
mod money;
mod pager;
mod staff_log;
mod time;
mod timeline;

pub use badges::{CouponBadge, OrderBadge, ResultBadge};
pub use confirm::ConfirmForm;
pub use coupon_table::CouponTable;
pub use frame::{ConsoleFrame, SignInPage, login_page, render};
pub use health_report::HealthReport;
pub use ids::IdsDetails;
pub use money::{Money, MoneyRow};
pub use pager::Pager;
pub use staff_log::{StaffLog, StaffLogRow};
pub use time::{OptTime, Time};
pub use timeline::Timeline;
