//! The page and its assets, embedded in the binary: one HTML file, its script and style, and
//! uPlot (MIT, vendored from the npm package `uplot` 1.6.32: `dist/uPlot.iife.min.js`,
//! `dist/uPlot.min.css`, its licence in `assets/uPlot.LICENSE`).

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const EDITOR_JS: &str = include_str!("assets/editor.js");
const APP_CSS: &str = include_str!("assets/app.css");
const UPLOT_JS: &str = include_str!("assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("assets/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("assets/uPlot.LICENSE");

/// The page: no data and no token (its script takes the token from the link's fragment and
/// asks the API with it), so it is served without one.
pub(crate) fn index() -> String {
    INDEX.to_owned()
}

/// The asset named `name`: its content type and content.
pub(crate) fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "editor.js" => ("text/javascript; charset=utf-8", EDITOR_JS),
        "app.css" => ("text/css; charset=utf-8", APP_CSS),
        "uPlot.iife.min.js" => ("text/javascript; charset=utf-8", UPLOT_JS),
        "uPlot.min.css" => ("text/css; charset=utf-8", UPLOT_CSS),
        "uPlot.LICENSE" => ("text/plain; charset=utf-8", UPLOT_LICENSE),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The page's budget: every asset of the page together at most 80 KB gzipped. Measured
    /// with the system's `gzip -9` (no compression crate just for a test): skipped without it,
    /// unless `SENTINEL_REQUIRE_SERVERS` is set (CI), where a missing `gzip` fails instead of
    /// passing unmeasured.
    #[test]
    fn the_page_s_assets_fit_80_kb_gzipped() {
        let all = [INDEX, APP_JS, EDITOR_JS, APP_CSS, UPLOT_JS, UPLOT_CSS].concat();
        let Ok(mut child) = std::process::Command::new("gzip")
            .arg("-9c")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        else {
            assert!(
                std::env::var_os("SENTINEL_REQUIRE_SERVERS").is_none(),
                "no gzip on PATH to measure the page's assets (raw size {} bytes)",
                all.len()
            );
            eprintln!("skipped: no gzip on PATH (raw size {} bytes)", all.len());
            return;
        };
        child
            .stdin
            .take()
            .unwrap()
            .write_all(all.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(
            out.stdout.len() <= 80 * 1024,
            "assets are {} bytes gzipped",
            out.stdout.len()
        );
    }

    #[test]
    fn the_page_names_only_its_own_assets() {
        let page = index();
        assert!(!page.contains("{{"), "no template left");
        for name in [
            "app.js",
            "editor.js",
            "app.css",
            "uPlot.iife.min.js",
            "uPlot.min.css",
        ] {
            assert!(page.contains(&format!("/assets/{name}")), "{name}");
            assert!(asset(name).is_some());
        }
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(!page.contains("<script>"), "inline scripts break the CSP");
    }
}
