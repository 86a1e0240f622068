//! Name patterns where `*` matches any run of characters: import selection, `exclude` of an
//! include. Pure.

/// Glob match where `*` matches any run of characters (`/` included) and everything else
/// matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn a_star_matches_any_run_and_the_rest_itself() {
        assert!(glob("delete_*", "delete_namespace"));
        assert!(glob("*_pod", "get_pod"));
        assert!(glob("/api/*/pods", "/api/v1/ns/pods"));
        assert!(glob("*", ""));
        assert!(!glob("delete_*", "get_delete_x"));
        assert!(!glob("get_pod", "get_pods"));
    }
}
