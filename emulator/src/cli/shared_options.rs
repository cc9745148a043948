//! The options every command that takes them reads alike (`--template`, `--region`, ...), and
//! what `run` reads of them from the environment.

use clap::Args;

/// Options that mean the same to every command that takes them, accepted before or after the
/// command's name (`kinesis-esm --template t.yaml run` as `kinesis-esm run --template t.yaml`).
/// A command refuses those it has no use for, rather than passing over them.
#[derive(Debug, Clone, Default, Args)]
pub(super) struct SharedOptions {
    /// The SAM template: for `run`, whose streams and functions to run (by default
    /// template.yaml); for `serve`, whose streams to serve.
    #[arg(long, value_name = "PATH", global = true)]
    pub(super) template: Option<std::path::PathBuf>,
    /// The region of the emulated resources (run, serve), or of the Kinesis to talk to (put,
    /// reshard). By default us-east-1.
    #[arg(long, global = true)]
    pub(super) region: Option<String>,
    /// The account id in the emulated resources' ARNs (run, serve). By default 123456789012.
    #[arg(long, value_name = "ID", global = true)]
    pub(super) account_id: Option<String>,
    /// Keeps the embedded Kinesis (streams, shards, records) and the checkpoints in this
    /// directory (created if missing), so that a restarted `run` or `serve` finds its records
    /// and `run` resumes at its checkpoints. A `PutRecords` that answered and a checkpoint that
    /// was written survive a crash. With `--lease-table`, the checkpoints stay in the table.
    #[arg(long, value_name = "DIR", global = true)]
    pub(super) state_dir: Option<std::path::PathBuf>,
    /// Serves the embedded Kinesis' API (for the aws CLI, SDKs, `kinesis-esm put`) and `run`'s
    /// status (for `kinesis-esm status`) on this address. By default 127.0.0.1:4566; the command
    /// stops (exit 2) if that port is taken, naming what holds it.
    #[arg(long, value_name = "ADDR", global = true)]
    pub(super) listen: Option<std::net::SocketAddr>,
    /// `run` serves neither the embedded Kinesis nor the status.
    #[arg(long, global = true, conflicts_with = "listen")]
    pub(super) no_listen: bool,
}

/// A shared option by name, and whether it was given.
type GivenOption = (&'static str, bool);

impl SharedOptions {
    const DEFAULT_REGION: &str = "us-east-1";
    const DEFAULT_ACCOUNT_ID: &str = "123456789012";

    fn given(&self) -> [GivenOption; 6] {
        [
            ("--template", self.template.is_some()),
            ("--region", self.region.is_some()),
            ("--account-id", self.account_id.is_some()),
            ("--state-dir", self.state_dir.is_some()),
            ("--listen", self.listen.is_some()),
            ("--no-listen", self.no_listen),
        ]
    }

    /// Refuses the options given that `command` has no use for (it uses `used`).
    pub(super) fn refuse_unused(&self, command: &str, used: &[&str]) -> Result<(), String> {
        match self
            .given()
            .into_iter()
            .find(|(name, given)| *given && !used.contains(name))
        {
            Some((name, _)) => Err(format!(
                "{name} is not an option of `kinesis-esm {command}`{}",
                match Self::users(name) {
                    "" => String::new(),
                    users => format!(" (only of {users})"),
                }
            )),
            None => Ok(()),
        }
    }

    /// The commands that take the option `name`, for a message.
    fn users(name: &str) -> &'static str {
        match name {
            "--template" | "--account-id" | "--state-dir" | "--listen" => "run and serve",
            "--region" => "run, serve, put, reshard, failures and dlq",
            "--no-listen" => "run",
            _ => "",
        }
    }

    /// These options with what the environment gives for those not given on the command line
    /// (`docs/production.md`): `KINESIS_ESM_TEMPLATE`, `_REGION`, `_STATE_DIR`, `_LISTEN`.
    pub(super) fn with_run_environment(
        &self,
        variable: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut filled = self.clone();
        if filled.template.is_none() {
            filled.template = variable("KINESIS_ESM_TEMPLATE").map(Into::into);
        }
        if filled.region.is_none() {
            filled.region = variable("KINESIS_ESM_REGION");
        }
        if filled.state_dir.is_none() {
            filled.state_dir = variable("KINESIS_ESM_STATE_DIR").map(Into::into);
        }
        if filled.listen.is_none()
            && !filled.no_listen
            && let Some(listen) = variable("KINESIS_ESM_LISTEN")
        {
            filled.listen = Some(listen.parse().map_err(|_| {
                format!("KINESIS_ESM_LISTEN={listen} is not an address such as 0.0.0.0:4566")
            })?);
        }
        Ok(filled)
    }

    pub(super) fn region(&self) -> String {
        self.region
            .clone()
            .unwrap_or_else(|| Self::DEFAULT_REGION.to_owned())
    }

    pub(super) fn account_id(&self) -> String {
        self.account_id
            .clone()
            .unwrap_or_else(|| Self::DEFAULT_ACCOUNT_ID.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_reads_the_options_not_given_from_the_environment() {
        let environment = |name: &str| match name {
            "KINESIS_ESM_TEMPLATE" => Some("/srv/template.yaml".to_owned()),
            "KINESIS_ESM_REGION" => Some("eu-west-1".to_owned()),
            "KINESIS_ESM_LISTEN" => Some("0.0.0.0:4566".to_owned()),
            _ => None,
        };
        let given = SharedOptions {
            region: Some("us-west-2".to_owned()),
            ..SharedOptions::default()
        };
        let filled = given
            .with_run_environment(&environment)
            .expect("the environment is read");
        assert_eq!(
            filled.template.as_deref(),
            Some(std::path::Path::new("/srv/template.yaml"))
        );
        assert_eq!(filled.region(), "us-west-2", "the command line wins");
        assert_eq!(filled.listen, Some("0.0.0.0:4566".parse().unwrap()));
        assert_eq!(filled.state_dir, None);
        let bad = |name: &str| (name == "KINESIS_ESM_LISTEN").then(|| "port 80".to_owned());
        assert_eq!(
            SharedOptions::default()
                .with_run_environment(&bad)
                .unwrap_err(),
            "KINESIS_ESM_LISTEN=port 80 is not an address such as 0.0.0.0:4566"
        );
    }
}
