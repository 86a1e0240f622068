//! The operator's CRD step (`crd_upgrade::ensure`, what `mcp-operator run` does first) against the
//! real API server. An older CRD, as chart 0.1 left it (no revision, Helm's marks, and here
//! without `spec.auth`), makes a status write drop a stored server's `spec.auth`: the harm. The
//! step raises it: a server written afterwards keeps its `spec.auth` through a status write, and
//! Helm's marks are gone. A newer CRD is left untouched. Without `--manage-crd`, an older CRD
//! stops the operator, naming the command to run. Playing chart 0.1's CRD means lowering the
//! installed one, which the chart's admission policy refuses (checked first): the test unbinds
//! that policy meanwhile.

use crate::support::{Env, apply_server, eventually, server, spec_properties};
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, ResourceExt};
use mcp_operator::crd_upgrade::{CRD_NAME, CrdError, Outcome, ensure};
use mcp_operator::resource::{self, CRD_REVISION, MCPServer, REVISION_ANNOTATION};
use serde_json::{Value, json};
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);

/// Replaces the installed CRD with this operator's, changed by `edit`.
async fn put_crd(
    crds: &Api<CustomResourceDefinition>,
    edit: impl Fn(&mut CustomResourceDefinition),
) -> Result<(), kube::Error> {
    let installed = crds.get(CRD_NAME).await?;
    let mut crd = resource::crd();
    crd.metadata.resource_version = installed.resource_version();
    edit(&mut crd);
    crds.replace(CRD_NAME, &PostParams::default(), &crd).await?;
    Ok(())
}

/// Chart 0.1's CRD: no revision, Helm's marks, and here no spec.auth.
fn as_chart_0_1(crd: &mut CustomResourceDefinition) {
    let annotations = crd.metadata.annotations.get_or_insert_default();
    annotations.remove(REVISION_ANNOTATION);
    annotations.insert("meta.helm.sh/release-name".into(), "kube-mcp".into());
    annotations.insert(
        "meta.helm.sh/release-namespace".into(),
        "kube-mcp-system".into(),
    );
    annotations.insert("helm.sh/resource-policy".into(), "keep".into());
    let labels = crd.metadata.labels.get_or_insert_default();
    labels.insert("app.kubernetes.io/managed-by".into(), "Helm".into());
    spec_properties(crd).remove("auth");
    // It served v1alpha1 alone.
    crd.spec.versions.truncate(1);
}

/// The chart's bindings of its CRD revision policy (`templates/crd-revision-policy.yaml`).
async fn revision_guards(env: &Env) -> Vec<ValidatingAdmissionPolicyBinding> {
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(env.client.clone());
    let all = bindings.list(&ListParams::default()).await.unwrap();
    all.items
        .into_iter()
        .filter(|b| b.spec.policy_name.ends_with("-crd-revision.kube-mcp.io"))
        .collect()
}

fn servers(env: &Env) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<MCPServer>(&());
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

/// Applies a server with `spec.auth` (the CRD must have it: server-side apply refuses a field
/// the schema lacks).
async fn apply_with_auth(env: &Env, name: &str) {
    let with_auth = server(name, json!({"auth": {"issuer": "https://idp.example.com"}}));
    apply_server(env, &with_auth).await.unwrap();
}

/// Writes a server's status as the operator does, and returns the `spec.auth` the API server
/// then holds.
async fn write_status(env: &Env, name: &str) -> Result<Value, String> {
    let status = json!({"status": {"url": format!("http://{name}.test/mcp")}});
    let stored = servers(env)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(|e| e.to_string())?;
    Ok(stored.data["spec"]["auth"].clone())
}

#[tokio::test]
#[ignore = "needs a control plane and the chart: tests/e2e/run.sh runs it"]
async fn an_older_crd_is_raised_and_a_newer_one_left_alone() {
    let env = Env::get().await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let guards = revision_guards(&env).await;
    assert!(
        !guards.is_empty(),
        "the chart binds its CRD revision policy"
    );
    let refused = put_crd(&crds, as_chart_0_1).await.unwrap_err().to_string();
    assert!(
        refused.contains("would lower CRD mcpservers.kube-mcp.io from revision"),
        "{refused}"
    );

    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(env.client.clone());
    for guard in &guards {
        bindings
            .delete(&guard.name_any(), &DeleteParams::default())
            .await
            .unwrap();
    }
    // The other tests need this operator's CRD and the guards back, whatever happens here.
    let outcome = tokio::spawn(older_and_newer(env.clone(), crds.clone())).await;
    put_crd(&crds, |_| {}).await.unwrap();
    for mut guard in guards {
        guard.metadata.resource_version = None;
        guard.metadata.uid = None;
        guard.metadata.creation_timestamp = None;
        guard.metadata.managed_fields = None;
        bindings
            .create(&PostParams::default(), &guard)
            .await
            .unwrap();
    }
    for name in ["crd-revision-before", "crd-revision-after"] {
        let _ = servers(&env)
            .delete(name, &DeleteParams::background())
            .await;
    }
    if let Err(failed) = outcome {
        std::panic::resume_unwind(failed.into_panic());
    }
}

async fn older_and_newer(env: Env, crds: Api<CustomResourceDefinition>) {
    let auth = json!({"issuer": "https://idp.example.com"});
    apply_with_auth(&env, "crd-revision-before").await;

    // Chart 0.1's CRD (once the guard's removal is in effect). The first status write under it
    // stores the server without spec.auth: what lowering a CRD does.
    eventually("the CRD can be lowered without the guard", SOON, || async {
        put_crd(&crds, as_chart_0_1)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    eventually(
        "a status write under the older CRD drops spec.auth",
        SOON,
        || async {
            match write_status(&env, "crd-revision-before").await? {
                Value::Null => Ok(()),
                kept => Err(format!("still kept: {kept}")),
            }
        },
    )
    .await;

    // Without --manage-crd the operator refuses to run, and writes nothing.
    let before = crds.get(CRD_NAME).await.unwrap().resource_version();
    let refused = ensure(&env.client, false).await.unwrap_err();
    assert!(matches!(refused, CrdError::Older { .. }), "{refused:?}");
    let message = refused.to_string();
    assert!(message.contains("no revision"), "{message}");
    assert!(message.contains("kubectl apply --server-side"), "{message}");
    assert_eq!(crds.get(CRD_NAME).await.unwrap().resource_version(), before);

    // With it, the operator raises the CRD; right after, a server keeps spec.auth through a
    // status write. The one written under the older CRD lost it for good.
    assert_eq!(
        ensure(&env.client, true).await.unwrap(),
        Outcome::Raised(None)
    );
    let raised = crds.get(CRD_NAME).await.unwrap();
    assert_eq!(
        raised.annotations().get(REVISION_ANNOTATION),
        Some(&CRD_REVISION.to_string())
    );
    assert!(spec_properties(&mut raised.clone()).contains_key("auth"));
    assert!(
        !raised
            .annotations()
            .contains_key("meta.helm.sh/release-name")
    );
    assert!(!raised.labels().contains_key("app.kubernetes.io/managed-by"));
    apply_with_auth(&env, "crd-revision-after").await;
    assert_eq!(
        write_status(&env, "crd-revision-after").await.unwrap(),
        auth
    );
    assert_eq!(
        write_status(&env, "crd-revision-before").await.unwrap(),
        Value::Null
    );
    assert_eq!(ensure(&env.client, false).await.unwrap(), Outcome::Current);

    // A newer CRD (one revision up, one more field) is left as it is, managed or not.
    put_crd(&crds, |crd| {
        let annotations = crd.metadata.annotations.get_or_insert_default();
        annotations.insert(REVISION_ANNOTATION.into(), (CRD_REVISION + 1).to_string());
        spec_properties(crd).insert(
            "futureField".into(),
            JSONSchemaProps {
                type_: Some("string".into()),
                ..Default::default()
            },
        );
    })
    .await
    .unwrap();
    let newer = crds.get(CRD_NAME).await.unwrap();
    for manage in [true, false] {
        assert_eq!(
            ensure(&env.client, manage).await.unwrap(),
            Outcome::LeftNewer(CRD_REVISION + 1)
        );
    }
    let after = crds.get(CRD_NAME).await.unwrap();
    assert_eq!(after.resource_version(), newer.resource_version());
    assert!(spec_properties(&mut after.clone()).contains_key("futureField"));
}
