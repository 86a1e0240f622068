//! The token cache: hits, expiry, subjects kept apart, the bound, single flight.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn sub(token: &str) -> SubjectToken {
    SubjectToken::new(token)
}

fn issued(token: &str, life: Option<u64>) -> Issued {
    Issued::new(token.to_owned(), life.map(Duration::from_secs))
}

async fn get(
    cache: &TokenCache,
    key: &Key,
    token: &str,
    life: Option<u64>,
    asked: &AtomicUsize,
) -> (String, Source) {
    let (issued, source) = cache
        .get_or_obtain(key.clone(), || async {
            asked.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(issued(token, life))
        })
        .await
        .unwrap();
    (issued.token.expose().to_owned(), source)
}

#[test]
fn a_token_is_reused_until_shortly_before_it_expires() {
    let before = Instant::now();
    let long = issued("t", Some(300)).reuse_until.unwrap();
    assert!(
        long >= before + Duration::from_secs(270)
            && long <= Instant::now() + Duration::from_secs(270)
    );
    // A short life keeps half of it as the margin.
    let short = issued("t", Some(10)).reuse_until.unwrap();
    assert!(
        short >= before + Duration::from_secs(5)
            && short <= Instant::now() + Duration::from_secs(5)
    );
}

#[tokio::test]
async fn a_cached_token_is_reused_then_obtained_again_once_stale() {
    let cache = TokenCache::default();
    let asked = AtomicUsize::new(0);
    let key = TokenCache::key("grant", Some(&sub("alice-token")));
    let soon = || async {
        Ok::<_, ()>(Issued {
            token: Secret::new("t1".into()),
            reuse_until: Some(Instant::now() + Duration::from_millis(100)),
            act: Vec::new().into(),
        })
    };
    assert_eq!(
        cache.get_or_obtain(key.clone(), soon).await.unwrap().1,
        Source::Obtained
    );
    assert_eq!(
        get(&cache, &key, "t2", Some(300), &asked).await,
        ("t1".into(), Source::Cached)
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(
        get(&cache, &key, "t3", Some(300), &asked).await,
        ("t3".into(), Source::Obtained)
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn subjects_and_grants_never_share_a_token() {
    let cache = TokenCache::default();
    let asked = AtomicUsize::new(0);
    let alice = TokenCache::key("grant", Some(&sub("alice-token")));
    let bob = TokenCache::key("grant", Some(&sub("bob-token")));
    let other_grant = TokenCache::key("grant2", Some(&sub("alice-token")));
    let service = TokenCache::key("grant", None);
    assert_eq!(get(&cache, &alice, "a", Some(300), &asked).await.0, "a");
    assert_eq!(get(&cache, &bob, "b", Some(300), &asked).await.0, "b");
    assert_eq!(
        get(&cache, &other_grant, "c", Some(300), &asked).await.0,
        "c"
    );
    assert_eq!(get(&cache, &service, "d", Some(300), &asked).await.0, "d");
    assert_eq!(get(&cache, &alice, "x", Some(300), &asked).await.0, "a");
    // An empty subject is not "no subject".
    assert_ne!(TokenCache::key("grant", Some(&sub(""))), service);
    assert_eq!(asked.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn the_whole_caller_token_is_compared() {
    let cache = TokenCache::default();
    let asked = AtomicUsize::new(0);
    let long = "x".repeat(700);
    let (a, b) = (format!("{long}a"), format!("{long}b"));
    let alice = TokenCache::key("grant", Some(&sub(&a)));
    assert_eq!(get(&cache, &alice, "a", Some(300), &asked).await.0, "a");
    // Tokens that differ in their last byte only are two subjects; another copy of the same
    // token (a new request's principal) is the same one.
    let other = TokenCache::key("grant", Some(&sub(&b)));
    assert_eq!(get(&cache, &other, "b", Some(300), &asked).await.0, "b");
    let again = TokenCache::key("grant", Some(&sub(&a)));
    assert_eq!(
        get(&cache, &again, "c", Some(300), &asked).await,
        ("a".into(), Source::Cached)
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn without_expires_in_nothing_is_cached_and_failures_are_not_cached() {
    let cache = TokenCache::default();
    let asked = AtomicUsize::new(0);
    let key = TokenCache::key("grant", Some(&sub("s")));
    get(&cache, &key, "a", None, &asked).await;
    assert_eq!(
        get(&cache, &key, "b", None, &asked).await,
        ("b".into(), Source::Obtained)
    );
    assert_eq!(cache.len(), 0);
    let failed = cache
        .get_or_obtain(key.clone(), || async { Err::<Issued, _>("refused") })
        .await;
    assert_eq!(failed.unwrap_err(), "refused");
    assert_eq!(
        get(&cache, &key, "c", Some(60), &asked).await,
        ("c".into(), Source::Obtained)
    );
}

#[tokio::test]
async fn the_cache_is_bounded_and_drops_what_expires_first() {
    let cache = TokenCache::with_capacity(16);
    let asked = AtomicUsize::new(0);
    for i in 0..100u64 {
        let key = TokenCache::key("grant", Some(&sub(&format!("subject-{i}"))));
        get(&cache, &key, &format!("t{i}"), Some(1_000 + i), &asked).await;
        assert!(cache.len() <= 16, "{} entries", cache.len());
    }
    // The latest (longest-lived) entry stayed; the first went.
    let last = TokenCache::key("grant", Some(&sub("subject-99")));
    assert_eq!(
        get(&cache, &last, "new", Some(60), &asked).await.1,
        Source::Cached
    );
    let first = TokenCache::key("grant", Some(&sub("subject-0")));
    assert_eq!(
        get(&cache, &first, "new", Some(60), &asked).await.1,
        Source::Obtained
    );
}

#[tokio::test]
async fn concurrent_misses_ask_once() {
    let cache = Arc::new(TokenCache::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let key = TokenCache::key("grant", Some(&sub("alice")));
    let calls = (0..8).map(|_| {
        let (cache, asked, key) = (cache.clone(), asked.clone(), key.clone());
        tokio::spawn(async move {
            cache
                .get_or_obtain(key, || async {
                    asked.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok::<_, ()>(issued("t", Some(300)))
                })
                .await
                .unwrap()
                .1
        })
    });
    let sources = futures_util::future::join_all(calls).await;
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let obtained = sources
        .into_iter()
        .filter(|s| *s.as_ref().unwrap() == Source::Obtained)
        .count();
    assert_eq!(obtained, 1);
}
