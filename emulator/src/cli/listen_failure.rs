//! Why the endpoint could not listen, for `run` and `serve`.

/// Why the endpoint could not listen, said once (the OS error is not repeated), with who holds
/// the port when it can be told and how to choose another address.
pub(super) fn listen_failure(
    error: &embedded_kinesis::http::ServeError,
    default_address: bool,
) -> String {
    let addr = error.addr;
    let mut message = format!("cannot serve the Kinesis API on {addr}: {}", error.source);
    if error.source.kind() == std::io::ErrorKind::AddrInUse {
        match super::port_owner::listening_process(addr.port()) {
            Some(owner) => message.push_str(&format!("; {owner} listens on port {}", addr.port())),
            None => message.push_str(&format!("; something else listens on port {}", addr.port())),
        }
    }
    let option = if default_address {
        "the default address is taken: pass --listen 127.0.0.1:PORT (127.0.0.1:0 for any free \
         port), or --no-listen to run without the endpoint"
    } else {
        "pass another --listen address (127.0.0.1:0 for any free port), or --no-listen"
    };
    format!("{message}\n  {option}")
}
