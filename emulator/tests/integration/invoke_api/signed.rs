//! Real Lambda: the Invoke API's requests signed with SigV4, as Lambda checks them.

use super::*;

const ACCESS_KEY_ID: &str = "AKIDEXAMPLE";
const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN: &str = "session-token-example";

fn credentials(expiry: Option<SystemTime>) -> Credentials {
    Credentials::new(
        ACCESS_KEY_ID,
        SECRET_ACCESS_KEY,
        Some(SESSION_TOKEN.to_owned()),
        expiry,
        "test",
    )
}

fn sdk_config(
    region: Option<&str>,
    endpoint: Option<&str>,
    provider: SharedCredentialsProvider,
) -> SdkConfig {
    let mut builder = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .credentials_provider(provider);
    if let Some(region) = region {
        builder = builder.region(Region::new(region.to_owned()));
    }
    if let Some(endpoint) = endpoint {
        builder = builder.endpoint_url(endpoint);
    }
    builder.build()
}

/// Seconds since the Unix epoch of an `X-Amz-Date` such as `20150830T123600Z`.
fn parse_amz_date(text: &str) -> SystemTime {
    let number = |range: std::ops::Range<usize>| -> i64 {
        text[range].parse().expect("X-Amz-Date is all digits")
    };
    let (year, month, day) = (number(0..4), number(4..6), number(6..8));
    let (hour, minute, second) = (number(9..11), number(11..13), number(13..15));
    // Days from the civil date (Howard Hinnant's algorithm).
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).expect("after 1970"))
}

/// Signs the request the stand-in received again, from what came over the wire, and returns
/// the `Authorization` header that makes.
fn authorization_for(received: &Received, uri: &str) -> String {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};

    let identity = credentials(None).into();
    let time = parse_amz_date(received.headers["x-amz-date"].to_str().unwrap());
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("eu-west-1")
        .name("lambda")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .unwrap()
        .into();
    // As a server checks a signature: with the headers it names, less the two the signer adds
    // itself.
    let authorization = received.headers["authorization"].to_str().unwrap();
    let signed: Vec<&str> = authorization
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("the Authorization header names the signed headers")
        .split(';')
        .collect();
    let headers = received
        .headers
        .iter()
        .filter(|(name, _)| {
            signed.contains(&name.as_str())
                && !matches!(name.as_str(), "x-amz-date" | "x-amz-security-token")
        })
        .map(|(name, value)| (name.as_str(), value.to_str().unwrap()));
    let signable =
        SignableRequest::new("POST", uri, headers, SignableBody::Bytes(&received.body)).unwrap();
    let (instructions, _) = sign(signable, &params).unwrap().into_parts();
    instructions
        .headers()
        .find(|(name, _)| *name == "authorization")
        .map(|(_, value)| value.to_owned())
        .expect("the signature's Authorization header")
}

#[tokio::test]
async fn requests_to_lambda_are_signed_for_lambda_in_the_region() {
    let (endpoint, recorder) = stand_in().await;
    let config = sdk_config(
        Some("eu-west-1"),
        Some(&endpoint),
        SharedCredentialsProvider::new(credentials(None)),
    );
    let arn = "arn:aws:lambda:eu-west-1:123456789012:function:echo";
    let api = InvokeApi::aws(&config, arn, options()).unwrap();
    assert!(api.is_signed());
    assert_eq!(api.endpoint(), endpoint);

    let outcome = api
        .invoke(Invocation::new(&br#"{"Records":[]}"#[..], FUNCTION_TIMEOUT))
        .await;

    assert_eq!(
        outcome,
        Ok(InvokeOutcome::Response(Bytes::from_static(
            br#"{"Records":[]}"#
        )))
    );
    let received = recorder.last();
    assert_eq!(received.headers["x-amz-security-token"], SESSION_TOKEN);
    let authorization = received.headers["authorization"].to_str().unwrap();
    let date = &received.headers["x-amz-date"].to_str().unwrap()[..8];
    assert!(
        authorization.starts_with(&format!(
            "AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/{date}/eu-west-1/lambda/aws4_request, SignedHeaders="
        )),
        "{authorization}"
    );
    // The signature covers what arrived: the host, the encoded path and the body as sent.
    let uri = format!(
        "{endpoint}/2015-03-31/functions/{}/invocations",
        arn.replace(':', "%3A")
    );
    assert_eq!(authorization, authorization_for(&received, &uri));
}

/// A credentials provider that counts its calls.
#[derive(Debug)]
struct CountingProvider {
    calls: Arc<AtomicUsize>,
    expiry: Option<SystemTime>,
}

impl ProvideCredentials for CountingProvider {
    fn provide_credentials<'a>(&'a self) -> provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        self.calls.fetch_add(1, Ordering::SeqCst);
        provider::future::ProvideCredentials::ready(Ok(credentials(self.expiry)))
    }
}

/// How many times the credentials were loaded for two invocations, when they expire at
/// `expiry`.
async fn credential_loads(expiry: Option<SystemTime>) -> usize {
    let (endpoint, _recorder) = stand_in().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = CountingProvider {
        calls: Arc::clone(&calls),
        expiry,
    };
    let config = sdk_config(
        Some("eu-west-1"),
        Some(&endpoint),
        SharedCredentialsProvider::new(provider),
    );
    let api = InvokeApi::aws(&config, "echo", options()).unwrap();
    for _ in 0..2 {
        let outcome = api
            .invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
            .await;
        assert!(
            matches!(outcome, Ok(InvokeOutcome::Response(_))),
            "{outcome:?}"
        );
    }
    calls.load(Ordering::SeqCst)
}

#[tokio::test]
async fn credentials_are_kept_until_they_are_about_to_expire() {
    let in_an_hour = SystemTime::now() + Duration::from_secs(3_600);
    let in_a_minute = SystemTime::now() + Duration::from_secs(60);
    assert_eq!(credential_loads(None).await, 1);
    assert_eq!(credential_loads(Some(in_an_hour)).await, 1);
    assert_eq!(credential_loads(Some(in_a_minute)).await, 2);
}

#[test]
fn lambda_is_found_in_the_configs_region() {
    let provider = SharedCredentialsProvider::new(credentials(None));
    let api = InvokeApi::aws(
        &sdk_config(Some("eu-west-1"), None, provider.clone()),
        "shipping",
        options(),
    )
    .unwrap();
    assert_eq!(api.endpoint(), "https://lambda.eu-west-1.amazonaws.com");
    assert_eq!(api.function_name(), "shipping");

    let api = InvokeApi::aws(
        &sdk_config(Some("cn-north-1"), None, provider),
        "shipping",
        options(),
    )
    .unwrap();
    assert_eq!(api.endpoint(), "https://lambda.cn-north-1.amazonaws.com.cn");
}

#[test]
fn lambda_needs_a_region() {
    let config = sdk_config(
        None,
        None,
        SharedCredentialsProvider::new(credentials(None)),
    );
    assert!(matches!(
        InvokeApi::aws(&config, "shipping", options()),
        Err(SetupError::NoRegion { function_name }) if function_name == "shipping"
    ));
}
