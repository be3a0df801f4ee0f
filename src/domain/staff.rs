//! Console staff: who may do what. Roles nest: an `operator` may do
//! everything `support` may, an `admin` everything an `operator` may.

use super::FieldError;

/// Shortest password accepted for a staff account.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest password accepted: argon2 of a megabyte is a denial of service.
pub const MAX_PASSWORD_CHARS: usize = 256;

/// A staff member's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Search, view, health checks, release stuck locks, capped compensation.
    Support,
    /// Support, plus templates, campaigns, compensation settings, forced
    /// releases and uncapped compensation.
    Operator,
    /// Operator, plus staff management.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Support, Role::Operator, Role::Admin];

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        match raw {
            "support" => Ok(Role::Support),
            "operator" => Ok(Role::Operator),
            "admin" => Ok(Role::Admin),
            _ => Err(FieldError::new(
                "role",
                "must be one of support, operator, admin",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Support => "support",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// Whether this role includes everything `other` may do.
    pub fn includes(self, other: Role) -> bool {
        self >= other
    }

    /// Releasing a lock whose order is still live undoes a customer's
    /// discount: only operators decide that.
    pub fn may_force_release(self) -> bool {
        self.includes(Role::Operator)
    }

    /// Support staff hand out compensation within the configured caps;
    /// operators and admins are not capped.
    pub fn compensation_capped(self) -> bool {
        self == Role::Support
    }

    /// Cancelling a customer's order is an operator's decision, except a
    /// normal order whose checkout lock lapsed: it can no longer be paid,
    /// and closing it is what the sweep job does next anyway.
    pub fn may_cancel_order(self, checkout_lapsed: bool) -> bool {
        self.includes(Role::Operator) || checkout_lapsed
    }

    pub fn may_manage_staff(self) -> bool {
        self == Role::Admin
    }

    /// The audit log shows every staff member's actions and sign-ins with
    /// their addresses: for operators and admins, who answer for the team,
    /// not for every support seat.
    pub fn may_read_audit_log(self) -> bool {
        self.includes(Role::Operator)
    }
}

/// A staff member's sign-in name: 1-64 of `a-z 0-9 . _ -`, lower case so
/// `Alice` and `alice` cannot be two accounts. Appears in event actors as
/// `staff:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StaffName(String);

impl StaffName {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let name = raw.trim().to_ascii_lowercase();
        if name.is_empty() || name.len() > 64 {
            return Err(FieldError::new("name", "must be 1 to 64 characters"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
        {
            return Err(FieldError::new(
                "name",
                "may contain only letters, digits, '.', '_' and '-'",
            ));
        }
        Ok(StaffName(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The actor string for event rows.
    pub fn actor(&self) -> String {
        format!("staff:{}", self.0)
    }
}

impl std::fmt::Display for StaffName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A password that meets the length rule. Never printed.
pub struct Password(String);

impl Password {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let n = raw.chars().count();
        if n < MIN_PASSWORD_CHARS {
            return Err(FieldError::new(
                "password",
                format!("must be at least {MIN_PASSWORD_CHARS} characters"),
            ));
        }
        if n > MAX_PASSWORD_CHARS {
            return Err(FieldError::new(
                "password",
                format!("must be at most {MAX_PASSWORD_CHARS} characters"),
            ));
        }
        Ok(Password(raw.to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_nest_from_support_to_admin() {
        assert!(Role::Admin.includes(Role::Operator));
        assert!(Role::Operator.includes(Role::Support));
        assert!(!Role::Support.includes(Role::Operator));
        assert!(!Role::Support.may_force_release());
        assert!(Role::Operator.may_force_release());
        assert!(Role::Support.compensation_capped());
        assert!(!Role::Operator.compensation_capped());
        assert!(Role::Admin.may_manage_staff() && !Role::Operator.may_manage_staff());
        assert!(!Role::Support.may_cancel_order(false) && Role::Support.may_cancel_order(true));
        assert!(Role::Operator.may_cancel_order(false));
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Ok(r));
        }
        assert!(Role::parse("root").is_err());
    }

    #[test]
    fn staff_names_are_lower_cased_and_restricted() {
        assert_eq!(
            StaffName::parse(" Alice ").map(|n| n.actor()),
            Ok("staff:alice".into())
        );
        assert!(StaffName::parse("").is_err());
        assert!(StaffName::parse("a b").is_err());
        assert!(StaffName::parse("王五").is_err());
        assert!(StaffName::parse(&"a".repeat(65)).is_err());
    }

    #[test]
    fn passwords_need_twelve_characters_counted_as_characters() {
        assert!(Password::parse("short").is_err());
        assert!(Password::parse("twelve chars").is_ok());
        assert!(Password::parse("密码密码密码密码密码密码").is_ok());
        assert!(Password::parse(&"x".repeat(257)).is_err());
        assert_eq!(
            format!("{:?}", Password::parse("twelve chars")),
            "Ok(Password(***))"
        );
    }
}
