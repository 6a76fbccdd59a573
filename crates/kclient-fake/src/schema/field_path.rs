//! The paths the walks over an object write their errors at (`spec.ports`, `spec.byName[a]`),
//! from the root (`None`) down.

/// The path of field `name` of the object at `path`.
pub(super) fn child(path: Option<&str>, name: &str) -> String {
    match path {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    }
}

/// The path of the entry `name` of the map at `path`.
pub(super) fn key(path: Option<&str>, name: &str) -> String {
    format!("{}[{name}]", path.unwrap_or(""))
}
