//! The README's table of Cargo features says what `Cargo.toml` says: every feature a user can
//! turn on has a row, no row names a feature that does not exist, and the "default" column
//! matches the `default` list. Both files are read from the package, so this also holds in the
//! published crate (its README.md is the workspace's).

use std::collections::BTreeMap;

fn read(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The `[features]` table of the manifest: each feature and whether `default` lists it.
/// Features whose name starts with `__` are the project's own hooks, not for users.
fn manifest_features(manifest: &str) -> BTreeMap<String, bool> {
    let mut in_features = false;
    let mut names = Vec::new();
    let mut defaults = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_features = line == "[features]";
            continue;
        }
        if !in_features || line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name == "default" {
            defaults = value
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(|d| d.trim().trim_matches('"').to_owned())
                .filter(|d| !d.is_empty())
                .collect();
        } else if !name.starts_with("__") {
            names.push(name.to_owned());
        }
    }
    names
        .into_iter()
        .map(|n| (n.clone(), defaults.contains(&n)))
        .collect()
}

/// The rows of the README's feature table: `` | `name` | yes/no | what it does | ``.
fn readme_features(readme: &str) -> BTreeMap<String, bool> {
    let start = readme
        .find("| feature | default | what it does |")
        .expect("the README has a table of Cargo features with the header `| feature | default | what it does |`");
    let mut rows = BTreeMap::new();
    for line in readme[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_owned();
        let default = match cells[2] {
            "yes" => true,
            "no" => false,
            other => panic!("feature `{name}`: the default column says {other:?}, not yes or no"),
        };
        assert!(
            rows.insert(name.clone(), default).is_none(),
            "feature `{name}` has two rows"
        );
    }
    rows
}

#[test]
fn the_readme_lists_every_feature_as_the_manifest_has_it() {
    let manifest = manifest_features(&read("Cargo.toml"));
    let readme = readme_features(&read("README.md"));
    assert!(
        manifest.contains_key("tower") && manifest["macros"],
        "{manifest:?}"
    );
    let missing: Vec<_> = manifest
        .keys()
        .filter(|k| !readme.contains_key(*k))
        .collect();
    let unknown: Vec<_> = readme
        .keys()
        .filter(|k| !manifest.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "features without a row in README.md's table: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "README.md's table names features Cargo.toml lacks: {unknown:?}"
    );
    for (name, default) in &manifest {
        assert_eq!(
            readme[name], *default,
            "feature `{name}`: README.md says default = {}, Cargo.toml says {default}",
            readme[name]
        );
    }
}
