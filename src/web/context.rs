//! What every component of a page may read without being handed it: the
//! page's language and, on console pages, who is signed in.
//!
//! A page is rendered inside [`render_in`], which gives both to the
//! reactive owner the page's components run under. A component asks with
//! [`lang`] and [`viewer`]; nothing passes a `Lang` from one component to
//! the next. Everything that reads the context must therefore be built
//! inside the closure handed to `render_in` (the console's
//! [`super::auth::Staff::page`] takes one for that reason).

use leptos::prelude::*;

use super::i18n::Lang;
use crate::domain::permissions::{self, Permission};
use crate::service::staff::StaffSession;

/// The page's language, as the context holds it.
#[derive(Debug, Clone, Copy)]
struct PageLang(Lang);

/// Renders `page` to HTML with `lang` (and, on a console page, the
/// signed-in `viewer`) in context.
pub fn render_in<V: IntoView + 'static>(
    lang: Lang,
    viewer: Option<StaffSession>,
    page: impl FnOnce() -> V,
) -> String {
    Owner::new().with(move || {
        provide_context(PageLang(lang));
        if let Some(v) = viewer {
            provide_context(v);
        }
        page().to_html()
    })
}

/// The language of the page being rendered.
///
/// Outside [`render_in`] there is none: that is a page built in the wrong
/// place, a programming error, which debug builds (and so every test)
/// stop at; a release build falls back to Chinese, the default language,
/// rather than fail the request.
pub fn lang() -> Lang {
    match use_context::<PageLang>() {
        Some(PageLang(l)) => l,
        None => {
            debug_assert!(false, "lang() read outside render_in");
            tracing::error!("a page component read its language outside render_in");
            Lang::Zh
        }
    }
}

/// The staff member the console page is rendered for; `None` on the
/// sign-in and self-check pages.
pub fn viewer() -> Option<StaffSession> {
    use_context::<StaffSession>()
}

/// Whether the signed-in staff member may use `permission` (which
/// buttons and links a component offers; the service decides again).
/// `false` when nobody is signed in.
pub fn viewer_may(permission: Permission) -> bool {
    viewer().is_some_and(|v| permissions::may(v.role, permission))
}

/// The signed-in staff member's form token (empty when nobody is: a form
/// without one is refused).
pub fn csrf_token() -> String {
    viewer().map(|v| v.csrf_token).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_read_the_language_the_page_was_rendered_in() {
        let zh = render_in(Lang::Zh, None, || view! { <p>{lang().t("search")}</p> });
        let en = render_in(Lang::En, None, || view! { <p>{lang().t("search")}</p> });
        assert_eq!(zh, format!("<p>{}</p>", Lang::Zh.t("search")));
        assert_eq!(en, format!("<p>{}</p>", Lang::En.t("search")));
        assert_ne!(zh, en);
    }

    fn session(role: crate::domain::staff::Role) -> StaffSession {
        StaffSession {
            name: crate::domain::staff::StaffName::parse("lin").expect("a valid name"),
            role,
            csrf_token: "t0k3n".into(),
        }
    }

    #[test]
    fn only_a_signed_in_viewer_with_the_permission_may() {
        use crate::domain::staff::Role;
        let may = |viewer: Option<StaffSession>| {
            render_in(Lang::En, viewer, || {
                format!("{} {}", viewer_may(Permission::ManageStaff), csrf_token())
            })
        };
        assert_eq!(may(None), "false ");
        assert_eq!(may(Some(session(Role::Support))), "false t0k3n");
        assert_eq!(may(Some(session(Role::Admin))), "true t0k3n");
    }
}
