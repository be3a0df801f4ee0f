//! Stored words read as domain types. A row's status, kind, lock status or
//! policy is parsed once, where sqlx decodes the column: a value the
//! database holds that no domain type names is a decode error of that
//! column (`sqlx::Error::ColumnDecode`), never a string passed on.
//!
//! Writing stays explicit: queries bind `as_str()`, the same words.
//!
//! Ids are read and bound as their newtypes (`CouponId`, `OrderNo`, …):
//! the column is text, the Rust type says which table's key it is. The
//! domain stays free of sqlx, so the impls live here rather than as
//! `#[derive(sqlx::Type)] #[sqlx(transparent)]` on the types; they do what
//! that derive would.

use sqlx::any::{Any, AnyTypeInfo, AnyValueRef};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Type};

use crate::domain::campaign::{CompensationMode, Policy};
use crate::domain::coupon::{CouponSource, CouponStatus};
use crate::domain::discount::DiscountKind;
use crate::domain::ids::{
    CampaignId, CodeBatchId, CouponId, JobId, LineId, OrderNo, RefundId, ReminderSlotId, ShopId,
    Sku, SubscriberId, TemplateId, UserId, WakeupRuleId,
};
use crate::domain::money::{Cents, CentsDelta};
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use crate::domain::reconcile::{AnomalyKind, Fix};
use crate::domain::redeem_code::BatchStatus;
use crate::domain::refund::CouponRefundOutcome;
use crate::domain::template::TemplateStatus;

macro_rules! stored_word {
    ($ty:ty, $what:literal) => {
        impl Type<Any> for $ty {
            fn type_info() -> AnyTypeInfo {
                <String as Type<Any>>::type_info()
            }

            fn compatible(ty: &AnyTypeInfo) -> bool {
                <String as Type<Any>>::compatible(ty)
            }
        }

        impl<'r> Decode<'r, Any> for $ty {
            fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
                let raw = <String as Decode<'r, Any>>::decode(value)?;
                <$ty>::parse(&raw)
                    .ok_or_else(|| format!(concat!("unknown ", $what, " {:?}"), raw).into())
            }
        }
    };
}

stored_word!(CouponStatus, "coupon status");
stored_word!(OrderStatus, "order status");
stored_word!(OrderKind, "order kind");
stored_word!(CouponLockStatus, "coupon lock status");
stored_word!(Policy, "campaign policy");
stored_word!(CompensationMode, "compensation mode");
stored_word!(AnomalyKind, "anomaly kind");
stored_word!(Fix, "reconciliation fix");
stored_word!(DiscountKind, "discount kind");
stored_word!(CouponSource, "coupon source");
stored_word!(TemplateStatus, "template status");
stored_word!(BatchStatus, "code batch status");
stored_word!(CouponRefundOutcome, "refund outcome of a coupon");

/// An id newtype stored as text: decoded without a check (our own database
/// only holds ids we wrote), bound as its text. `$make` builds the type from
/// the stored `String`.
macro_rules! stored_id {
    ($ty:ty, $make:path) => {
        impl Type<Any> for $ty {
            fn type_info() -> AnyTypeInfo {
                <String as Type<Any>>::type_info()
            }

            fn compatible(ty: &AnyTypeInfo) -> bool {
                <String as Type<Any>>::compatible(ty)
            }
        }

        impl<'r> Decode<'r, Any> for $ty {
            fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
                <String as Decode<'r, Any>>::decode(value).map($make)
            }
        }

        impl<'q> Encode<'q, Any> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut <Any as Database>::ArgumentBuffer<'q>,
            ) -> Result<IsNull, BoxDynError> {
                <String as Encode<'q, Any>>::encode(self.as_str().to_owned(), buf)
            }
        }
    };
}

stored_id!(CouponId, CouponId::from_wire);
stored_id!(TemplateId, TemplateId::from_wire);
stored_id!(CampaignId, CampaignId::from_wire);
stored_id!(CodeBatchId, CodeBatchId::from_wire);
stored_id!(JobId, JobId::from_wire);
stored_id!(WakeupRuleId, WakeupRuleId::from_wire);
stored_id!(SubscriberId, SubscriberId::from_wire);
stored_id!(ReminderSlotId, ReminderSlotId::from_wire);
stored_id!(UserId, UserId::from_stored);
stored_id!(OrderNo, OrderNo::from_stored);
stored_id!(LineId, LineId::from_stored);
stored_id!(Sku, Sku::from_stored);
stored_id!(ShopId, ShopId::from_stored);
stored_id!(RefundId, RefundId::from_stored);

/// Money stored as an integer count of cents: `Cents` decodes through
/// `Cents::from_stored` (clamped, so a hand-edited row never crashes a
/// read), `CentsDelta` as it is; both bind as the integer.
macro_rules! stored_cents {
    ($ty:ty) => {
        impl Type<Any> for $ty {
            fn type_info() -> AnyTypeInfo {
                <i64 as Type<Any>>::type_info()
            }

            fn compatible(ty: &AnyTypeInfo) -> bool {
                <i64 as Type<Any>>::compatible(ty)
            }
        }

        impl<'r> Decode<'r, Any> for $ty {
            fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
                <i64 as Decode<'r, Any>>::decode(value).map(<$ty>::from_stored)
            }
        }

        impl<'q> Encode<'q, Any> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut <Any as Database>::ArgumentBuffer<'q>,
            ) -> Result<IsNull, BoxDynError> {
                <i64 as Encode<'q, Any>>::encode(self.get(), buf)
            }
        }
    };
}

stored_cents!(Cents);
stored_cents!(CentsDelta);

#[cfg(test)]
mod tests {
    use sqlx::{AnyConnection, Connection};

    use super::*;

    async fn memory() -> AnyConnection {
        sqlx::any::install_default_drivers();
        AnyConnection::connect("sqlite::memory:")
            .await
            .expect("in-memory sqlite")
    }

    #[tokio::test]
    async fn a_stored_word_reads_as_its_domain_type() {
        let mut c = memory().await;
        let row: (
            OrderStatus,
            OrderKind,
            CouponLockStatus,
            CouponStatus,
            Policy,
        ) = sqlx::query_as(
            "SELECT 'deposit_paid', 'presale', 'locked', 'expired', 'swap_or_compensate'",
        )
        .fetch_one(&mut c)
        .await
        .expect("decodes");
        assert_eq!(
            row,
            (
                OrderStatus::DepositPaid,
                OrderKind::Presale,
                CouponLockStatus::Locked,
                CouponStatus::Expired,
                Policy::SwapOrCompensate,
            )
        );
    }

    #[tokio::test]
    async fn an_unknown_stored_word_is_a_decode_error_of_its_column() {
        let mut c = memory().await;
        let read: Result<(OrderStatus,), sqlx::Error> =
            sqlx::query_as("SELECT 'shipped'").fetch_one(&mut c).await;
        match read {
            Err(sqlx::Error::ColumnDecode { source, .. }) => {
                assert!(source.to_string().contains("\"shipped\""), "{source}");
            }
            other => panic!("expected a column decode error, got {other:?}"),
        }
    }
}
