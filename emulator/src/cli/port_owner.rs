//! Who holds a local TCP port, for the message of a `run` that cannot listen on it.
//!
//! On Linux the kernel lists listening sockets in `/proc/net/tcp` and `/proc/net/tcp6` (local
//! address and port in hex, state `0A` for LISTEN, and the socket's inode); a process's open
//! sockets are the `socket:[inode]` links under `/proc/<pid>/fd`. Elsewhere, or without the
//! rights to read another user's processes, the owner is simply not named.

use std::path::Path;

/// The TCP state `LISTEN` as `/proc/net/tcp` writes it.
const LISTEN: &str = "0A";

/// The inodes of the sockets listening on `port` in a `/proc/net/tcp`-shaped table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let state = fields.get(3)?;
            let inode = fields.get(9)?;
            let (_, local_port) = local.rsplit_once(':')?;
            let listening = *state == LISTEN && u16::from_str_radix(local_port, 16).ok()? == port;
            listening.then(|| inode.parse().ok()).flatten()
        })
        .collect()
}

/// The process that holds a socket listening on `port`, as `name (pid N)`, when it can be told.
pub(super) fn listening_process(port: u16) -> Option<String> {
    let proc = Path::new("/proc");
    let inodes: Vec<u64> = ["net/tcp", "net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(proc.join(table)).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let links: Vec<String> = inodes
        .iter()
        .map(|inode| format!("socket:[{inode}]"))
        .collect();
    for entry in std::fs::read_dir(proc).ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| links.iter().any(|link| target.as_os_str() == link.as_str()))
        });
        if holds {
            let name = std::fs::read_to_string(entry.path().join("comm"))
                .map(|name| name.trim().to_owned())
                .unwrap_or_else(|_| "a process".to_owned());
            return Some(format!("{name} (pid {pid})"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";

    #[track_caller]
    fn check(rows: &[&str], port: u16, expected: &[u64]) {
        let table = std::iter::once(HEADER)
            .chain(rows.iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(listening_inodes(&table, port), expected);
    }

    #[test]
    fn only_sockets_listening_on_the_port_are_found() {
        let listening_4566 = "   0: 0100007F:11D6 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000";
        let connected_4566 = "   1: 0100007F:11D6 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000";
        let listening_9000 = "   2: 00000000:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000";
        check(
            &[listening_4566, connected_4566, listening_9000],
            4566,
            &[4242],
        );
        check(&[listening_9000], 4566, &[]);
        check(&[listening_9000], 9000, &[4444]);
        // tcp6 writes the address in 32 hex digits; the port follows the last colon all the same.
        check(
            &[
                "   0: 00000000000000000000000001000000:11D6 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000",
            ],
            4566,
            &[77],
        );
        check(&["garbage"], 4566, &[]);
    }

    #[test]
    fn this_process_is_named_as_the_owner_of_its_listening_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("an address").port();
        let owner = listening_process(port).expect("the owner is found on Linux");
        assert!(
            owner.ends_with(&format!("(pid {})", std::process::id())),
            "{owner}"
        );
    }
}
