//! The middleware's names and its reading of results.

use ::reqwest::{Method, Url};

use super::sentinel::{is_error, target_of};

fn name(method: Method, url: &str) -> String {
    let url = Url::parse(url).unwrap();
    target_of(&method, &url).name()
}

#[test]
fn a_request_is_named_as_the_client_layer_names_it() {
    assert_eq!(
        name(Method::GET, "http://inventory:8080/items/7?x=1"),
        "GET:http://inventory:8080"
    );
    assert_eq!(
        name(Method::POST, "https://user:secret@pay.test:443/charge"),
        "POST:https://pay.test"
    );
    assert_eq!(
        name(Method::GET, "http://inventory:80/"),
        "GET:http://inventory"
    );
    assert_eq!(
        name(Method::PUT, "http://[::1]:9000/a"),
        "PUT:http://[::1]:9000"
    );
}

#[test]
fn a_5xx_or_a_failed_request_is_an_error_and_a_4xx_is_not() {
    let answer = |status: u16| {
        let response = http::Response::builder().status(status).body("").unwrap();
        Ok(::reqwest::Response::from(response))
    };
    assert!(!is_error(&answer(200)));
    assert!(!is_error(&answer(404)));
    assert!(!is_error(&answer(429)));
    assert!(is_error(&answer(500)));
    assert!(is_error(&answer(503)));
    let failed = ::reqwest_middleware::Error::middleware(std::io::Error::other("reset"));
    assert!(is_error(&Err(failed)));
}
