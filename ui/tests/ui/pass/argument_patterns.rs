//! Arguments written as irrefutable patterns, as axum handlers write their extractors, with a
//! fallback: each argument reaches the fallback whole and the body destructured. The extractor
//! types are local stand-ins of axum's (tuple structs of one field).
use sentinel_runtime::{sentinel, BlockError};

struct Path<T>(T);
struct State<S>(S);
struct Json<T>(T);

#[derive(Clone)]
struct AppState {
    greeting: &'static str,
}

struct Point {
    x: i32,
    y: i32,
}

#[sentinel(qps = 5, fallback = user_busy)]
async fn get_user(Path(id): Path<u64>, State(state): State<AppState>) -> String {
    format!("{} {id}", state.greeting)
}

async fn user_busy(Path(id): Path<u64>, _: State<AppState>, err: &BlockError) -> String {
    format!("user {id} busy: {err}")
}

#[sentinel(qps = 5, fallback = create_busy)]
async fn create(State(s): State<AppState>, Json(mut body): Json<Vec<u8>>) -> usize {
    body.push(s.greeting.len() as u8);
    body.len()
}

fn create_busy(_: State<AppState>, Json(body): Json<Vec<u8>>, _: BlockError) -> usize {
    body.len()
}

#[sentinel(qps = 5, fallback = sum_busy)]
fn sum((a, b): (u8, u8), Point { x, y }: Point) -> i32 {
    i32::from(a) + i32::from(b) + x + y
}

fn sum_busy((a, _): (u8, u8), p: Point, _: &BlockError) -> i32 {
    i32::from(a) + p.x
}

#[sentinel(qps = 5, fallback = count_busy)]
fn count(mut n: u32, (mut total, step): (u32, u32), _: &str, [first, ..]: [u8; 3]) -> u32 {
    n += 1;
    total += step;
    n + total + u32::from(first)
}

fn count_busy(n: u32, _: (u32, u32), _: &str, _: [u8; 3], _: BlockError) -> u32 {
    n
}

#[sentinel(qps = 5, fallback = by_ref_busy)]
fn by_ref(ref name: String, Path(ref mut hits): Path<u32>) -> usize {
    *hits += 1;
    name.len() + *hits as usize
}

fn by_ref_busy(name: String, _: Path<u32>, _: BlockError) -> usize {
    name.len()
}

struct Handlers {
    prefix: String,
}

impl Handlers {
    #[sentinel(qps = 5, fallback = Self::show_busy)]
    fn show(&self, Path((a, b)): Path<(u32, u32)>) -> String {
        format!("{}{a}/{b}", self.prefix)
    }

    fn show_busy(&self, Path(pair): Path<(u32, u32)>, _: &BlockError) -> String {
        format!("{}busy {pair:?}", self.prefix)
    }
}

/// No fallback: patterns stay as written (nothing to pass them to).
#[sentinel(qps = 5)]
fn plain(Path(id): Path<u8>) -> Result<u8, BlockError> {
    Ok(id)
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

pub fn main() {
    let state = AppState { greeting: "hello" };
    assert_eq!(block_on(get_user(Path(7), State(state.clone()))), "hello 7");
    assert_eq!(block_on(create(State(state), Json(vec![1, 2]))), 3);
    assert_eq!(sum((1, 2), Point { x: 3, y: 4 }), 10);
    assert_eq!(count(1, (10, 5), "x", [7, 8, 9]), 2 + 15 + 7);
    assert_eq!(by_ref("ab".to_owned(), Path(1)), 4);
    let h = Handlers { prefix: "/".to_owned() };
    assert_eq!(h.show(Path((1, 2))), "/1/2");
    assert_eq!(plain(Path(3)), Ok(3));
}
