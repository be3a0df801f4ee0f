//! Console staff: roles, sign-in names and passwords. Roles nest: an
//! `operator` may do everything `support` may, an `admin` everything an
//! `operator` may; what each may do is the table in
//! [`super::permissions`].

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

/// The weakest zxcvbn score a staff password may have: 3 means the
/// estimator needs more than 10^8 guesses (and up to 10^10); 0 to 2 are
/// dictionary words, common passwords, names, dates, repeats and keyboard
/// patterns, however long.
pub const MIN_PASSWORD_SCORE: u8 = 3;
/// Account names shorter than this are not searched for inside passwords
/// (a one-letter name would refuse almost every password).
const MIN_NAME_CHARS_TO_MATCH: usize = 3;

/// Why a password was refused (OWASP ASVS 2.1: length, no account name,
/// not a common or guessable password). The console shows each in the
/// staff member's language beside the password field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordProblem {
    TooShort,
    TooLong,
    /// It contains the account's name (in any case).
    ContainsName,
    /// A common password, or close to one.
    Common,
    /// A dictionary word or a name, by itself.
    Word,
    /// Repeated characters or a repeated chunk (`aaaa`, `abcabc`).
    Repeats,
    /// A sequence (`abcd`, `6543`) or a row of keys (`qwerty`).
    Pattern,
    /// A date or a recent year.
    Date,
    /// A season or month with a year (`Summer2024!!`, `march-2025`): the
    /// first thing guessed after the common passwords, and scored well by
    /// zxcvbn.
    SeasonAndYear,
    /// Easy to guess for other reasons (too few guesses overall).
    Guessable,
}

impl PasswordProblem {
    /// An English sentence, for the CLI and logs; the console uses its own
    /// texts in both languages.
    pub fn message(self) -> String {
        match self {
            PasswordProblem::TooShort => {
                format!("must be at least {MIN_PASSWORD_CHARS} characters")
            }
            PasswordProblem::TooLong => format!("must be at most {MAX_PASSWORD_CHARS} characters"),
            PasswordProblem::ContainsName => "must not contain the account name".to_string(),
            PasswordProblem::Common => "is a common password, or too close to one".to_string(),
            PasswordProblem::Word => "is a word or a name by itself".to_string(),
            PasswordProblem::Repeats => "is mostly repeated characters or chunks".to_string(),
            PasswordProblem::Pattern => "is a sequence or a row of keys".to_string(),
            PasswordProblem::Date => "is mostly a date or a year".to_string(),
            PasswordProblem::SeasonAndYear => "is a season or month with a year".to_string(),
            PasswordProblem::Guessable => "is too easy to guess".to_string(),
        }
    }

    /// What zxcvbn's warning says, in our terms.
    fn from_warning(w: Option<zxcvbn::feedback::Warning>) -> Self {
        use zxcvbn::feedback::Warning as W;
        match w {
            Some(W::ThisIsATop10Password)
            | Some(W::ThisIsATop100Password)
            | Some(W::ThisIsACommonPassword)
            | Some(W::ThisIsSimilarToACommonlyUsedPassword) => PasswordProblem::Common,
            Some(W::AWordByItselfIsEasyToGuess)
            | Some(W::NamesAndSurnamesByThemselvesAreEasyToGuess)
            | Some(W::CommonNamesAndSurnamesAreEasyToGuess) => PasswordProblem::Word,
            Some(W::RepeatsLikeAaaAreEasyToGuess)
            | Some(W::RepeatsLikeAbcAbcAreOnlySlightlyHarderToGuess) => PasswordProblem::Repeats,
            Some(W::SequencesLikeAbcAreEasyToGuess)
            | Some(W::StraightRowsOfKeysAreEasyToGuess)
            | Some(W::ShortKeyboardPatternsAreEasyToGuess) => PasswordProblem::Pattern,
            Some(W::DatesAreOftenEasyToGuess) | Some(W::RecentYearsAreEasyToGuess) => {
                PasswordProblem::Date
            }
            None => PasswordProblem::Guessable,
        }
    }
}

impl From<PasswordProblem> for FieldError {
    fn from(p: PasswordProblem) -> Self {
        FieldError::new("password", p.message())
    }
}

/// A password that passes the rules for one account: 12 to 256
/// characters, not containing the account name, and hard to guess by
/// zxcvbn's estimate (score at least [`MIN_PASSWORD_SCORE`], with the name
/// among the words it tries). Never printed.
pub struct Password(String);

impl Password {
    /// Checks `raw` as the password of the account `name`.
    pub fn parse(raw: &str, name: &StaffName) -> Result<Self, PasswordProblem> {
        let n = raw.chars().count();
        if n < MIN_PASSWORD_CHARS {
            return Err(PasswordProblem::TooShort);
        }
        if n > MAX_PASSWORD_CHARS {
            return Err(PasswordProblem::TooLong);
        }
        let account = name.as_str();
        if account.chars().count() >= MIN_NAME_CHARS_TO_MATCH
            && raw.to_lowercase().contains(account)
        {
            return Err(PasswordProblem::ContainsName);
        }
        if season_and_year(raw) {
            return Err(PasswordProblem::SeasonAndYear);
        }
        let estimate = zxcvbn::zxcvbn(raw, &[account, "couponkeeper"]);
        if u8::from(estimate.score()) < MIN_PASSWORD_SCORE {
            return Err(PasswordProblem::from_warning(
                estimate.feedback().and_then(|f| f.warning()),
            ));
        }
        Ok(Password(raw.to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// Seasons and months (English names and three-letter abbreviations, and
/// the pinyin of the Chinese seasons) that passwords are made of.
const SEASONS_AND_MONTHS: [&str; 38] = [
    "spring",
    "summer",
    "autumn",
    "fall",
    "winter",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "chun",
    "xia",
    "qiu",
    "dong",
    "chuntian",
    "xiatian",
    "qiutian",
    "dongtian",
    "xmas",
];

/// Whether `raw` is a season or month and a year and nothing else but
/// digits and symbols, in any case and order: `Summer2024!!`,
/// `2025-Winter`, `march_2025`, `$pring2024`, `Autumn24`. The letters are
/// read as they are, and again with `@` as a and `$` as s.
fn season_and_year(raw: &str) -> bool {
    let lower = raw.to_lowercase();
    let digits: String = lower.chars().filter(char::is_ascii_digit).collect();
    let has_year = digits.len() == 2
        || (0..digits.len().saturating_sub(3)).any(|i| {
            digits
                .get(i..i + 4)
                .and_then(|y| y.parse::<u32>().ok())
                .is_some_and(|y| (1950..=2099).contains(&y))
        });
    if !has_year {
        return false;
    }
    let plain: String = lower.chars().filter(|c| c.is_alphabetic()).collect();
    let symbols_read: String = lower
        .chars()
        .map(|c| match c {
            '@' => 'a',
            '$' => 's',
            other => other,
        })
        .filter(|c| c.is_alphabetic())
        .collect();
    SEASONS_AND_MONTHS.contains(&plain.as_str())
        || SEASONS_AND_MONTHS.contains(&symbols_read.as_str())
}

#[cfg(test)]
mod season_tests {
    use super::*;

    #[test]
    fn a_season_or_month_with_a_year_is_refused_whatever_the_symbols() {
        let alice = StaffName::parse("alice").expect("name");
        for weak in [
            "Summer2024!!",
            "Summer2024!!!!",
            "2025-Winter!!!",
            "march_2025!!!!",
            "$pring2024!!!!",
            "December1999#!",
            "Autumn24!!!!!!",
        ] {
            assert_eq!(
                Password::parse(weak, &alice).err(),
                Some(PasswordProblem::SeasonAndYear),
                "{weak}"
            );
        }
        // More than a season and a year: the usual rules decide.
        assert!(Password::parse("summer plum rain harbor 2024", &alice).is_ok());
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
        let alice = StaffName::parse("alice").expect("name");
        assert_eq!(
            Password::parse("short", &alice).err(),
            Some(PasswordProblem::TooShort)
        );
        assert!(Password::parse("plum rain harbor", &alice).is_ok());
        assert!(Password::parse("梅雨时节家家雨，青草池塘处处蛙", &alice).is_ok());
        assert_eq!(
            Password::parse(&"x".repeat(257), &alice).err(),
            Some(PasswordProblem::TooLong)
        );
        assert_eq!(
            format!("{:?}", Password::parse("plum rain harbor", &alice)),
            "Ok(Password(***))"
        );
    }

    #[test]
    fn long_but_guessable_passwords_are_refused_with_the_reason() {
        let alice = StaffName::parse("alice").expect("name");
        assert_eq!(
            Password::parse("aaaaaaaaaaaa", &alice).err(),
            Some(PasswordProblem::Repeats)
        );
        assert_eq!(
            Password::parse("password1234", &alice).err(),
            Some(PasswordProblem::Common)
        );
        assert!(Password::parse("qwertyuiop12", &alice).is_err());
        assert!(Password::parse("123456789012", &alice).is_err());
        assert!(Password::parse("密码密码密码密码密码密码", &alice).is_err());
    }

    #[test]
    fn a_password_containing_the_account_name_is_refused_in_any_case() {
        let admin = StaffName::parse("admin").expect("name");
        assert_eq!(
            Password::parse("my-ADMIN-plum-rain-harbor", &admin).err(),
            Some(PasswordProblem::ContainsName)
        );
        assert!(
            Password::parse(
                "my-ADMIN-plum-rain-harbor",
                &StaffName::parse("xiaoli").expect("name")
            )
            .is_ok()
        );
        // Too short a name to search for: "li" is in many words.
        assert!(
            Password::parse(
                "plum rain harbor lily",
                &StaffName::parse("li").expect("name")
            )
            .is_ok()
        );
    }
}
