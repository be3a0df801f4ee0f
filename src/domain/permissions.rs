//! Who may do what: one table from each permission to the least role that
//! holds it ([`Permission::least_role`]), read by [`may`]. Roles nest
//! (`support` < `operator` < `admin`), so a role holds every permission of
//! the roles below it. Every check in the service and every button a page
//! shows or hides asks this table; the service's checks are the ones that
//! count, the pages only avoid offering what would be refused.
//!
//! Support staff search, view, run health checks, release locks whose
//! order is dead and issue compensation within the caps: signing in is
//! all that takes, so none of it is listed here.

use super::staff::Role;

/// Something only some staff roles may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Release a lock whose order is still live: it undoes a customer's
    /// discount.
    ForceRelease,
    /// Void a customer's coupon for good.
    InvalidateCoupon,
    /// Cancel a customer's order that can still be paid (one whose
    /// checkout lock lapsed may be closed by anyone: see
    /// [`may_cancel_order`]).
    CancelOrder,
    /// Issue compensation above the support caps.
    UncappedCompensation,
    /// Create, edit, pause and resume templates; generate codes; bulk
    /// issue and void.
    ManageTemplates,
    /// Create campaigns, change their policy and compensation mode.
    RunCampaigns,
    /// Name the shop's category codes.
    NameCategories,
    /// Edit the compensation rules and read the compensation ledger.
    ManageCompensation,
    /// Read and edit the wake-up rules and their results.
    ManageWakeups,
    /// Manage webhook subscribers, read raw deliveries and redeliver.
    ManageWebhooks,
    /// Read the reminder plan and its recent activity.
    ReadReminderPlan,
    /// Read template and campaign reports.
    ReadReports,
    /// Repair anomalies from the reconciliation page.
    RepairAnomalies,
    /// Read every staff member's actions and sign-ins (the audit log);
    /// others see their own.
    ReadAuditLog,
    /// Add staff, change roles, reset passwords, disable accounts.
    ManageStaff,
}

impl Permission {
    pub const ALL: [Permission; 15] = [
        Permission::ForceRelease,
        Permission::InvalidateCoupon,
        Permission::CancelOrder,
        Permission::UncappedCompensation,
        Permission::ManageTemplates,
        Permission::RunCampaigns,
        Permission::NameCategories,
        Permission::ManageCompensation,
        Permission::ManageWakeups,
        Permission::ManageWebhooks,
        Permission::ReadReminderPlan,
        Permission::ReadReports,
        Permission::RepairAnomalies,
        Permission::ReadAuditLog,
        Permission::ManageStaff,
    ];

    /// The table: the least role that holds this permission.
    pub const fn least_role(self) -> Role {
        match self {
            Permission::ForceRelease
            | Permission::InvalidateCoupon
            | Permission::CancelOrder
            | Permission::UncappedCompensation
            | Permission::ManageTemplates
            | Permission::RunCampaigns
            | Permission::NameCategories
            | Permission::ManageCompensation
            | Permission::ManageWakeups
            | Permission::ManageWebhooks
            | Permission::ReadReminderPlan
            | Permission::ReadReports
            | Permission::RepairAnomalies
            | Permission::ReadAuditLog => Role::Operator,
            Permission::ManageStaff => Role::Admin,
        }
    }
}

/// Whether `role` holds `permission`.
pub fn may(role: Role, permission: Permission) -> bool {
    role.includes(permission.least_role())
}

/// Cancelling a customer's order is an operator's decision, except a
/// normal order whose checkout lock lapsed: it can no longer be paid, and
/// closing it is what the sweep job does next anyway.
pub fn may_cancel_order(role: Role, checkout_lapsed: bool) -> bool {
    checkout_lapsed || may(role, Permission::CancelOrder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_holds_no_listed_permission_operators_all_but_staff_management_and_admins_all() {
        for p in Permission::ALL {
            assert!(!may(Role::Support, p), "{p:?}");
            assert_eq!(
                may(Role::Operator, p),
                p != Permission::ManageStaff,
                "{p:?}"
            );
            assert!(may(Role::Admin, p), "{p:?}");
        }
    }

    #[test]
    fn support_is_capped_and_may_not_force_a_release_operators_may_and_only_admins_manage_staff() {
        assert!(!may(Role::Support, Permission::ForceRelease));
        assert!(may(Role::Operator, Permission::ForceRelease));
        assert!(!may(Role::Support, Permission::UncappedCompensation));
        assert!(may(Role::Operator, Permission::UncappedCompensation));
        assert!(
            may(Role::Admin, Permission::ManageStaff)
                && !may(Role::Operator, Permission::ManageStaff)
        );
        assert!(!may_cancel_order(Role::Support, false) && may_cancel_order(Role::Support, true));
        assert!(may_cancel_order(Role::Operator, false));
    }

    #[test]
    fn anyone_may_close_an_order_whose_checkout_lapsed_only_operators_a_live_one() {
        assert!(may_cancel_order(Role::Support, true));
        assert!(!may_cancel_order(Role::Support, false));
        assert!(may_cancel_order(Role::Operator, false));
        assert!(may_cancel_order(Role::Admin, false));
    }
}
