//! The CRD's revision: a number this operator writes into the CRD it generates, and reads back
//! from the installed CRD to decide whether to raise it. A CRD is never lowered: an older schema
//! makes the API server prune the newer fields of stored servers, and the next write stores them
//! without those fields (an `auth` among them would leave a server open). Pure.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Revision of the CRD this operator generates. Bump it with every change of the generated CRD's
/// `spec`: `operator/tests/crd_history.rs` fails until it is bumped and says how.
pub const CRD_REVISION: u32 = 10;

/// Annotation of the CRD holding its revision (a decimal number).
pub const REVISION_ANNOTATION: &str = "kube-mcp.io/crd-revision";

/// The installed CRD next to this operator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// No CRD is installed.
    Missing,
    /// Older than this operator's; `None` when it has no revision (written before revisions).
    Older(Option<u32>),
    /// The same revision.
    Current,
    /// Newer: written by a newer operator or chart.
    Newer(u32),
}

/// The installed CRD's revision annotation is not a number.
#[derive(Debug, thiserror::Error)]
#[error(
    "annotation {REVISION_ANNOTATION} of the installed CRD is `{value}`, not a revision number"
)]
pub struct RevisionError {
    /// The annotation's value.
    pub value: String,
}

/// Where `installed` stands next to revision `ours`. An unreadable annotation is an error rather
/// than "older": raising over it could lower a CRD written by something newer.
pub fn standing(
    installed: Option<&CustomResourceDefinition>,
    ours: u32,
) -> Result<Standing, RevisionError> {
    let Some(crd) = installed else {
        return Ok(Standing::Missing);
    };
    let value = crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION_ANNOTATION));
    let Some(value) = value else {
        return Ok(Standing::Older(None));
    };
    let theirs: u32 = value.trim().parse().map_err(|_| RevisionError {
        value: value.clone(),
    })?;
    Ok(match theirs.cmp(&ours) {
        std::cmp::Ordering::Less => Standing::Older(Some(theirs)),
        std::cmp::Ordering::Equal => Standing::Current,
        std::cmp::Ordering::Greater => Standing::Newer(theirs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(annotation: Option<&str>) -> CustomResourceDefinition {
        let mut crd = super::super::crd();
        let annotations = crd.metadata.annotations.get_or_insert_default();
        match annotation {
            Some(value) => annotations.insert(REVISION_ANNOTATION.into(), value.into()),
            None => annotations.remove(REVISION_ANNOTATION),
        };
        crd
    }

    #[test]
    fn the_generated_crd_carries_this_revision() {
        let ours = super::super::crd();
        assert_eq!(
            standing(Some(&ours), CRD_REVISION).unwrap(),
            Standing::Current
        );
    }

    #[test]
    fn revisions_compare_as_numbers() {
        assert_eq!(standing(None, 3).unwrap(), Standing::Missing);
        assert_eq!(
            standing(Some(&crd(None)), 3).unwrap(),
            Standing::Older(None)
        );
        assert_eq!(
            standing(Some(&crd(Some("2"))), 3).unwrap(),
            Standing::Older(Some(2))
        );
        assert_eq!(
            standing(Some(&crd(Some("3"))), 3).unwrap(),
            Standing::Current
        );
        assert_eq!(
            standing(Some(&crd(Some("10"))), 3).unwrap(),
            Standing::Newer(10)
        );
    }

    #[test]
    fn an_unreadable_revision_is_an_error() {
        let error = standing(Some(&crd(Some("two"))), 3).unwrap_err();
        assert_eq!(error.value, "two");
    }
}
