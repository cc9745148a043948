//! The live page of `kinesis-esm run` in a real browser: Debian's headless Chromium, driven
//! through WebDriver (its `chromedriver`) with `fantoccini`. `scripts/install-browser` installs
//! both (`scripts/test` runs it first); without them this test fails, saying what to install.
//!
//! `KINESIS_ESM_SCREENSHOT=docs/live-page.png` makes the test save its screenshot of the page
//! there: the picture in `docs/running-locally.md` is taken so.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use end_to_end::aws::workspace_dir;
use end_to_end::run::Running;

/// How long the page may take to show what the test waits for.
const SHOWN_WITHIN: Duration = Duration::from_secs(30);

/// How long the run may take to build the shipping function and start its mapping (the page is
/// served before): cargo on a loaded machine.
const MAPPING_WITHIN: Duration = Duration::from_secs(600);

/// A shipment for a carrier the shipping function does not know: it holds it.
const FEDEX_SHIPMENT: &str =
    r#"{"id": 4242, "address": "Rue de Rivoli 10, Paris", "carrier": "fedex"}"#;

/// Shipments for a carrier the shipping function knows: it books them.
const DHL_SHIPMENTS: [&str; 2] = [
    r#"{"id": 4240, "address": "Keizersgracht 1, Amsterdam", "carrier": "dhl"}"#,
    r#"{"id": 4241, "address": "Keizersgracht 2, Amsterdam", "carrier": "dhl"}"#,
];

/// The first shard of the template's `shipments` stream, and the children a split makes.
const PARENT: &str = "shardId-000000000000";
const CHILDREN: [&str; 2] = ["shardId-000000000001", "shardId-000000000002"];

#[tokio::test]
async fn the_page_shows_a_held_shipment_and_the_children_of_a_split_waiting_on_their_parent() {
    let driver = ChromeDriver::start().await;
    // Slow retries keep the held shipment held while the test looks.
    let template = workspace_dir().join("template.yaml");
    let args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "--template".into(),
        template.into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--retry-pause".into(),
        "60s".into(),
        "--max-retry-pause".into(),
        "60s".into(),
    ];
    let mut run = Running::spawn(&args).await;
    let endpoint = run.kinesis_endpoint().await;
    let browser = driver.browser().await;

    browser
        .goto(&format!("{endpoint}/"))
        .await
        .expect("the page opens");
    wait_for_text(&browser, "#connection", "live").await;
    wait_for_within(
        &browser,
        &format!("g[data-shard='{PARENT}']"),
        MAPPING_WITHIN,
    )
    .await;

    // The form is not filled with any template's example.
    assert_eq!(field_value(&browser, "#put-key").await, "");
    assert_eq!(field_value(&browser, "#put-data").await, "");

    // Two booked shipments move the shard's checkpoint; shortened as the summary shortens
    // it, the checkpoint still tells them apart.
    let checkpoint = format!("g[data-shard='{PARENT}'] .checkpoint");
    let mut seen: Vec<String> = Vec::new();
    for shipment in DHL_SHIPMENTS {
        set_field(&browser, "#put-key", "customer-42").await;
        set_field(&browser, "#put-data", shipment).await;
        click(&browser, "#put-submit").await;
        let before = seen.last().map_or("", String::as_str);
        let shown = wait_for_new_text(&browser, &checkpoint, "checkpoint 4917…", before).await;
        seen.push(shown);
    }
    assert_ne!(seen[0], seen[1], "two checkpoints read alike");

    // Publish the fedex shipment from the page's form.
    set_field(&browser, "#put-key", "customer-42").await;
    set_field(&browser, "#put-data", FEDEX_SHIPMENT).await;
    click(&browser, "#put-submit").await;
    wait_for_text(&browser, "#action-result", "published to stream shipments").await;

    // Its shard turns held, with the record shown.
    wait_for(
        &browser,
        &format!("g[data-shard='{PARENT}'][data-phase='held']"),
    )
    .await;
    let held = format!(".held[data-shard='{PARENT}']");
    wait_for_text(&browser, &format!("{held} .partition-key"), "customer-42").await;
    let data = text_of(&browser, &format!("{held} .data")).await;
    assert!(
        data.contains("\"carrier\": \"fedex\"") && data.contains("\"id\": 4242"),
        "the held record's data: {data}"
    );
    let reason = text_of(&browser, &format!("{held} .reason")).await;
    assert!(
        reason.contains("batchItemFailures"),
        "why it is held: {reason}"
    );
    wait_for_text(&browser, "#log-lines", "unknown carrier, shipment held").await;
    // The invocation that held it is among the shard's recent invocations, naming the record.
    let held_number = text_of(&browser, &format!("{held} .sequence-number")).await;
    let held_row = format!(
        ".recent[data-shard='{PARENT}'] tr[data-kind='held_at'][data-held-at='{held_number}']"
    );
    wait_for(&browser, &held_row).await;
    let verdict = text_of(&browser, &format!("{held_row} .verdict")).await;
    assert!(
        verdict.starts_with("held at ") && verdict.contains("(0 settled before it)"),
        "the held invocation's verdict: {verdict}"
    );

    // Split the held shard: its children wait on it.
    wait_for(
        &browser,
        &format!("#reshard-shard option[value='{PARENT}']"),
    )
    .await;
    browser
        .find(Locator::Css("#reshard-shard"))
        .await
        .expect("the shard choice")
        .select_by_value(PARENT)
        .await
        .expect("the parent can be chosen");
    click(&browser, "#split-submit").await;
    wait_for_text(&browser, "#action-result", &format!("split {PARENT}")).await;
    for child in CHILDREN {
        wait_for(
            &browser,
            &format!("g[data-shard='{child}'][data-phase='waiting on parents']"),
        )
        .await;
    }
    // The parent is still held above them.
    wait_for(
        &browser,
        &format!("g[data-shard='{PARENT}'][data-phase='held']"),
    )
    .await;

    let screenshot = browser.screenshot().await.expect("a screenshot");
    assert!(screenshot.starts_with(b"\x89PNG"), "a PNG");
    if let Some(path) = std::env::var_os("KINESIS_ESM_SCREENSHOT") {
        std::fs::write(workspace_dir().join(&path), &screenshot).expect("the screenshot is saved");
    }

    let errors = console_errors(&browser).await;
    assert!(
        errors.is_empty(),
        "the browser's console has errors: {errors:#?}"
    );
    browser.close().await.expect("the session ends");
    run.send_sigterm();
}

/// `chromedriver` on a free loopback port, killed when dropped.
struct ChromeDriver {
    url: String,
    chromium: PathBuf,
    _process: tokio::process::Child,
}

impl ChromeDriver {
    async fn start() -> Self {
        let chromium = on_path("chromium");
        let chromedriver = on_path("chromedriver");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let process = tokio::process::Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("{} does not start: {error}", chromedriver.display()));
        Self {
            url: format!("http://127.0.0.1:{port}"),
            chromium,
            _process: process,
        }
    }

    /// A headless Chromium session that keeps the console's messages.
    async fn browser(&self) -> Client {
        let capabilities: Capabilities = serde_json::from_value(json!({
            "goog:chromeOptions": {
                "binary": self.chromium,
                // `--no-sandbox`: CI runs as root, where Chromium's sandbox cannot start.
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", "--window-size=1400,1100"],
            },
            "goog:loggingPrefs": { "browser": "ALL" },
        }))
        .expect("capabilities");
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(capabilities);
        // chromedriver takes a moment to listen.
        let mut last_error = None;
        for _ in 0..100 {
            match builder.connect(&self.url).await {
                Ok(client) => return client,
                Err(error) => last_error = Some(error.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "no WebDriver session from chromedriver at {}: {}",
            self.url,
            last_error.unwrap_or_default()
        );
    }
}

/// Where `command` is on `PATH`; fails the test, saying how to install it, when it is not.
fn on_path(command: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(command))
        .find(|path| Path::new(path).is_file())
        .unwrap_or_else(|| {
            panic!(
                "{command} is not installed: the browser test needs Debian's chromium and \
                 chromium-driver (scripts/install-browser installs them; scripts/test runs it)"
            )
        })
}

async fn wait_for(browser: &Client, css: &str) -> fantoccini::elements::Element {
    wait_for_within(browser, css, SHOWN_WITHIN).await
}

async fn wait_for_within(
    browser: &Client,
    css: &str,
    limit: Duration,
) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(limit)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|error| panic!("the page never showed {css}: {error}"))
}

async fn wait_for_text(browser: &Client, css: &str, fragment: &str) {
    let deadline = tokio::time::Instant::now() + SHOWN_WITHIN;
    let mut seen = String::new();
    while tokio::time::Instant::now() < deadline {
        if let Ok(element) = browser.find(Locator::Css(css)).await
            && let Ok(text) = element.text().await
        {
            if text.contains(fragment) {
                return;
            }
            seen = text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{css} never said {fragment:?}; it said {seen:?}");
}

/// The text of what `css` finds once it contains `fragment` and differs from `before`.
async fn wait_for_new_text(browser: &Client, css: &str, fragment: &str, before: &str) -> String {
    let deadline = tokio::time::Instant::now() + SHOWN_WITHIN;
    let mut seen = String::new();
    while tokio::time::Instant::now() < deadline {
        if let Ok(element) = browser.find(Locator::Css(css)).await
            && let Ok(text) = element.text().await
        {
            if text.contains(fragment) && text != before {
                return text;
            }
            seen = text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{css} never said {fragment:?} other than {before:?}; it said {seen:?}");
}

/// The value of the form field `css` finds.
async fn field_value(browser: &Client, css: &str) -> String {
    wait_for(browser, css)
        .await
        .prop("value")
        .await
        .unwrap_or_else(|error| panic!("the value of {css}: {error}"))
        .unwrap_or_default()
}

/// The text of what `css` finds, once it shows. The page redraws as events arrive, so an element
/// found may be replaced before its text is read (a stale element): it is found again then.
async fn text_of(browser: &Client, css: &str) -> String {
    let deadline = tokio::time::Instant::now() + SHOWN_WITHIN;
    loop {
        match wait_for(browser, css).await.text().await {
            Ok(text) => return text,
            Err(error)
                if error.is_stale_element_reference() && tokio::time::Instant::now() < deadline => {
            }
            Err(error) => panic!("the text of {css}: {error}"),
        }
    }
}

async fn set_field(browser: &Client, css: &str, value: &str) {
    let field = wait_for(browser, css).await;
    field.clear().await.expect("the field clears");
    field.send_keys(value).await.expect("the field takes text");
}

/// Clicks what `css` finds, finding it again if the page redrew it first (as [`text_of`]).
async fn click(browser: &Client, css: &str) {
    let deadline = tokio::time::Instant::now() + SHOWN_WITHIN;
    loop {
        match wait_for(browser, css).await.click().await {
            Ok(_) => return,
            Err(error)
                if error.is_stale_element_reference() && tokio::time::Instant::now() < deadline => {
            }
            Err(error) => panic!("clicking {css}: {error}"),
        }
    }
}

/// chromedriver's log of the browser's console (`POST /session/{id}/se/log`, kept since the
/// JSON Wire Protocol): the entries at SEVERE, which is how Chromium reports `console.error`,
/// uncaught exceptions and failed requests.
async fn console_errors(browser: &Client) -> Vec<Value> {
    let entries = browser
        .issue_cmd(BrowserLog)
        .await
        .expect("chromedriver gives the browser's log");
    entries
        .as_array()
        .expect("a list of entries")
        .iter()
        .filter(|entry| entry["level"] == "SEVERE")
        .cloned()
        .collect()
}

#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}
