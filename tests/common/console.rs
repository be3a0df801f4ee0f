//! A minimal browser for console tests: a cookie jar, no automatic
//! redirects (tests look at each 303), forms posted the way a browser
//! posts them (same-origin `Sec-Fetch-Site`, `Origin`), and the CSRF
//! token read off the page like a real form would carry it.

use std::collections::HashMap;

use couponkeeper::domain::staff::{Password, Role, StaffName};

use super::TestApp;

/// A password long enough for the rules.
pub const PASSWORD: &str = "correct horse battery";

/// One HTTP answer as a browser sees it.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub set_cookies: Vec<String>,
    /// The body, without a leading UTF-8 byte order mark.
    pub text: String,
    pub headers: reqwest::header::HeaderMap,
    /// Whether the body started with a UTF-8 byte order mark (the console's
    /// CSV exports do, for Excel).
    pub bom: bool,
}

impl Page {
    /// The value of response header `name`, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl Page {
    /// The value of the first hidden `csrf` input on the page.
    pub fn csrf(&self) -> Option<String> {
        hidden_value(&self.text, "csrf")
    }

    pub fn contains(&self, s: &str) -> bool {
        self.text.contains(s)
    }
}

/// The `value` of `<input ... name="NAME" value="...">`.
pub fn hidden_value(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(html[start..end].to_string())
}

/// A browser with its own cookies.
pub struct Browser<'a> {
    pub app: &'a TestApp,
    client: reqwest::Client,
    pub cookies: HashMap<String, String>,
    pub accept_language: Option<String>,
    /// Headers sent with every request (e.g. `X-Forwarded-For`).
    pub extra_headers: Vec<(String, String)>,
}

impl<'a> Browser<'a> {
    pub fn new(app: &'a TestApp) -> Self {
        Browser {
            app,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            cookies: HashMap::new(),
            accept_language: None,
            extra_headers: Vec::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn finish(&mut self, req: reqwest::RequestBuilder) -> Page {
        let mut req = req;
        if !self.cookies.is_empty() {
            req = req.header("cookie", self.cookie_header());
        }
        if let Some(l) = &self.accept_language {
            req = req.header("accept-language", l.clone());
        }
        for (k, v) in &self.extra_headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let r = req.send().await.expect("request reaches the server");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let location = r
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let set_cookies: Vec<String> = r
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(String::from)
            .collect();
        for c in &set_cookies {
            let first = c.split(';').next().unwrap_or("");
            if let Some((k, v)) = first.split_once('=') {
                if v.is_empty() || c.contains("Max-Age=0") {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_string(), v.to_string());
                }
            }
        }
        let raw = r.text().await.unwrap_or_default();
        let bom = raw.starts_with('\u{feff}');
        let text = raw.trim_start_matches('\u{feff}').to_string();
        Page {
            status,
            location,
            set_cookies,
            text,
            headers,
            bom,
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let req = self.client.get(format!("{}{path}", self.app.base));
        self.finish(req).await
    }

    /// Follows redirects from `path` (at most 5) and returns the last page.
    pub async fn visit(&mut self, path: &str) -> Page {
        let mut page = self.get(path).await;
        for _ in 0..5 {
            match (&page.status, &page.location) {
                (301..=303 | 307 | 308, Some(to)) => {
                    let to = to.clone();
                    page = self.get(&to).await;
                }
                _ => break,
            }
        }
        page
    }

    /// Posts a form the way a browser on our own page would.
    /// Opens the page at `page_path` (which must answer 200) and posts
    /// `fields` with its CSRF token to `action`, as the page's form would.
    pub async fn post_on(
        &mut self,
        page_path: &str,
        action: &str,
        fields: &[(&str, &str)],
    ) -> Page {
        let page = self.get(page_path).await;
        assert_eq!(page.status, 200, "{page_path}: {}", page.text);
        let csrf = page.csrf().expect("the page carries the session's token");
        let mut all: Vec<(&str, &str)> = vec![("csrf", &csrf)];
        all.extend_from_slice(fields);
        self.post_form(action, &all).await
    }

    pub async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.post_form_with(path, fields, "same-origin").await
    }

    /// Posts a form with a chosen `Sec-Fetch-Site`.
    pub async fn post_form_with(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        fetch_site: &str,
    ) -> Page {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields.iter())
            .finish();
        let req = self
            .client
            .post(format!("{}{path}", self.app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("sec-fetch-site", fetch_site)
            .header("origin", self.app.base.clone())
            .body(body);
        self.finish(req).await
    }

    /// Posts a `multipart/form-data` form the way a browser does: text
    /// `fields`, then `files` as (field, file name, bytes).
    pub async fn post_multipart(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        files: &[(&str, &str, &[u8])],
    ) -> Page {
        let boundary = "----couponkeeperTestBoundary7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                )
                .as_bytes(),
            );
        }
        for (name, file_name, bytes) in files {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\nContent-Type: text/csv\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let req = self
            .client
            .post(format!("{}{path}", self.app.base))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .header("sec-fetch-site", "same-origin")
            .header("origin", self.app.base.clone())
            .body(body);
        self.finish(req).await
    }

    /// Signs in through the real form; returns the answer to the POST.
    pub async fn sign_in_as(&mut self, name: &str, password: &str) -> Page {
        let form = self.get("/login").await;
        let csrf = form.csrf().expect("the sign-in form carries a token");
        self.post_form(
            "/login",
            &[
                ("name", name),
                ("password", password),
                ("csrf", &csrf),
                ("next", "/console"),
            ],
        )
        .await
    }

    /// The session's CSRF token, read off the console home page.
    pub async fn csrf(&mut self) -> String {
        self.get("/console")
            .await
            .csrf()
            .expect("console pages carry the session's token")
    }
}

/// Creates a staff account directly through the service.
pub async fn add_staff(app: &TestApp, name: &str, role: Role) {
    let name = StaffName::parse(name).expect("name");
    app.service
        .add_staff(
            &name,
            role,
            &Password::parse(PASSWORD, &name).expect("password"),
            false,
        )
        .await
        .expect("staff added");
}

/// A browser signed in as a new account of `role` named after it.
pub async fn signed_in(app: &TestApp, role: Role) -> Browser<'_> {
    let name = format!("{}-1", role.as_str());
    add_staff(app, &name, role).await;
    let mut b = Browser::new(app);
    let r = b.sign_in_as(&name, PASSWORD).await;
    assert_eq!(r.status, 303, "sign-in redirects: {}", r.text);
    b
}

/// Opens a confirmation page and posts its form with `fields` added (and
/// its hidden `back`, when it has one, as a browser would).
pub async fn confirm(b: &mut Browser<'_>, path: &str, fields: &[(&str, &str)]) -> Page {
    let page = b.get(path).await;
    assert_eq!(page.status, 200, "{path}: {}", page.text);
    let csrf = page.csrf().expect("token");
    let form_id = hidden_value(&page.text, "form_id").unwrap_or_default();
    let back = hidden_value(&page.text, "back").map(|b| b.replace("&amp;", "&"));
    let mut all: Vec<(&str, &str)> = vec![("csrf", &csrf), ("form_id", &form_id)];
    if let Some(back) = &back {
        all.push(("back", back));
    }
    all.extend_from_slice(fields);
    b.post_form(path, &all).await
}

/// The whole opening tag of the element whose attributes contain
/// `marker` (e.g. `data-testid="compensation-link"` or `id="amount"`).
pub fn tag_with<'h>(html: &'h str, marker: &str) -> Option<&'h str> {
    let at = html.find(marker)?;
    let start = html[..at].rfind('<')?;
    let end = html[at..].find('>')? + at + 1;
    Some(&html[start..end])
}

/// The value of attribute `name` in `tag`, with `&amp;` read back as `&`.
pub fn attr(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].replace("&amp;", "&"))
}

/// The value of the input with id `id`, as the page shows it.
pub fn input_value(html: &str, id: &str) -> Option<String> {
    attr(tag_with(html, &format!("id=\"{id}\""))?, "value")
}

/// The text of the textarea with id `id`.
pub fn textarea_text(html: &str, id: &str) -> Option<String> {
    let tag = tag_with(html, &format!("<textarea id=\"{id}\""))?;
    let start = html.find(tag)? + tag.len();
    let end = html[start..].find("</textarea>")? + start;
    Some(html[start..end].to_string())
}

/// The message beside field `field` of a refused form (`<p
/// data-field-error=FIELD>`), if there is one.
pub fn field_error(html: &str, field: &str) -> Option<String> {
    let marker = format!("data-field-error=\"{field}\"");
    let start = html.find(&marker)?;
    let rest = &html[start..];
    let rest = &rest[rest.find('>')? + 1..];
    Some(rest[..rest.find("</p>")?].to_string())
}

/// The text of the page's flash message, if any.
pub fn flash_text(html: &str) -> Option<String> {
    let start = html.find("data-testid=\"flash\"")?;
    let rest = &html[start..];
    let rest = &rest[rest.find('>')? + 1..];
    Some(rest[..rest.find("</div>")?].to_string())
}

/// What a person reads on a page: the text between tags, without the
/// folded-away ids (`<details class="ids">`), scripts and attributes.
pub fn visible_text(html: &str) -> String {
    let mut html = html.to_string();
    let mut from = 0;
    while let Some(at) = html[from..].find("<details") {
        let start = from + at;
        let tag_end = html[start..].find('>').map_or(html.len(), |e| start + e);
        if !html[start..tag_end].contains("class=\"ids\"") {
            from = tag_end;
            continue;
        }
        let end = html[start..]
            .find("</details>")
            .map_or(html.len(), |e| start + e + "</details>".len());
        html.replace_range(start..end, " ");
        from = start;
    }
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Raw ids and stored words a person should never have to read.
pub fn unreadable_words(text: &str) -> Vec<String> {
    const WORDS: [&str; 14] = [
        "cpn_",
        "tpl_",
        "cmp_",
        "pending_deposit",
        "deposit_paid",
        "pending_payment",
        "final_paid",
        "staff_release",
        "force_release",
        "checkout_lock",
        "deposit_payment",
        "demo:seed",
        "job:",
        "staff:",
    ];
    WORDS
        .iter()
        .filter(|w| text.contains(*w))
        .map(|w| {
            let at = text.find(w).unwrap_or(0);
            let from = text[..at]
                .char_indices()
                .rev()
                .nth(40)
                .map_or(0, |(i, _)| i);
            let to = (at + 60).min(text.len());
            let to = (to..=text.len())
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(text.len());
            format!("{w}: …{}…", &text[from..to])
        })
        .collect()
}
