//! Calling real Lambda: the regional endpoint the AWS SDK would choose, the function name encoded
//! as the SDKs encode it, and Signature Version 4 over each request.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials as _, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings};
use aws_types::SdkConfig;
use aws_types::service_config::ServiceConfigKey;
use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;

use super::error_chain::ErrorChain;

/// Credentials without an expiry time are loaded again after this long, as the AWS SDK's
/// identity cache does.
const CREDENTIALS_WITHOUT_EXPIRY_TTL: Duration = Duration::from_secs(15 * 60);

/// Credentials are renewed this long before they expire, so none expires in flight.
const CREDENTIALS_RENEWAL_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Percent-encodes everything but RFC 3986's unreserved characters, as the AWS SDKs encode a
/// function name (`arn:aws:lambda:...` becomes `arn%3Aaws%3Alambda%3A...`) in the path.
pub(super) fn encode_uri_component(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// Lambda's endpoint for `config`, chosen as the AWS SDK chooses it (see
/// [`InvokeApi::aws`](super::InvokeApi::aws)).
pub(super) fn aws_endpoint(config: &SdkConfig, region: &str) -> String {
    let explicit = config.get_origin("endpoint_url").is_client_config();
    let from_settings = || {
        config
            .service_config()
            .and_then(|settings| {
                let key = ServiceConfigKey::builder()
                    .service_id("Lambda")
                    .env("AWS_ENDPOINT_URL")
                    .profile("endpoint_url")
                    .build()
                    .ok()?;
                settings.load_config(key)
            })
            .or_else(|| config.endpoint_url().map(str::to_owned))
    };
    let configured = if explicit {
        config.endpoint_url().map(str::to_owned)
    } else {
        from_settings()
    };
    configured.unwrap_or_else(|| {
        regional_endpoint(
            region,
            config.use_fips().unwrap_or(false),
            config.use_dual_stack().unwrap_or(false),
        )
    })
}

/// Lambda's endpoint in `region`: `https://lambda[-fips].{region}.{domain}`, whose domain depends
/// on the partition (and on `dual_stack` where the partition has a dual-stack domain).
pub(super) fn regional_endpoint(region: &str, fips: bool, dual_stack: bool) -> String {
    let (domain, dual_stack_domain) = if region.starts_with("cn-") {
        ("amazonaws.com.cn", Some("api.amazonwebservices.com.cn"))
    } else if region.starts_with("us-isob-") {
        ("sc2s.sgov.gov", None)
    } else if region.starts_with("us-iso-") {
        ("c2s.ic.gov", None)
    } else {
        ("amazonaws.com", Some("api.aws"))
    };
    let domain = match dual_stack_domain {
        Some(dual_stack_domain) if dual_stack => dual_stack_domain,
        _ => domain,
    };
    let fips = if fips { "-fips" } else { "" };
    format!("https://lambda{fips}.{region}.{domain}")
}

/// Signs requests for Lambda with Signature Version 4.
pub(super) struct Signer {
    pub(super) credentials: SharedCredentialsProvider,
    pub(super) region: String,
    /// The credentials last loaded, and when. A lock held across the loading makes concurrent
    /// invocations wait for one load instead of each starting its own.
    pub(super) cached: tokio::sync::Mutex<Option<(Credentials, Instant)>>,
}

impl Signer {
    pub(super) async fn credentials(&self) -> Result<Credentials, String> {
        let mut cached = self.cached.lock().await;
        if let Some((credentials, loaded)) = cached.as_ref() {
            let fresh = match credentials.expiry() {
                Some(expiry) => expiry > SystemTime::now() + CREDENTIALS_RENEWAL_MARGIN,
                None => loaded.elapsed() < CREDENTIALS_WITHOUT_EXPIRY_TTL,
            };
            if fresh {
                return Ok(credentials.clone());
            }
        }
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|error| format!("no AWS credentials to sign with: {}", ErrorChain(&error)))?;
        *cached = Some((credentials.clone(), Instant::now()));
        Ok(credentials)
    }

    pub(super) async fn sign(
        &self,
        request: &mut Request<Full<Bytes>>,
        body: &[u8],
    ) -> Result<(), String> {
        let identity = self.credentials().await?.into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("lambda")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|error| format!("could not sign the request: {error}"))?
            .into();
        let uri = request.uri().to_string();
        let headers = request
            .headers()
            .iter()
            .filter_map(|(name, value)| value.to_str().ok().map(|value| (name.as_str(), value)));
        let signable = SignableRequest::new(
            request.method().as_str(),
            Cow::Owned(uri),
            headers,
            SignableBody::Bytes(body),
        )
        .map_err(|error| format!("could not sign the request: {error}"))?;
        let (instructions, _signature) = aws_sigv4::http_request::sign(signable, &params)
            .map_err(|error| format!("could not sign the request: {error}"))?
            .into_parts();
        instructions.apply_to_request_http1x(request);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_encoding(text: &str, expected: &str) {
        assert_eq!(encode_uri_component(text), expected);
    }

    #[test]
    fn names_and_arns_are_encoded_as_the_sdks_encode_them() {
        check_encoding("bootstrap", "bootstrap");
        check_encoding("my-function_2.v~1", "my-function_2.v~1");
        check_encoding(
            "arn:aws:lambda:eu-west-1:123456789012:function:shipping",
            "arn%3Aaws%3Alambda%3Aeu-west-1%3A123456789012%3Afunction%3Ashipping",
        );
        check_encoding("$LATEST", "%24LATEST");
        check_encoding("a/b c", "a%2Fb%20c");
    }

    #[track_caller]
    fn check_endpoint(region: &str, fips: bool, dual_stack: bool, expected: &str) {
        assert_eq!(regional_endpoint(region, fips, dual_stack), expected);
    }

    #[test]
    fn regional_endpoints_follow_the_partition() {
        check_endpoint(
            "eu-west-1",
            false,
            false,
            "https://lambda.eu-west-1.amazonaws.com",
        );
        check_endpoint(
            "us-east-1",
            true,
            false,
            "https://lambda-fips.us-east-1.amazonaws.com",
        );
        check_endpoint("us-east-2", false, true, "https://lambda.us-east-2.api.aws");
        check_endpoint(
            "cn-north-1",
            false,
            false,
            "https://lambda.cn-north-1.amazonaws.com.cn",
        );
        check_endpoint(
            "cn-northwest-1",
            false,
            true,
            "https://lambda.cn-northwest-1.api.amazonwebservices.com.cn",
        );
        check_endpoint(
            "us-gov-west-1",
            true,
            false,
            "https://lambda-fips.us-gov-west-1.amazonaws.com",
        );
        check_endpoint(
            "us-iso-east-1",
            false,
            true,
            "https://lambda.us-iso-east-1.c2s.ic.gov",
        );
        check_endpoint(
            "us-isob-east-1",
            false,
            false,
            "https://lambda.us-isob-east-1.sc2s.sgov.gov",
        );
    }
}
