//! A minimal OpenAPI v3 (`/openapi/v3` and `/openapi/v3/{api/v1|apis/G/V}`), enough for
//! kubectl: each group version lists its resources' paths, and each PATCH operation carries
//! the `x-kubernetes-group-version-kind` extension and the `fieldValidation` query parameter,
//! so kubectl leaves validation to the server instead of downloading schemas. There are no
//! schemas (`components` is empty): clients that need them (client-side validation, typed
//! field lookups) fall back as they do for types without schemas. `/openapi/v2` is not
//! served (it is protobuf-first on real servers).

use serde_json::{json, Map, Value};

use crate::catalogue::Catalogue;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the group versions and where their documents are.
pub fn root(catalogue: &Catalogue) -> Value {
    let mut paths = Map::new();
    for gv in catalogue.group_versions() {
        let p = gv_path(&gv.group, &gv.version);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=kclient-fake")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/{api/v1|apis/G/V}`, if served.
pub fn group_version(catalogue: &Catalogue, path: &str) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    let resources = catalogue.in_group_version(&group, &version);
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for info in resources {
        let gvk = json!([{"group": group, "version": version, "kind": info.kind()}]);
        let object_path = if info.namespaced() {
            format!(
                "/{}/namespaces/{{namespace}}/{}/{{name}}",
                gv_path(&group, &version),
                info.api.plural
            )
        } else {
            format!(
                "/{}/{}/{{name}}",
                gv_path(&group, &version),
                info.api.plural
            )
        };
        let op = |action: &str| {
            json!({
                "operationId": format!("{action}{}", info.kind()),
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk[0],
            })
        };
        paths.insert(
            object_path,
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v{}.{}.0", crate::discovery::KUBERNETES_VERSION.0, crate::discovery::KUBERNETES_VERSION.1)},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let c = Catalogue::builtin();
        let r = root(&c);
        assert!(r["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .starts_with("/openapi/v3/apis/apps/v1"));
        let apps = group_version(&c, "apis/apps/v1").unwrap();
        let p = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(p["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(p["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "fieldValidation"));
        assert!(group_version(&c, "apis/nope/v1").is_none());
        assert!(group_version(&c, "x").is_none());
    }
}
