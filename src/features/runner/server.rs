//! A model server started by skill-lift (`[server]` in a runner profile) when its `ready_url`
//! does not answer, and stopped at the end of the run.
//!
//! The child runs in its own process group; stopping sends SIGTERM to the group, waits a grace
//! period, then SIGKILL, so no orphan keeps the port. It gets `PR_SET_PDEATHSIG(SIGKILL)`
//! (`crate::features::contain`), so it dies with skill-lift even when skill-lift is killed with `kill -9`.
//! Output goes to a log file in the run folder.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::profile::{ServerConfig, url_port};

/// Grace period between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A server skill-lift started.
pub struct ManagedServer {
    child: tokio::process::Child,
    log: PathBuf,
}

/// Why a server could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot start model server `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error(
        "model server exited ({status}) before {ready_url} answered; last log lines ({log}):\n{tail}"
    )]
    Exited {
        status: String,
        ready_url: String,
        log: PathBuf,
        tail: String,
    },
    #[error("model server did not answer {ready_url} within {seconds} s; log: {log}\n{tail}")]
    Timeout {
        ready_url: String,
        seconds: f64,
        log: PathBuf,
        tail: String,
    },
}

/// Whether `url` answers a GET with a 2xx status within two seconds.
pub async fn is_ready(client: &reqwest::Client, url: &str) -> bool {
    matches!(
        client.get(url).timeout(Duration::from_secs(2)).send().await,
        Ok(response) if response.status().is_success()
    )
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Expand `{profile_dir}`, `{skill_lift}` and `{port}` in the server command. `profile_dir` is
/// `None` for a built-in profile, which cannot use `{profile_dir}` (refused when it loads).
pub fn expand_command(
    config: &ServerConfig,
    profile_dir: Option<&Path>,
    base_url: &str,
) -> Vec<String> {
    let port = url_port(base_url)
        .map(|p| p.to_string())
        .unwrap_or_default();
    let dir = profile_dir
        .map(|dir| dir.to_string_lossy().into_owned())
        .unwrap_or_default();
    let exe = std::env::current_exe()
        .map(|exe| exe.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "skill-lift".to_string());
    config
        .command
        .iter()
        .map(|arg| {
            arg.replace("{profile_dir}", &dir)
                .replace("{skill_lift}", &exe)
                .replace("{port}", &port)
        })
        .collect()
}

impl ManagedServer {
    /// Start the server unless `config.ready_url` already answers. Returns `None` when a server
    /// was already running (it is then left alone at the end).
    pub async fn ensure(
        config: &ServerConfig,
        profile_dir: Option<&Path>,
        base_url: &str,
        log: &Path,
    ) -> Result<Option<ManagedServer>, ServerError> {
        let client = reqwest::Client::new();
        if is_ready(&client, &config.ready_url).await {
            return Ok(None);
        }
        let argv = expand_command(config, profile_dir, base_url);
        let log_file = crate::disk::create(log)
            .map_err(crate::disk::DiskError::into_io)
            .map_err(|source| ServerError::Spawn {
                command: argv.join(" "),
                source,
            })?;
        let log_err = log_file.try_clone().map_err(|source| ServerError::Spawn {
            command: argv.join(" "),
            source,
        })?;
        let mut command = tokio::process::Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file))
            .stderr(Stdio::from(log_err))
            .kill_on_drop(true)
            .process_group(0);
        crate::features::contain::die_with_parent(&mut command);
        let child = command.spawn().map_err(|source| ServerError::Spawn {
            command: argv.join(" "),
            source,
        })?;
        crate::features::contain::register_child(child.id());
        let mut server = ManagedServer {
            child,
            log: log.to_path_buf(),
        };
        let started = Instant::now();
        let limit = Duration::from_secs_f64(config.startup_timeout_s.max(0.1));
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(ServerError::Exited {
                    status: status.to_string(),
                    ready_url: config.ready_url.clone(),
                    log: server.log.clone(),
                    tail: log_tail(&server.log),
                });
            }
            if is_ready(&client, &config.ready_url).await {
                if server.answers_for_another(&config.ready_url) {
                    // Another process bound the port first (another run's server that was still
                    // starting): ours cannot serve. Use that one, and leave it running.
                    server.stop().await;
                    return Ok(None);
                }
                return Ok(Some(server));
            }
            if started.elapsed() > limit {
                let tail = log_tail(&server.log);
                server.stop().await;
                return Err(ServerError::Timeout {
                    ready_url: config.ready_url.clone(),
                    seconds: config.startup_timeout_s,
                    log: log.to_path_buf(),
                    tail,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Whether the socket listening on `ready_url`'s port belongs to a process outside this
    /// server's tree: then what answers is someone else's server (false when it cannot be told).
    fn answers_for_another(&self, ready_url: &str) -> bool {
        let (Some(port), Some(pid)) = (url_port(ready_url), self.child.id()) else {
            return false;
        };
        listener_owned_by(port, pid) == Some(false)
    }

    /// Stop the server's process group: SIGTERM, grace period, SIGKILL.
    pub async fn stop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: killpg only sends a signal to the process group we created.
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGTERM);
            }
            if tokio::time::timeout(STOP_GRACE, self.child.wait())
                .await
                .is_err()
            {
                unsafe {
                    libc::killpg(pid as libc::pid_t, libc::SIGKILL);
                }
                let _ = self.child.wait().await;
            }
        }
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: as in `stop`; best effort when the run ends without calling `stop`.
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

/// Whether the socket listening on TCP `port` belongs to `root` or one of its descendants:
/// `/proc/net/tcp` and `/proc/net/tcp6` give the listening socket's inode (state `0A`), a
/// process's `/proc/<pid>/fd` links name the sockets it holds (`socket:[inode]`). `None` when it
/// cannot be told (no `/proc`, no listener found).
fn listener_owned_by(port: u16, root: u32) -> Option<bool> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let listening_port = local
                .rsplit_once(':')
                .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok());
            if *state == "0A" && listening_port == Some(port) && *inode != "0" {
                inodes.push(format!("socket:[{inode}]"));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let mut tree = vec![root];
    tree.extend(crate::features::contain::descendants(root));
    let owned = tree.iter().any(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                std::fs::read_link(entry.path())
                    .is_ok_and(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
            })
        })
    });
    Some(owned)
}

#[cfg(test)]
mod listener_tests {
    use super::listener_owned_by;

    #[test]
    fn a_socket_this_process_listens_on_is_its_own_and_not_a_child_s() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        if !std::path::Path::new("/proc/net/tcp").exists() {
            return;
        }
        assert_eq!(listener_owned_by(port, std::process::id()), Some(true));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert_eq!(listener_owned_by(port, child.id()), Some(false));
        let _ = child.kill();
        let _ = child.wait();
        drop(listener);
        assert_eq!(listener_owned_by(port, std::process::id()), None);
    }
}
