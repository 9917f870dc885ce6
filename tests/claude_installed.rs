//! `scan --host claude-code` on a `~/.claude` laid out as Claude Code lays it out: a marketplace
//! clone listing many plugins, `installed_plugins.json` naming the installed copy of a few (one of
//! them with two cached versions, one cached under commit-sha folder names), `enabledPlugins` in
//! `settings.json`, and plugins defined only by their marketplace entry (`strict: false`). Driven
//! through the real binary.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// sha256 of no bytes: the fingerprint no asset may have.
const EMPTY_INPUT: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn plugin(dir: &Path, name: &str, version: Option<&str>, command: &str) {
    let mut manifest = json!({"name": name, "description": format!("{name} plugin")});
    if let Some(version) = version {
        manifest["version"] = json!(version);
    }
    write(
        &dir.join(".claude-plugin/plugin.json"),
        &manifest.to_string(),
    );
    write(
        &dir.join(format!("commands/{command}.md")),
        &format!("---\ndescription: {command}\n---\nDo {command}.\n"),
    );
}

/// Where the record says things are: absolute paths on the machine that wrote it.
const RECORDED_HOME: &str = "/Users/dev/.claude";

struct FakeHome {
    _dir: tempfile::TempDir,
    claude: PathBuf,
}

impl FakeHome {
    fn plugins(&self) -> PathBuf {
        self.claude.join("plugins")
    }

    fn marketplace(&self) -> PathBuf {
        self.plugins().join("marketplaces/acme-market")
    }

    fn lsp_entry(command: &str) -> Value {
        json!({"command": command, "args": ["--stdio"], "extensionToLanguage": {".x": "x"}})
    }

    fn write_marketplace(&self, lsp_a_command: &str) {
        let mut plugins = vec![];
        for name in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"] {
            plugins.push(json!({"name": name, "source": format!("./plugins/{name}"), "description": format!("{name} plugin")}));
        }
        plugins.push(json!({"name": "lsp-a", "source": "./plugins/lsp-a", "strict": false,
            "description": "A language server", "lspServers": {"a-ls": Self::lsp_entry(lsp_a_command)}}));
        plugins.push(json!({"name": "lsp-b", "source": "./plugins/lsp-b", "strict": false,
            "description": "B language server", "lspServers": {"b-ls": Self::lsp_entry("b-language-server")}}));
        plugins
            .push(json!({"name": "remote", "source": {"source": "github", "repo": "acme/remote"}}));
        write(
            &self.marketplace().join(".claude-plugin/marketplace.json"),
            &serde_json::to_string_pretty(
                &json!({"name": "acme-market", "owner": {"name": "Acme"}, "plugins": plugins}),
            )
            .unwrap(),
        );
    }

    fn new(record_version: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join(".claude");
        let home = Self { _dir: dir, claude };
        let plugins = home.plugins();
        let market = home.marketplace();
        home.write_marketplace("a-language-server");
        for name in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"] {
            plugin(&market.join("plugins").join(name), name, None, name);
        }
        for name in ["lsp-a", "lsp-b"] {
            write(&market.join(format!("plugins/{name}/README.md")), "docs\n");
        }
        write(
            &plugins.join("known_marketplaces.json"),
            &json!({"acme-market": {"source": {"source": "github", "repo": "acme/market"},
                "installLocation": format!("{RECORDED_HOME}/plugins/marketplaces/acme-market"),
                "lastUpdated": "2026-11-30T10:00:00.000Z"}})
            .to_string(),
        );
        // alpha: two cached versions; the record names 1.0.0 (1.1.0 was fetched, never recorded).
        let cache = plugins.join("cache/acme-market");
        plugin(&cache.join("alpha/1.0.0"), "alpha", Some("1.0.0"), "alpha");
        plugin(
            &cache.join("alpha/1.1.0"),
            "alpha",
            Some("1.1.0"),
            "alpha-new",
        );
        // beta: no version in plugin.json, so Claude Code names cache folders by commit sha;
        // the stale copy's name sorts last.
        plugin(&cache.join("beta/0c1f9a2b3c4d"), "beta", None, "beta");
        plugin(&cache.join("beta/f9e8d7c6b5a4"), "beta", None, "beta-stale");
        // LSP plugins defined by their marketplace entry: the cached copy has no manifest.
        write(&cache.join("lsp-a/1.0.0/README.md"), "docs\n");
        write(&cache.join("lsp-b/1.0.0/README.md"), "docs\n");
        let install = |name: &str, folder: &str, version: &str| {
            json!({"scope": "user",
                "installPath": format!("{RECORDED_HOME}/plugins/cache/acme-market/{name}/{folder}"),
                "version": version, "installedAt": "2026-11-30T10:00:00.000Z",
                "lastUpdated": "2026-11-30T10:00:00.000Z", "gitCommitSha": "0c1f9a2b3c4d5e6f"})
        };
        let entries = [
            ("alpha", "1.0.0", "1.0.0"),
            ("beta", "0c1f9a2b3c4d", "0c1f9a2b3c4d"),
            ("lsp-a", "1.0.0", "1.0.0"),
            ("lsp-b", "1.0.0", "1.0.0"),
        ];
        let record = if record_version == 2 {
            let map: serde_json::Map<String, Value> = entries
                .iter()
                .map(|(n, f, v)| (format!("{n}@acme-market"), json!([install(n, f, v)])))
                .collect();
            json!({"version": 2, "plugins": map})
        } else {
            let map: serde_json::Map<String, Value> = entries
                .iter()
                .map(|(n, f, v)| {
                    let mut entry = install(n, f, v);
                    entry.as_object_mut().unwrap().remove("scope");
                    (format!("{n}@acme-market"), entry)
                })
                .collect();
            json!({"version": 1, "plugins": map})
        };
        write(
            &plugins.join("installed_plugins.json"),
            &serde_json::to_string_pretty(&record).unwrap(),
        );
        write(
            &home.claude.join("settings.json"),
            &json!({"enabledPlugins": {"alpha@acme-market": true, "beta@acme-market": false,
                "lsp-a@acme-market": true}})
            .to_string(),
        );
        write(
            &home.claude.join("skills/notes/SKILL.md"),
            "---\nname: notes\ndescription: Use when taking notes.\n---\nTake notes.\n",
        );
        home
    }
}

fn skill_lift(state: &Path, args: &[&str]) -> (i32, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_skill-lift"))
        .args(args)
        .env("SKILL_LIFT_HOME", state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), value, stderr)
}

fn registry(state: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(state.join("registry.claude-code.json")).unwrap())
        .unwrap()
}

fn scan(state: &Path, home: &FakeHome) -> Value {
    let root = home.claude.to_str().unwrap();
    let (code, summary, stderr) = skill_lift(
        state,
        &["scan", "--host", "claude-code", "--root", root, "--json"],
    );
    assert_eq!(code, 0, "{stderr}\n{summary:#}");
    summary
}

#[test]
fn only_the_installed_version_of_installed_plugins_is_registered() {
    let home = FakeHome::new(2);
    let state = tempfile::tempdir().unwrap();
    let summary = scan(state.path(), &home);
    // Four installed plugins and one skill; the other six listed plugins are available only.
    assert_eq!(summary["assets"], 5, "{summary:#}");
    let mut new: Vec<&str> = summary["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    new.sort();
    assert_eq!(new, vec!["alpha", "beta", "lsp-a", "lsp-b", "notes"]);
    let available: Vec<&str> = summary["available"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        available,
        vec![
            "gamma@acme-market",
            "delta@acme-market",
            "epsilon@acme-market",
            "zeta@acme-market",
            "eta@acme-market",
            "remote@acme-market"
        ]
    );
    let not_loaded = summary["not_loaded"].to_string();
    assert!(not_loaded.contains("beta (disabled"), "{not_loaded}");
    assert!(not_loaded.contains("lsp-b (not enabled"), "{not_loaded}");
    assert!(!not_loaded.contains("alpha"), "{not_loaded}");

    let registry = registry(state.path());
    let assets = &registry["assets"];
    let path = |name: &str| assets[name]["path"].as_str().unwrap().to_string();
    // The recorded version, not the newest cache folder.
    assert!(
        path("alpha").ends_with("cache/acme-market/alpha/1.0.0"),
        "{}",
        path("alpha")
    );
    assert_eq!(assets["alpha"]["version"], "1.0.0");
    assert_eq!(assets["alpha"]["surface"]["commands"], json!(["alpha"]));
    // The recorded commit-sha folder, not the one whose name sorts last.
    assert!(
        path("beta").ends_with("cache/acme-market/beta/0c1f9a2b3c4d"),
        "{}",
        path("beta")
    );
    assert_eq!(assets["beta"]["install"]["enabled"], "disabled");
    assert_eq!(assets["alpha"]["install"]["enabled"], "enabled");
    assert_eq!(assets["lsp-b"]["install"]["enabled"], "not_listed");
    assert_eq!(assets["alpha"]["install"]["id"], "alpha@acme-market");
    assert_eq!(assets["alpha"]["install"]["scope"], "user");
    // Plugins defined by their entry: fingerprinted over it, so they differ from each other
    // and from empty input.
    let print = |name: &str| assets[name]["fingerprint"].as_str().unwrap().to_string();
    assert_ne!(print("lsp-a"), print("lsp-b"));
    for name in ["lsp-a", "lsp-b", "alpha", "beta"] {
        assert_ne!(print(name), EMPTY_INPUT, "{name}");
    }
    assert_eq!(assets["lsp-a"]["surface"]["lsp"], json!(["a-ls"]));
    assert_eq!(registry["available"].as_array().unwrap().len(), 6);

    // `check` asks only about what is installed.
    let state_dir = state.path();
    let (code, _, stderr) = skill_lift(
        state_dir,
        &["bump", "--host", "claude-code", "--model", "m2"],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, report, stderr) =
        skill_lift(state_dir, &["check", "--host", "claude-code", "--json"]);
    assert_eq!(code, 1, "{stderr}");
    let mut asked: Vec<&str> = report["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["asset"].as_str().unwrap())
        .collect();
    asked.sort();
    assert_eq!(asked, vec!["alpha", "beta", "lsp-a", "lsp-b", "notes"]);

    // A change to a strict:false plugin's entry is an edit of that plugin.
    home.write_marketplace("a-language-server-v2");
    let again = scan(state.path(), &home);
    assert_eq!(again["fingerprint_changed"], json!(["lsp-a"]), "{again:#}");
}

#[test]
fn a_version_1_record_reads_the_same() {
    let home = FakeHome::new(1);
    let state = tempfile::tempdir().unwrap();
    let summary = scan(state.path(), &home);
    assert_eq!(summary["assets"], 5, "{summary:#}");
    let registry = registry(state.path());
    assert!(
        registry["assets"]["alpha"]["path"]
            .as_str()
            .unwrap()
            .ends_with("alpha/1.0.0")
    );
    assert_eq!(registry["assets"]["alpha"]["install"]["scope"], "user");
}

#[test]
fn a_record_naming_a_missing_folder_is_reported_and_nothing_is_guessed() {
    let home = FakeHome::new(2);
    std::fs::remove_dir_all(home.plugins().join("cache/acme-market/alpha/1.0.0")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = home.claude.to_str().unwrap();
    let (code, summary, _) = skill_lift(
        state.path(),
        &["scan", "--host", "claude-code", "--root", root, "--json"],
    );
    assert_eq!(
        code,
        skill_lift::values::exit_codes::COMPLETED_WITH_WARNINGS
    );
    let skipped = summary["skipped"].to_string();
    assert!(
        skipped.contains("alpha@acme-market") && skipped.contains("does not exist"),
        "{skipped}"
    );
    // The newer, unrecorded 1.1.0 is not taken instead.
    assert!(registry(state.path())["assets"].get("alpha").is_none());
}

#[test]
fn without_a_record_the_cache_is_taken_as_installed_and_a_note_says_so() {
    let home = FakeHome::new(2);
    std::fs::remove_file(home.plugins().join("installed_plugins.json")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = home.claude.to_str().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_skill-lift"))
        .args(["scan", "--host", "claude-code", "--root", root])
        .env("SKILL_LIFT_HOME", state.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no installed_plugins.json") && stderr.contains("newest version folder"),
        "{stderr}"
    );
    let registry = registry(state.path());
    assert!(
        registry["assets"]["alpha"]["path"]
            .as_str()
            .unwrap()
            .ends_with("alpha/1.1.0")
    );
    // Marketplace plugins that are not cached are still only available.
    assert!(registry["assets"].get("gamma").is_none());
}
